#!/usr/bin/python3
"""The flow memory model against the detailed one: every library kernel, three shapes (four for
the row kernels), every preset, timing-only. Each pair of total times must agree within
TOLERANCE (issue 17; README and docs/validation.md state the measured worst case, which this
prints).

Usage: flow_matrix.py TRNSIM [--table]  (--table prints every case, for docs/validation.md)
"""
import json
import os
import subprocess
import sys
import tempfile

TOLERANCE = 0.05
# Known cases beyond TOLERANCE, each with its bound and why (docs/validation.md, "The flow model
# against the detailed model, every kernel"). A small run of a few microseconds whose first
# three loads, on different queues, share the DMA engines: in the detailed run each load's first
# chunk starts when the engine's chunk in progress ends, in the flow run at its ready time,
# sharing the engines at once. A rule for that (branch flow-chunk-wait) fixes this case but
# moves the large softmax cases beyond 5% the other way (validation.md 6.2).
# And a large softmax on trn1, HBM-bound: the detailed engines' window of 4 chunks binds now and
# then at HBM saturation (mostly while a bank is refreshed), which the fluid rates do not see;
# the flow model's optimism there grows with the run (-4.8% at 4096x8192, -5.5% at 8192x16384).
KNOWN = {
    "attention 1x512x128 trn1": 0.07,
    "softmax 8192x16384 trn1": 0.07,
}
# Every preset (config::preset_name_list()): sim/report/summary.cpp takes a flow run whose DMA
# windows cover the HBM peak fewer times than on its preset as outside this matrix, and says so.
PRESETS = ["trn1", "trn2", "trn3"]
# Three shapes per kernel: small (a few tiles), the example's, and a larger one. The row kernels,
# bound by DMA and HBM, have a fourth, [8192, 16384] (256 MiB in and out), where the flow model's
# optimism at HBM saturation shows most.
ROWS = ([256, 1024], [2048, 4096], [4096, 8192], [8192, 16384])
CASES = {
    "rmsnorm": [{"variant": "fused", "shape": s} for s in ROWS],
    "layernorm": [{"method": "bn_stats", "shape": s} for s in ROWS],
    "softmax": [{"shape": s} for s in ROWS],
    "attention": [{"shape": s} for s in ([1, 512, 128], [4, 1024, 128], [8, 2048, 128])],
    "mlp": [{"activation": "gelu", "shape": s} for s in ([128, 256, 512], [512, 512, 2048], [1024, 2048, 4096])],
}
for strategy in (1, 2, 3, 4):
    CASES[f"matmul_s{strategy}"] = [
        {"strategy": strategy, "shape": s} for s in ([256, 512, 512], [512, 1024, 1024], [2048, 4096, 4096])]


def total_time(trnsim, workload, preset, flow, out):
    cmd = [trnsim, workload, "--arch", preset, "--timing-only", "--no-report", "--out", out,
           "--set", f"dma_flow_model={'true' if flow else 'false'}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f)["summary"]["total_time_ps"]


def main():
    trnsim = sys.argv[1]
    table = "--table" in sys.argv[2:]
    worst = (0.0, "")
    failures = []
    diffs = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cases in CASES.items():
            kernel = name.split("_")[0]
            for params in cases:
                workload = os.path.join(tmp, "w.json")
                with open(workload, "w") as f:
                    json.dump({"kernel": kernel, "dtype": "bf16", "seed": 0, **params}, f)
                for preset in PRESETS:
                    d = total_time(trnsim, workload, preset, False, os.path.join(tmp, "d"))
                    fl = total_time(trnsim, workload, preset, True, os.path.join(tmp, "f"))
                    diff = fl / d - 1
                    label = f"{name} {'x'.join(map(str, params['shape']))} {preset}"
                    if table:
                        print(f"| {label} | {d / 1e6:.2f} | {fl / 1e6:.2f} | {100 * diff:+.1f}% |")
                    diffs.append(abs(diff))
                    if abs(diff) > abs(worst[0]):
                        worst = (diff, label)
                    if abs(diff) > KNOWN.get(label, TOLERANCE):
                        failures.append(f"{label}: detailed {d / 1e6:.2f} us, flow {fl / 1e6:.2f} us "
                                        f"({100 * diff:+.1f}%)")
    print(f"worst case: {worst[1]} {100 * worst[0]:+.1f}%; mean absolute difference "
          f"{100 * sum(diffs) / max(1, len(diffs)):.2f}% over {len(diffs)} cases; "
          f"{len(KNOWN)} known cases allowed beyond {100 * TOLERANCE:.0f}%: {', '.join(KNOWN)}")
    if failures:
        print(f"beyond {100 * TOLERANCE:.0f}%:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
