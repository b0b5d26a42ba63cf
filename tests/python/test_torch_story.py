"""The RMSNorm story from PyTorch code (docs/pytorch.md): the three variants of
examples/pytorch/rmsnorm_three_ways.py, profiled with trnsim.torch.profile, against the graph
JSON files that write the same three programs by hand (workloads/examples/rmsnorm_*.json), and
their outputs against PyTorch's own CPU results. Skipped where python3-torch is not installed."""
import copy
import importlib.util
import json
import os

import pytest

torch = pytest.importorskip("torch")
import trnsim.torch as tt  # noqa: E402
from trnsim._runner import run_workload  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROWS, COLS = 256, 1024  # small enough for a fast test; the example's default is 2048 x 4096


def _example():
    path = os.path.join(ROOT, "examples", "pytorch", "rmsnorm_three_ways.py")
    spec = importlib.util.spec_from_file_location("rmsnorm_three_ways", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = _example()


@pytest.fixture(scope="module")
def inputs():
    torch.manual_seed(0)
    x = torch.randn(ROWS, COLS).to(torch.bfloat16)
    w = (torch.rand(COLS) + 0.5).to(torch.bfloat16)
    return x, w


@pytest.fixture(scope="module")
def profiled(inputs, tmp_path_factory):
    """Each variant's profile and result."""
    x, w = inputs
    out = {}
    for name, fn, _ in EXAMPLE.VARIANTS:
        d = str(tmp_path_factory.mktemp(name))
        with tt.profile(arch="trn2", out_dir=d, report=False) as prof:
            y = fn(x, w)
        out[name] = (prof, y)
    return out


@pytest.fixture(scope="module")
def by_hand(tmp_path_factory):
    """stats.json of workloads/examples/rmsnorm_{eager,fused,compiled}.json at the test's shape."""
    out = {}
    for name in ("eager", "fused", "compiled"):
        with open(os.path.join(ROOT, "workloads", "examples", f"rmsnorm_{name}.json")) as f:
            doc = json.load(f)
        doc = copy.deepcopy(doc)
        doc["inputs"]["x"]["shape"] = [ROWS, COLS]
        doc["inputs"]["gamma"]["shape"] = [COLS]
        d = str(tmp_path_factory.mktemp(f"json_{name}"))
        path = os.path.join(d, "workload.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        code, stats, _ = run_workload(path, d, report=False, arch="trn2")
        assert code == 0
        out[name] = stats
    return out


def _kernels(stats):
    return [(k["op"], k["duration"], k["start_time_ps"]) for k in stats["kernels"]]


@pytest.mark.parametrize("name", ["eager", "fused", "compiled"])
def test_each_variant_has_the_device_times_of_its_graph_json(profiled, by_hand, name):
    prof, _ = profiled[name]
    mine, theirs = prof.stats, by_hand[name]
    assert mine["mode"] == theirs["mode"]
    assert [(d, s) for _, d, s in _kernels(mine)] == [(d, s) for _, d, s in _kernels(theirs)]
    assert mine["host"]["device_time"] == pytest.approx(theirs["host"]["device_time"], rel=1e-12)
    assert mine["host"]["kernel_launches"] == theirs["host"]["kernel_launches"]
    assert mine["summary"]["total_time"] == pytest.approx(theirs["summary"]["total_time"],
                                                          rel=1e-12)


def test_the_variants_rank_as_their_graph_json_files_do(profiled, by_hand):
    def order(times):
        return sorted(times, key=times.get)
    mine = {n: p.stats["summary"]["total_time"] for n, (p, _) in profiled.items()}
    theirs = {n: s["summary"]["total_time"] for n, s in by_hand.items()}
    assert order(mine) == order(theirs)
    # the story: one kernel beats six launches and five HBM round trips
    assert order(mine)[-1] == "eager"
    assert profiled["eager"][0].stats["host"]["kernel_launches"] == 6
    assert profiled["compiled"][0].stats["host"]["kernel_launches"] == 1
    assert profiled["fused"][0].stats["host"]["kernel_launches"] == 1


@pytest.mark.parametrize("name", ["eager", "fused", "compiled"])
def test_each_variant_returns_what_torch_computes_on_the_cpu(profiled, inputs, name):
    x, w = inputs
    _, y = profiled[name]
    fn = dict((n, f) for n, f, _ in EXAMPLE.VARIANTS)[name]
    expected = fn(x, w)  # outside a profile: PyTorch on the CPU
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    # bf16: 8 bits of mantissa; the device and the CPU round intermediates differently
    torch.testing.assert_close(y.float(), expected.float(), atol=0.05, rtol=0.02)
    assert not torch.equal(y, torch.zeros_like(y))


def test_the_tables_name_what_each_variant_ran(profiled):
    keys = {n: [e.key for e in p.key_averages()] for n, (p, _) in profiled.items()}
    assert {"aten::pow", "aten::mean", "aten::add", "aten::rsqrt", "aten::mul"} <= set(
        keys["eager"])
    assert "trnsim::rms_norm" in keys["fused"] and "rms_norm" in keys["fused"]
    assert "CompiledFunction" in keys["compiled"]
    assert any(k.startswith("fused_pow_mean") for k in keys["compiled"])
