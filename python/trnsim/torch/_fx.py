"""Graph mode: torch.fx tracing, then trnsim's fusion pass (torch 1.13 has no torch.compile).

    fused = trnsim.torch.fx_fuse(model)      # or a function
    with trnsim.torch.profile() as prof:
        y = fused(x)

fx_fuse traces the module or function into a torch.fx GraphModule: with
torch.fx.symbolic_trace when it can (no example inputs needed), else, at the first call, with
make_fx (which traces by running the function, so `B, S, D = x.shape` and shape arithmetic are
no problem; symbolic tracing fails on them). Calling the result runs the traced graph; inside
trnsim.torch.profile its ops form a compiled region: the graph form's "compile" mode fuses
consecutive row-local ops into one kernel each and the host makes one call (CompiledFunction)
that launches them all (docs/workloads.md, "Modes"). Outside a profile it runs on the CPU.
"""

import torch

from ._capture import active_session


class FusedGraph(torch.nn.Module):
    """A traced module or function whose calls the profiler compiles as one region."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn
        self.tracer = None
        self.trace_error = None
        self.graph_module = None
        try:
            self.graph_module = torch.fx.symbolic_trace(fn)
            self.tracer = "torch.fx.symbolic_trace"
        except Exception as e:  # noqa: BLE001 - any tracing failure: make_fx at the first call
            self.trace_error = e

    def _make_fx(self, args):
        from torch.fx.experimental.proxy_tensor import make_fx
        session = active_session()
        paused = session.paused if session is not None else None
        if session is not None:
            session.paused = True
        try:
            with torch.no_grad():
                self.graph_module = make_fx(self.fn)(*args)
            self.tracer = "make_fx"
        finally:
            if session is not None:
                session.paused = paused

    def forward(self, *args):
        if self.graph_module is None:
            self._make_fx(args)
        session = active_session()
        if session is None:
            return self.graph_module(*args)
        session.compiled += 1
        try:
            return self.graph_module(*args)
        finally:
            session.compiled -= 1


def fx_fuse(fn):
    """fn (an nn.Module or a function of tensors) traced with torch.fx for trnsim's fusion pass;
    call the result as fn. Inside trnsim.torch.profile its ops run as one compiled region."""
    return FusedGraph(fn)
