"""Recording a PyTorch program at the dispatcher: every aten op the program runs, in order, with
its tensors' shapes and dtypes (docs/pytorch.md, "How the capture works").

The program runs for real (on CPU tensors, or meta tensors for shapes alone) under a
TorchDispatchMode: each op call reaches __torch_dispatch__ after autograd, as a device backend
receives it, so the calls are the ones an eager device backend would launch kernels for.
Composite ops that inference_mode lets through undecomposed (aten::linear, aten::matmul, ...)
are decomposed here, so that no_grad and inference_mode record the same calls. Tensors are
tracked by identity through weak references only: holding a factory's output would change what
PyTorch dispatches (an extra aten::detach, an error under inference_mode).
"""

import inspect
import os
import sys
import weakref

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from ._graph import Call, SILENT, TensorRef

_TORCH_DIR = os.path.dirname(torch.__file__)
_TRNSIM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Values of every op's outputs are kept (for an op the graph lowering turns away late) up to
# this many bytes; beyond, such an op is an error rather than a host fallback.
VALUE_BUDGET_BYTES = 1 << 30


def _numpy(t):
    """A copy of a tensor's values as numpy (float32 for bf16/fp16, as the graph's .npy files
    hold them), or None for a meta tensor."""
    if t.device.type == "meta":
        return None
    t = t.detach()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.to(torch.float32)
    if t.dtype == torch.bool:
        return t.numpy().copy()
    try:
        return t.contiguous().numpy().copy()
    except (TypeError, RuntimeError):
        return None


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "")


class Session:
    """One capture: the calls recorded so far and the tensors they touched."""

    def __init__(self, keep_values=True):
        self.calls = []
        self.keys = {}  # id(tensor) -> (weak reference to it, its current key)
        self.next_key = 0
        self.produced = []  # (weakref to a tensor produced inside, key)
        self.param_names = {}  # id(tensor) -> name, for parameters and buffers of called modules
        self.param_refs = []  # keeps those tensors alive while the capture lasts (ids stay theirs)
        self.scope = []  # module names, outermost first
        self.compiled = 0  # > 0 inside an fx_fuse region
        self.keep_values = keep_values
        self.value_bytes = 0
        self.meta = False
        self.paused = False  # while fx_fuse traces with make_fx

    # ---- tensors ----

    def _new_key(self, t):
        # By identity through a weak reference (torch.Tensor's == is elementwise, so a
        # WeakKeyDictionary cannot compare keys); the entry goes when the tensor does.
        self.next_key += 1
        i = id(t)

        def gone(r, i=i, keys=self.keys):
            if keys.get(i, (None,))[0] is r:
                del keys[i]

        self.keys[i] = (weakref.ref(t, gone), self.next_key)
        return self.next_key

    def key_of(self, t):
        entry = self.keys.get(id(t))
        return entry[1] if entry is not None and entry[0]() is t else None

    def _ref_in(self, t):
        """A TensorRef for an input tensor: known (produced or seen before) or new (an input of
        the program: its value and a name)."""
        key = self.key_of(t)
        if key is not None:
            return TensorRef(key, t.shape, _dtype_name(t), meta=t.device.type == "meta")
        key = self._new_key(t)
        if t.device.type == "meta":
            self.meta = True
        return TensorRef(key, t.shape, _dtype_name(t), value=_numpy(t), hint=self._name_of(t),
                         meta=t.device.type == "meta")

    def _ref_out(self, t):
        key = self._new_key(t)
        self.produced.append((weakref.ref(t), key))
        return TensorRef(key, t.shape, _dtype_name(t), meta=t.device.type == "meta")

    def _name_of(self, t):
        """A readable name for an input: a module's parameter or buffer name, else the name of
        the local variable that holds it in the innermost user frame."""
        name = self.param_names.get(id(t))
        if name:
            return name
        f = sys._getframe(1)
        while f is not None:
            path = os.path.abspath(f.f_code.co_filename)
            if not (path.startswith(_TORCH_DIR) or path.startswith(_TRNSIM_DIR)):
                for var, value in f.f_locals.items():
                    if value is t and not var.startswith("_"):
                        return var
                break
            f = f.f_back
        return "input"

    # ---- modules ----

    def enter_module(self, module):
        if not self.scope:
            for name, p in list(module.named_parameters()) + list(module.named_buffers()):
                if id(p) not in self.param_names:
                    self.param_names[id(p)] = name
                    self.param_refs.append(p)
            self.scope.append("")
            return
        parent = self.scope[-1]
        name = self._child_name(module)
        self.scope.append(f"{parent}.{name}" if parent else name)

    def _child_name(self, module):
        # The attribute name under which the innermost enclosing module holds it.
        for holder in reversed(self._modules):
            for n, m in holder._modules.items():
                if m is module:
                    return n
        return type(module).__name__

    def leave_module(self):
        if self.scope:
            self.scope.pop()

    # ---- calls ----

    def record(self, func, args, kwargs, out, inplace):
        schema = func._schema
        name = schema.name
        index = len(self.calls)
        conv_in = lambda a: self._ref_in(a) if isinstance(a, torch.Tensor) else a  # noqa: E731
        rargs = tree_map(conv_in, list(args))
        rkwargs = tree_map(conv_in, dict(kwargs))
        flat_out, _ = tree_flatten(out)
        if inplace:
            # x.op_() returns x: a new version of x (a new key), the old one for its inputs.
            outs = [self._ref_out(flat_out[0])] + [
                self._ref_out(o) if isinstance(o, torch.Tensor) else None for o in flat_out[1:]]
        else:
            outs = [self._ref_out(o) if isinstance(o, torch.Tensor) else None for o in flat_out]
        values = None
        if self.keep_values and name not in SILENT:
            values = []
            for o in flat_out:
                v = _numpy(o) if isinstance(o, torch.Tensor) else None
                if v is not None:
                    self.value_bytes += v.nbytes
                values.append(v)
            if self.value_bytes > VALUE_BUDGET_BYTES:
                self.keep_values = False
        scope = self.scope[-1] if self.scope else ""
        self.calls.append(Call(index, name, func._overloadname, rargs, rkwargs, outs, scope,
                               self.compiled > 0, inplace, values))

    def live_outputs(self):
        """Tensors produced inside the capture that are still referenced: the program's results."""
        live = []
        for ref, key in self.produced:
            t = ref()
            if t is not None and self.key_of(t) == key:
                live.append((t, key))
        return live


