"""Errors: an NKI call trnsim does not model, or a kernel that breaks an NKI rule, raises a
Python exception naming the call and the kernel's file:line; from the shell, trnsim run exits 2
with that one line."""
import os
import subprocess

import numpy as np
import pytest

import trnsim.nki as nki
from trnsim.nki import NkiUnsupportedError, NkiValidationError

from kernels import bad

BAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "bad.py")


def line_of(mark):
    for i, line in enumerate(open(BAD), 1):
        if line.rstrip().endswith(f"# MARK {mark}"):
            return i
    raise KeyError(mark)


A = np.zeros((128, 128), np.float32)
B = np.zeros((128, 1024), np.float32)

CASES = [
    # kernel, args, exception, text the message contains
    ("unsupported_call", (A,), NkiUnsupportedError, "nl.device_print"),
    ("too_many_partitions", (A,), NkiValidationError,
     "number of partitions 256 exceed architecture limitation of 128"),
    ("bad_start_partition", (A,), NkiValidationError, "cannot start at partition 32"),
    ("psum_bank_crossed", (A, B), NkiValidationError, "is 1024 wide; at most 512"),
    ("sbuf_full", (A,), NkiValidationError, "SBUF is full"),
    ("psum_dtype", (A, B[:, :512].copy()), NkiValidationError, "PSUM accumulation groups are fp32"),
    ("bn_stats_too_wide", (np.zeros((128, 1024), np.float32),), NkiValidationError,
     "bn_stats takes at most 512"),
    ("gpsimd_psum", (A,), NkiValidationError, "which GpSimdE cannot reach"),
    ("unknown_name", (A,), NkiUnsupportedError, "nl.frobnicate"),
    ("masked_matmul", (A, B[:, :512].copy()), NkiUnsupportedError,
     "a mask on this instruction is not modelled"),
]


@pytest.mark.parametrize("name,args,kind,text", CASES, ids=[c[0] for c in CASES])
def test_error_names_the_call_and_the_kernel_line(name, args, kind, text):
    with pytest.raises(kind) as e:
        nki.trace(getattr(bad, name), *args)
    msg = str(e.value)
    assert f"kernels/bad.py:{line_of(name)}:" in msg, msg
    assert text in msg, msg
    assert "\n" not in msg


def test_the_cli_exits_2_with_one_line(tmp_path):
    binary = os.environ["TRNSIM_BINARY"]
    for name, spec in [("unsupported_call", "a=128x128"), ("bad_start_partition", "a=128x128"),
                       ("python_error", "a=128x128")]:
        p = subprocess.run([binary, "run", BAD, "--kernel", name, "--input", spec, "--out",
                            str(tmp_path / name)], capture_output=True, text=True)
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert f"bad.py:{line_of(name)}:" in lines[0], lines[0]
        assert not (tmp_path / name / "stats.json").exists()


def test_the_cli_names_a_missing_input_and_an_unknown_kernel(tmp_path):
    binary = os.environ["TRNSIM_BINARY"]
    p = subprocess.run([binary, "run", BAD, "--kernel", "unsupported_call"], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert "input 'a' is not given" in p.stderr
    p = subprocess.run([binary, "run", BAD], capture_output=True, text=True)
    assert p.returncode == 2
    assert "choose one with --kernel" in p.stderr
    p = subprocess.run([binary, "run", BAD, "--kernel", "nope"], capture_output=True, text=True)
    assert p.returncode == 2 and "no function 'nope'" in p.stderr
