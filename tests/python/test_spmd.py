"""SPMD grids over a logical core (docs/nki.md "Logical cores (LNC)", docs/chip.md): with lnc=2
grid instance i is traced into physical core i % 2's program, both cores run at once and share
the kernel's HBM tensors. Outputs equal lnc=1's; a DMA-bound kernel gains less than 2x because
both cores stream through one HBM stack on trn2."""
import json
import os
import subprocess

import numpy as np
import pytest

import trnsim.nki as nki
from trnsim.nki import NkiError

from kernels import gemm, rmsnorm, stream_copy, tensor_add

rng = np.random.default_rng(22)


def normal(*shape):
    return rng.standard_normal(shape).astype(np.float32)


A, B = normal(256, 512), normal(256, 512)
X, G = normal(512, 512), normal(512)
LHS, RHS = normal(256, 256), normal(256, 2048)

# name, kernel, grid, args, reference, tolerance
CASES = [
    ("add_spmd", tensor_add.add_spmd, (2,), (A, B), tensor_add.reference, (1e-6, 1e-6)),
    ("add_spmd_2d", tensor_add.add_spmd_2d, (2, 2), (A, B), tensor_add.reference, (1e-6, 1e-6)),
    ("rmsnorm_spmd", rmsnorm.rmsnorm_spmd, (2,), (X, G), rmsnorm.reference, (1e-5, 1e-4)),
    ("gemm_spmd", gemm.gemm_spmd, (2,), (LHS, RHS), gemm.reference, (1e-3, 1e-4)),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_lnc2_gives_lnc1_outputs_and_passes(case):
    name, kernel, grid, args, reference, (atol, rtol) = case
    one = nki.run(kernel, *args, grid=grid, lnc=1)
    two = nki.run(kernel, *args, grid=grid, lnc=2)
    np.testing.assert_array_equal(two.outputs, one.outputs, err_msg=name)
    np.testing.assert_allclose(two.outputs, reference(*args), atol=atol, rtol=rtol, err_msg=name)
    # Two physical cores, each with its share of the instances, ending sooner.
    assert "chip" not in one.stats
    assert two.stats["chip"]["cores"] == 2 and two.stats["chip"]["lnc"] == 2
    per_core = [c["instructions"] for c in two.stats["cores"]]
    assert per_core[0] > 0 and per_core[1] > 0
    assert sum(per_core) == two.traced.program.instruction_count() + \
        two.traced.core_programs[0].instruction_count()
    assert two.total_time_us < one.total_time_us
    print(f"{name}: lnc=1 {one.total_time_us:.2f} us, lnc=2 {two.total_time_us:.2f} us "
          f"({one.total_time_us / two.total_time_us:.2f}x)")


def test_each_core_has_its_own_program():
    """Instance i is traced into core i % 2's program: the programs differ (their program_id),
    share the HBM tensors and queues, and split the instructions."""
    one = nki.trace(tensor_add.add_spmd, A, B, grid=(2,))
    two = nki.trace(tensor_add.add_spmd, A, B, grid=(2,), lnc=2)
    assert len(two.core_programs) == 1 and two.lnc == 2
    p0, p1 = two.program, two.core_programs[0]
    assert p0.to_json() != p1.to_json()
    assert p0.tensors() == p1.tensors()
    assert p0.instruction_count() + p1.instruction_count() == one.program.instruction_count()
    assert one.core_programs == [] and one.lnc == 1


def test_lnc1_is_the_default_and_unchanged():
    a = nki.run(tensor_add.add_spmd, A, B, grid=(2,))
    b = nki.run(tensor_add.add_spmd, A, B, grid=(2,), lnc=1)
    assert a.summary == b.summary and a.cycles == b.cycles
    assert "lnc=" not in a.summary


def test_dma_bound_kernel_contends_for_the_one_hbm_stack():
    """Copying 16 MiB in 8 bands: one core already keeps trn2's HBM stack 84% busy (reads and
    writes), so two cores on the same stack gain little; with twice the stack bandwidth (a what-if:
    no contention) the same two cores nearly halve the time."""
    a = normal(1024, 4096)
    t1 = nki.run(stream_copy.copy_spmd, a, grid=(8,), lnc=1, timing_only=True)
    t2 = nki.run(stream_copy.copy_spmd, a, grid=(8,), lnc=2, timing_only=True)
    wide = nki.run(stream_copy.copy_spmd, a, grid=(8,), lnc=2, timing_only=True,
                   sets=("hbm.stack_bytes_per_ns=1450", "hbm.t_ccd_l=1.4124137931034482"))
    mbu = [round(r.stats["summary"]["mbu_estimated_percent"], 1) for r in (t1, t2, wide)]
    print(f"stream_copy 16 MiB, grid 8: lnc=1 {t1.total_time_us:.1f} us; lnc=2 "
          f"{t2.total_time_us:.1f} us ({t1.total_time_us / t2.total_time_us:.2f}x, one stack); "
          f"lnc=2 with 2x stack bandwidth {wide.total_time_us:.1f} us "
          f"({t1.total_time_us / wide.total_time_us:.2f}x); MBU % {mbu}")
    assert t2.total_time_us < t1.total_time_us
    assert t1.total_time_us / t2.total_time_us < 1.5  # far from 2x: the stack is shared
    assert t1.total_time_us / wide.total_time_us > 1.6  # the cores themselves could do ~2x
    assert t2.stats["summary"]["hbm_stacks"] == 1
    assert mbu[1] > 90  # the shared stack is nearly saturated


@pytest.mark.parametrize("grid,lnc,arch,text", [
    ((3,), 2, "trn2", "not a multiple of 2"),
    ((), 2, "trn2", "not a multiple of 2"),
    ((2,), 3, "trn2", "1 or 2"),
    ((2,), "two", "trn2", "1 or 2"),
    ((2,), 2, "trn1", "trn1 has no logical cores of 2"),
])
def test_bad_lnc_is_an_nki_error(grid, lnc, arch, text):
    with pytest.raises(NkiError, match=text):
        nki.trace(tensor_add.add_spmd, A, B, grid=grid, lnc=lnc, arch=arch)


KERNEL = os.path.join(os.path.dirname(__file__), "kernels", "tensor_add.py")


def _cli(*argv):
    return subprocess.run([os.environ["TRNSIM_BINARY"], *argv], capture_output=True, text=True)


def test_cli_lnc2(tmp_path):
    out = tmp_path / "out"
    p = _cli("run", KERNEL, "--kernel", "add_spmd", "--input", "a=256x512", "--input",
             "b=256x512", "--grid", "2", "--lnc", "2", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "lnc=2 (cores 0-1" in p.stdout
    trace = json.load(open(out / "trace.json"))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    processes = sorted(e["args"]["name"] for e in events if e.get("name") == "process_name")
    assert processes == ["NeuronCore 0 (trn2) add_spmd", "NeuronCore 1 (trn2) add_spmd"]
    busy = {e["pid"] for e in events if e.get("ph") == "X" and e.get("cat") == "instruction"}
    assert len(busy) == 2
    stats = json.load(open(out / "stats.json"))
    assert stats["chip"]["lnc"] == 2
    assert os.path.exists(out / "report.html")


@pytest.mark.parametrize("argv,text", [
    (["--grid", "3", "--lnc", "2"], "not a multiple of 2"),
    (["--grid", "2", "--lnc", "2", "--arch", "trn1"], "trn1 has no logical cores"),
    (["--grid", "2", "--lnc", "8"], "1 or 2"),
])
def test_cli_bad_lnc_exits_2(argv, text, tmp_path):
    p = _cli("run", KERNEL, "--kernel", "add_spmd", "--input", "a=256x512", "--input",
             "b=256x512", *argv, "--out", str(tmp_path / "o"))
    assert p.returncode == 2
    assert text in p.stderr
    assert not (tmp_path / "o").exists()