def _is_inplace(func):
    schema = func._schema
    return bool(schema.arguments) and schema.arguments[0].alias_info is not None and \
        schema.arguments[0].alias_info.is_write


class DispatchRecorder(TorchDispatchMode):
    def __init__(self, session):
        super().__init__()
        self.session = session

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.session.paused:
            return func(*args, **kwargs)
        # inference_mode lets composite ops through: decompose them as autograd would.
        if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(),
                                                          "CompositeImplicitAutograd"):
            with self:
                r = func.decompose(*args, **kwargs)
            if r is not NotImplemented:
                return r
        out = func(*args, **kwargs)
        self.session.record(func, args, kwargs, out, _is_inplace(func))
        return out


class ModuleScope:
    """Global forward hooks naming what runs inside which module (and its parameters)."""

    def __init__(self, session):
        self.session = session
        self.handles = []
        session._modules = []

    def __enter__(self):
        s = self.session

        def pre(module, inputs):
            s.enter_module(module)
            s._modules.append(module)

        def post(module, inputs, output):
            s.leave_module()
            if s._modules:
                s._modules.pop()
            # returns None: a forward hook that returns a value replaces the module's output

        mm = torch.nn.modules.module
        self.handles = [mm.register_module_forward_pre_hook(pre),
                        mm.register_module_forward_hook(post)]
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []


_active = []  # the sessions being recorded, innermost last


def active_session():
    return _active[-1] if _active else None


class Capture:
    """with Capture() as cap: program  -> cap.session.calls"""

    def __init__(self, keep_values=True):
        self.session = Session(keep_values)
        self._stack = []

    def __enter__(self):
        if _active:
            raise RuntimeError("trnsim.torch.profile cannot be nested in another one")
        _active.append(self.session)
        self._stack = [torch.no_grad(), ModuleScope(self.session),
                       DispatchRecorder(self.session)]
        for c in self._stack:
            c.__enter__()
        return self

    def __exit__(self, *exc):
        for c in reversed(self._stack):
            c.__exit__(*exc)
        _active.pop()
        return False


def write_back(live, values):
    """Puts the device's values into the tensors the program returned (as a device backend's
    results read back): values[key] is a numpy array of the tensor's values."""
    with torch.no_grad():
        for t, key in live:
            v = values.get(key)
            if v is None or t.device.type == "meta":
                continue
            src = torch.from_numpy(np.ascontiguousarray(v)).to(t.dtype).reshape(t.shape)
            t.copy_(src)


def signature_names(fn, args):
    """The parameter names of fn for its positional args (for naming graph inputs)."""
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}
    return {id(a): params[i] for i, a in enumerate(args) if i < len(params) and
            isinstance(a, torch.Tensor)}
