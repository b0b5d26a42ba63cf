"""trnsim.torch: PyTorch programs on the simulated NeuronCore (docs/pytorch.md).

    import trnsim.torch as tt
    with tt.profile(arch="trn2") as prof:
        y = model(x)
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")
    prof.export_report("report.html")

profile records every aten op the block runs, turns them into trnsim's graph form, simulates
it and reports as torch.profiler does. rms_norm / RMSNorm are trnsim's fused RMSNorm op;
fx_fuse(model) traces with torch.fx for trnsim's fusion pass (graph mode). Importing this
package imports torch (Debian's python3-torch, 1.13); trnsim.torch.coverage (the table of what
lowers) does not.
"""

_EXPORTS = {
    "profile": "._profiler", "EventList": "._profiler", "FunctionEventAvg": "._profiler",
    "HostFallbackWarning": "._profiler", "key_averages_of_stats": "._profiler",
    "rms_norm": "._ops", "RMSNorm": "._ops",
    "fx_fuse": "._fx", "FusedGraph": "._fx",
    "CaptureError": "._graph",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    # Loaded on first use, so that trnsim.torch.coverage works without torch.
    if name in _EXPORTS:
        import importlib
        module = importlib.import_module(_EXPORTS[name], __name__)
        return getattr(module, name)
    raise AttributeError(f"module 'trnsim.torch' has no attribute '{name}'")
