"""The Llama-style decoder block of examples/pytorch/llama_block.py (RMSNorm, attention with
RoPE, SwiGLU MLP) in bf16 runs end to end on the simulated device in the three modes, with
PyTorch's CPU results. Skipped where python3-torch is not installed."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")
import trnsim.torch as tt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "llama_block", os.path.join(ROOT, "examples", "pytorch", "llama_block.py"))
llama = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llama)

DIM, HEADS, HIDDEN, SEQ = 128, 2, 256, 64


@pytest.fixture(scope="module")
def runs():
    inputs = llama.make_inputs(1, SEQ, DIM, HEADS)
    out = {}
    for name, block in llama.variants(DIM, HEADS, HIDDEN):
        with tt.profile(report=False) as prof:
            y = block(*inputs)
        with torch.no_grad():
            expected = block(*inputs)
        out[name] = (prof, y, expected)
    return out


@pytest.mark.parametrize("name", ["eager", "fused", "compiled"])
def test_the_decoder_block_runs_on_the_device_with_torchs_results(runs, name):
    prof, y, expected = runs[name]
    assert not prof.host_ops  # every op of the block lowers
    assert y.dtype == torch.bfloat16 and y.shape == (1, SEQ, DIM)
    torch.testing.assert_close(y.float(), expected.float(), atol=0.1, rtol=0.05)
    keys = {e.key for e in prof.key_averages()}
    assert "matmul" in keys and "softmax" in keys


def test_fusing_cuts_launches_and_device_time(runs):
    launches = {n: p.stats["host"]["kernel_launches"] for n, (p, _, _) in runs.items()}
    device = {n: p.device_time_us for n, (p, _, _) in runs.items()}
    assert launches["fused"] == launches["eager"] - 10  # two RMSNorms: 6 kernels become 1
    assert launches["compiled"] < launches["eager"]
    assert device["fused"] < device["eager"] and device["compiled"] < device["eager"]
    assert "trnsim::rms_norm" in {e.key for e in runs["fused"][0].key_averages()}


def test_a_7b_size_block_profiles_on_meta_tensors():
    inputs = llama.make_inputs(1, 128, 4096, 32, device="meta")
    block = llama.make_block(4096, 32, 11008, device="meta")
    with tt.profile(report=False) as prof:
        block(*inputs)
    assert prof.stats["host"]["kernel_launches"] == 52
    assert not prof.host_ops
