#!/usr/bin/python3
"""Issue 17's micro-benchmarks against their public component figures (docs/validation.md,
"Micro-benchmarks"). Runs each workloads/examples/micro/*.tasm below with the given trnsim,
measures the figure from its trace.json, and prints a Markdown table: mechanism, public figure
and source, trnsim, difference.

Usage: bench/fidelity_micro.py [TRNSIM]   (default build/trnsim, from the repo root)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def trace_of(trnsim, name, tmp):
    out = os.path.join(tmp, name)
    subprocess.run([trnsim, os.path.join(ROOT, "workloads/examples/micro", name + ".tasm"),
                    "--timing-only", "--no-report", "--out", out], check=True,
                   capture_output=True)
    with open(os.path.join(out, "trace.json")) as f:
        events = json.load(f)["traceEvents"]
    lanes = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            lanes[(e["pid"], e["tid"])] = e["args"]["name"]
    slices = [dict(e, lane=lanes.get((e["pid"], e["tid"]), "")) for e in events
              if e.get("ph") == "X"]
    return slices


def instructions(slices, lane):
    return sorted((s for s in slices if s["cat"] == "instruction" and s["lane"].startswith(lane)),
                  key=lambda s: s["ts"])


def transfers(slices):
    return sorted((s for s in slices if s["cat"] == "dma"), key=lambda s: s["ts"])


def ns(us):
    return us * 1000.0


def interval(slices, lane):
    ins = instructions(slices, lane)
    return ns(ins[-1]["ts"] - ins[0]["ts"]) / (len(ins) - 1)


def main():
    trnsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/trnsim")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        def add(mechanism, public, source, value):
            rows.append((mechanism, public, source, value))

        s = trace_of(trnsim, "dependent_scalar_trn1", tmp)
        add("dependent 1-element ScalarE instruction, interval (trn1)", 189.0,
            "P Opt #5a [quote]: 189 ns", interval(s, "ScalarE"))
        s = trace_of(trnsim, "independent_scalar_trn1", tmp)
        add("independent 1-element ScalarE instruction, interval (trn1)", 64 / 1.4,
            "I1 [quote]: MIN_II ~64 cycles", interval(s, "ScalarE"))
        s = trace_of(trnsim, "dependent_vector_trn1", tmp)
        add("dependent 1-element VectorE instruction, interval (trn1)", 164 / 1.12,
            "A1 [quote]: max(MIN_II, N) + 100 cycles", interval(s, "VectorE"))
        for name, lone, consumer, label in (
                ("dma_32k_one_engine_trn2", 2400.0, 2700.0, "32 KiB on one engine"),
                ("dma_32k_sixteen_engines_trn2", 1200.0, 1500.0, "32 KiB on 16 engines")):
            s = trace_of(trnsim, name, tmp)
            trigger = instructions(s, "SyncE")[0]
            t = transfers(s)
            last_byte = max(x["ts"] + x["dur"] for x in t)
            use = instructions(s, "ScalarE")[0]
            add(f"one DMA, {label}: trigger to last byte (trn2)", lone,
                "D1 Examples 1-2 [read off figure]", ns(last_byte - trigger["ts"]))
            add(f"one DMA, {label}: trigger to the waiting engine's start (trn2)", consumer,
                "D1 Examples 1-2 [read off figure]", ns(use["ts"] - trigger["ts"]))
        s = trace_of(trnsim, "dma_queue_trn2", tmp)
        t = transfers(s)
        ends = sorted(x["ts"] + x["dur"] for x in t)
        add("a queue of 32 KiB DMAs on one engine, per transfer in steady state (trn2)",
            32768 / 23.0, "D2 [quote]: 23 B/ns sustained per engine",
            ns(ends[-1] - ends[len(ends) // 2]) / (len(ends) - 1 - len(ends) // 2))
        s = trace_of(trnsim, "matmul_back_to_back_trn1", tmp)
        add("independent matmuls, N = 128, interval (trn1)", 128 / 2.8,
            "A1 [quote]: max(N, 64) cycles", interval(s, "TensorE"))
        s = trace_of(trnsim, "matmul_result_trn1", tmp)
        mm = instructions(s, "TensorE")[0]
        use = instructions(s, "ScalarE")[0]
        add("matmul N = 128: start to the PSUM reader's start, less the cross-engine wake (trn1)",
            188.0, "P figs 20-21 [read off figure]: MATMUL lasts 188 ns",
            ns(use["ts"] - mm["ts"]) - 35.0)
        s = trace_of(trnsim, "psum_evacuation_trn2", tmp)
        add("PSUM evacuation, VectorE fp32 [128, 512] to bf16, interval (trn2)", 512 / 0.96,
            "I1 [quote]: max(MIN_II, N); A2: no 2x mode for fp32", interval(s, "VectorE"))
    print("| mechanism | public figure | source | trnsim | difference |")
    print("|---|---|---|---|---|")
    for mechanism, public, source, value in rows:
        print(f"| {mechanism} | {public:,.0f} ns | {source} | {value:,.0f} ns | "
              f"{100 * (value / public - 1):+.0f}% |")


if __name__ == "__main__":
    main()
