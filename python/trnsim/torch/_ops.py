"""trnsim's fused RMSNorm as a PyTorch op (PyTorch 1.13 has none: no F.rms_norm, no
nn.RMSNorm), so that a program can ask for the library's fused kernel by name:

    y = trnsim.torch.rms_norm(x, weight, eps=1e-6)     # torch.ops.trnsim.rms_norm
    norm = trnsim.torch.RMSNorm(4096)                   # an nn.Module around it

On the CPU (and on meta tensors) it computes x / sqrt(mean(x^2) + eps) * weight in float32 and
returns x's dtype; under trnsim.torch.profile it lowers to the graph op rms_norm, the RMSNorm
kernel of the library (docs/kernels-norm-attention.md).
"""

import torch

_lib = torch.library.Library("trnsim", "DEF")
_lib.define("rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor")


def _rms_norm_cpu(x, weight, eps=1e-6):
    xf = x.to(torch.float32)
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.to(torch.float32)
    return y.to(x.dtype)


def _rms_norm_meta(x, weight, eps=1e-6):
    return torch.empty_like(x)


_lib.impl("rms_norm", _rms_norm_cpu, "CPU")
_lib.impl("rms_norm", _rms_norm_meta, "Meta")


def _rms_norm_autograd_meta(x, weight, eps=1e-6):
    # Meta tensors have no autograd fallthrough for a library op in 1.13: go below autograd
    # (inference only; the op has no backward).
    guard = torch._C._AutoDispatchBelowAutograd()  # noqa: F841 - holds for this call
    return torch.ops.trnsim.rms_norm(x, weight, eps)


_lib.impl("rms_norm", _rms_norm_autograd_meta, "AutogradMeta")


def rms_norm(x, weight, eps=1e-6):
    """RMSNorm over the last dimension: x / sqrt(mean(x^2, -1) + eps) * weight (weight of shape
    [x.shape[-1]]), as one op (trnsim's fused kernel on the simulated device)."""
    return torch.ops.trnsim.rms_norm(x, weight, float(eps))


class RMSNorm(torch.nn.Module):
    """nn.Module around trnsim.torch.rms_norm, with a weight of ones (as Llama's RMSNorm)."""

    def __init__(self, dim, eps=1e-6, dtype=None, device=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim, dtype=dtype, device=device))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}"
