"""nki.typing (earlier API): parameter annotations and shape/dtype placeholders."""

from ._core import as_dtype


class _MutableTensor:
    """nt.mutable_tensor: a kernel parameter the kernel may write (earlier API)."""

    def __repr__(self):
        return "nt.mutable_tensor"


mutable_tensor = _MutableTensor()


class _TensorType:
    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = as_dtype(dtype, "nt.tensor")


class _TensorFactory:
    """nt.tensor[[shape], dtype]: an input given by shape and dtype only (nki.benchmark)."""

    def __getitem__(self, key):
        shape, dtype = key
        return _TensorType(shape, dtype)


tensor = _TensorFactory()
