#!/usr/bin/env python3
"""The RMSNorm story from PyTorch code: the same RMSNorm three ways, profiled on a simulated
NeuronCore with trnsim.torch.profile, whose key_averages() table has torch.profiler's layout
(docs/pytorch.md).

  1. eager:    six PyTorch ops (pow, mean, add, rsqrt, mul, mul): one kernel launch per op,
               every intermediate tensor round-trips through HBM;
  2. fused:    trnsim.torch.rms_norm, one op that maps to the library's fused RMSNorm kernel
               (PyTorch 1.13 has no rms_norm);
  3. compiled: the eager function traced with torch.fx and compiled by trnsim's fusion pass
               (trnsim.torch.fx_fuse; PyTorch 1.13 has no torch.compile): one kernel.

Run from the repository root after building (README.md, "Profile a PyTorch module"):

  PYTHONPATH=build/python:python /usr/bin/python3 examples/pytorch/rmsnorm_three_ways.py

Options: --rows R --cols C (default 2048 x 4096, the shape of workloads/examples/rmsnorm_*.json),
--arch trn2, --out DIR (keeps each variant's workload.json, stats.json, trace.json and
report.html in DIR/<variant>).
"""

import argparse
import os
import sys

import torch

import trnsim.torch as tt


def rmsnorm_eager(x, weight, eps: float = 1e-6):
    """RMSNorm as a PyTorch user writes it: x / sqrt(mean(x^2) + eps) * weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rmsnorm_fused(x, weight, eps: float = 1e-6):
    """One op: trnsim's fused RMSNorm (the library's kernel)."""
    return tt.rms_norm(x, weight, eps)


# The eager function traced with torch.fx, then fused by trnsim's compile pass.
rmsnorm_compiled = tt.fx_fuse(rmsnorm_eager)

VARIANTS = [
    ("eager", rmsnorm_eager, "six PyTorch ops, one kernel launch each"),
    ("fused", rmsnorm_fused, "trnsim.torch.rms_norm, the library's fused RMSNorm kernel"),
    ("compiled", rmsnorm_compiled, "torch.fx trace + trnsim's fusion pass: one fused kernel"),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--arch", default="trn2")
    ap.add_argument("--out", default=None, help="keep each variant's files in OUT/<variant>")
    a = ap.parse_args(argv)

    torch.manual_seed(0)
    x = torch.randn(a.rows, a.cols).to(torch.bfloat16)
    weight = (torch.rand(a.cols) + 0.5).to(torch.bfloat16)
    reference = rmsnorm_eager(x.float(), weight.float())

    print(f"RMSNorm of a [{a.rows}, {a.cols}] bf16 tensor on a simulated {a.arch} NeuronCore\n")
    results = []
    for name, fn, what in VARIANTS:
        out_dir = os.path.join(a.out, name) if a.out else None
        with tt.profile(arch=a.arch, out_dir=out_dir) as prof:
            y = fn(x, weight)
        err = (y.float() - reference).abs().max().item()
        total = prof.total_time_us
        device = prof.device_time_us
        host = prof.stats.get("host", {})
        kernels = host.get("kernel_launches", 0)
        cpu = host.get("host_cpu_time", 0.0) * 1e6
        sync = host.get("synchronize_time", 0.0) * 1e6
        results.append((name, total, device, kernels, cpu, sync))
        print(f"== {name}: {what}")
        print(prof.key_averages().table(sort_by="device_time_total", row_limit=12))
        print(f"   total {total:.1f} us, device busy {device:.1f} us, {kernels} kernel "
              f"launch(es); max abs error against torch's fp32 RMSNorm {err:.3g}\n")

    print("where each variant spends its time (host CPU: dispatch and launch calls; waiting: "
          "the final synchronize):")
    print(f"  {'variant':10} {'total':>10} {'device':>10} {'host CPU':>10} {'waiting':>10} "
          f"{'kernels':>8}")
    for name, total, device, kernels, cpu, sync in results:
        print(f"  {name:10} {total:8.1f}us {device:8.1f}us {cpu:8.1f}us {sync:8.1f}us "
              f"{kernels:8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
