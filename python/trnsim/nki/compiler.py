"""nki.compiler (earlier API): direct allocation is not modelled; trnsim allocates every tensor
itself (docs/nki.md)."""

from ._core import unsupported, unsupported_attribute  # noqa: F401
from .language import no_reorder  # noqa: F401


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    unsupported_attribute(f"nki.compiler.{name}", "direct allocation is not modelled; trnsim allocates "
                                        "SBUF and PSUM itself")
