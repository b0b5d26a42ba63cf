"""`trnsim run kernel.py`'s tracing step: imports the kernel file, traces the kernel with the
inputs the user named, and writes the JSON program form (KERNEL.json, with each input's data as
a .npy file beside it and the outputs marked) for the trnsim binary to run.

    python3 -m trnsim.nki.cli kernel.py --emit DIR [--kernel NAME] [--input NAME=SPEC]...
                                        [--grid G] [--arch A] [--set k=v]...

SPEC is SHAPE[:DTYPE] (128x512, 128x512:bfloat16; deterministic normal(0, 1) data) or a .npy
file. Errors are one line on stderr ("trnsim: error: kernel.py:12: ...") and exit code 2."""

import argparse
import importlib.util
import inspect
import json
import os
import sys
import traceback

import numpy as np


class UsageError(Exception):
    pass


def _load_module(path):
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(f"_trnsim_kernel_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _find_kernel(module, path, name):
    from . import Kernel
    if name:
        k = getattr(module, name, None)
        if k is None:
            raise UsageError(f"{path}: no function {name!r}")
        return k
    kernels = [(n, v) for n, v in vars(module).items() if isinstance(v, Kernel) and
               getattr(v.fn, "__module__", None) == module.__name__]
    if len(kernels) == 1:
        return kernels[0][1]
    if not kernels:
        raise UsageError(f"{path}: no function decorated with nki.jit; name one with --kernel")
    raise UsageError(f"{path}: {len(kernels)} kernels ({', '.join(n for n, _ in kernels)}); "
                     "choose one with --kernel")


def _parse_input(spec, path):
    from . import InputSpec
    if "=" not in spec:
        raise UsageError(f"--input {spec}: expected NAME=SHAPE[:DTYPE] or NAME=FILE.npy")
    name, value = spec.split("=", 1)
    if value.endswith(".npy"):
        if not os.path.exists(value):
            raise UsageError(f"--input {spec}: no file {value}")
        return name, np.load(value)
    shape_text, _, dtype = value.partition(":")
    try:
        shape = tuple(int(x) for x in shape_text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--input {spec}: the shape is sizes joined by x, e.g. 128x512") from None
    return name, InputSpec(shape, dtype or "float32")


def _user_line(path, exc):
    """The kernel file's innermost line in the traceback of an error the kernel raised."""
    target = os.path.abspath(path)
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == target:
            where = f"{os.path.relpath(frame.filename)}:{frame.lineno}"
    return where or path


def main(argv=None):
    ap = argparse.ArgumentParser(prog="trnsim run KERNEL.py")
    ap.add_argument("kernel_file")
    ap.add_argument("--emit", required=True)
    ap.add_argument("--kernel", default="")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--grid", default="")
    ap.add_argument("--arch", default="trn2")
    ap.add_argument("--lnc", default="1")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args(argv)
    from . import trace, NkiError, InputSpec
    from .._runner import SimulationError
    try:
        module = _load_module(a.kernel_file)
        kernel = _find_kernel(module, a.kernel_file, a.kernel)
        fn = getattr(kernel, "fn", kernel)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        given = dict(_parse_input(s, a.kernel_file) for s in a.input)
        unknown = [n for n in given if n not in {p.name for p in params}]
        if unknown:
            raise UsageError(f"--input {unknown[0]}: {fn.__name__} has no parameter {unknown[0]!r} "
                             f"(parameters: {', '.join(p.name for p in params)})")
        args = []
        for p in params:
            if p.name in given:
                args.append(given[p.name])
            elif p.default is not p.empty:
                args.append(p.default)
            else:
                raise UsageError(f"{a.kernel_file}: {fn.__name__}'s input {p.name!r} is not given "
                                 f"(--input {p.name}=SHAPE[:DTYPE] or {p.name}=FILE.npy)")
        grid = tuple(int(g) for g in a.grid.split(",")) if a.grid else getattr(kernel, "grid", ())
        traced = trace(kernel, *args, grid=grid, arch=a.arch, sets=a.set, lnc=a.lnc)
    except UsageError as e:
        print(f"trnsim: error: {e}", file=sys.stderr)
        return 2
    except (NkiError, SimulationError) as e:
        print(f"trnsim: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # an error of the kernel's own Python: one line, at its line
        print(f"trnsim: error: {_user_line(a.kernel_file, e)}: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2
    write_program(traced, a.emit)
    return 0


def write_program(traced, directory):
    """NAME.json (the JSON program form of kernel NAME) with the inputs' data beside it as .npy
    files; returns its path."""
    os.makedirs(directory, exist_ok=True)
    doc = json.loads(traced.program.to_json())
    outputs = set(traced.outputs)
    for t in doc["tensors"]:
        if t["name"] in traced.inputs:
            file = f"input_{t['name']}.npy"
            np.save(os.path.join(directory, file),
                    np.asarray(traced.inputs[t["name"]], dtype=np.float32))
            t["data"] = file
        if t["name"] in outputs:
            t["output"] = True
    # Named after the kernel: the summary and stats.json name the program by its file.
    with open(os.path.join(directory, f"{traced.name}.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    # lnc > 1: the other physical cores' programs, cores/1.json ... (same tensors; the inputs'
    # data is core 0's, in the one shared HBM).
    for c, p in enumerate(getattr(traced, "core_programs", []), start=1):
        os.makedirs(os.path.join(directory, "cores"), exist_ok=True)
        with open(os.path.join(directory, "cores", f"{c}.json"), "w") as f:
            f.write(p.to_json())
            f.write("\n")
    return os.path.join(directory, f"{traced.name}.json")


if __name__ == "__main__":
    sys.exit(main())
