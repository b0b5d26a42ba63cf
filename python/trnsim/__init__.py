"""trnsim: a cycle-approximate simulator of an AWS Trainium NeuronCore, from Python.

    import trnsim
    program = trnsim.load_program("workloads/examples/matmul_tiled.tasm")
    result = trnsim.run_program(program, inputs={})   # a RunResult: stats, summary, tensors

trnsim.nki runs NKI kernels (docs/nki.md). The simulation itself is the C++ core's, the same
as the command line's: this package builds programs and reads results.
"""

from . import _native
from ._runner import RunResult, SimulationError, run_program

__version__ = "0.1.0"


def load_program(path, arch="trn2"):
    """A .tasm or JSON program file as a Program (synchronised, validated)."""
    return _native.load_program(path, arch)


def isa_table(markdown=False):
    """The instruction set, as `trnsim isa` prints it."""
    return _native.isa_table(markdown)


def arch_info(arch="trn2", sets=()):
    """A few hardware limits of a preset: partitions, SBUF and PSUM sizes, PSUM banks."""
    return _native.arch_info(arch, list(sets))
