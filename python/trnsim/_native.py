"""The C++ core (the pybind11 module _trnsim, built by CMake into build/python). Everything that
computes a time or a value lives there; this package only builds programs and reads results."""

try:
    import _trnsim as _m
except ImportError as e:  # pragma: no cover - depends on the build
    raise ImportError(
        "trnsim's C++ module (_trnsim) is not importable: build trnsim with pybind11-dev and "
        "python3-dev installed (scripts/bootstrap does), then put build/python and python/ on "
        "PYTHONPATH, and run Debian's /usr/bin/python3 (README.md, 'Run an NKI kernel'). "
        f"({e})") from e

ProgramBuilder = _m.ProgramBuilder
Program = _m.Program
run = _m.run
load_program = _m.load_program
run_workload = _m.run_workload
graph_problem = _m.graph_problem
key_averages_table = _m.key_averages_table
isa_table = _m.isa_table
arch_info = _m.arch_info
OPCODES = _m.OPCODES
ENGINES = _m.ENGINES
FUNCTIONS = _m.FUNCTIONS
ALU = _m.ALU
DTYPES = _m.DTYPES
MEMORY = _m.MEMORY
