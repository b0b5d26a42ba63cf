#!/usr/bin/env python3
"""A Llama-style decoder block in plain PyTorch 1.13 (RMSNorm, attention with rotary position
embeddings, a SwiGLU MLP, two residual adds), in bf16, profiled on a simulated NeuronCore in
the three modes of docs/pytorch.md:

  eager     the block as written: one kernel launch per aten op;
  fused     the same block with trnsim.torch.RMSNorm (the library's fused RMSNorm kernel);
  compiled  the eager block traced with torch.fx (make_fx: the block does shape arithmetic)
            and compiled by trnsim's fusion pass.

  PYTHONPATH=build/python:python /usr/bin/python3 examples/pytorch/llama_block.py

Options: --dim 256 --heads 4 --hidden 688 --seq 128 --batch 1, --arch trn2, --rows N (table rows),
--meta (shapes only, timing only: any size, e.g. --dim 4096 --heads 32 --hidden 11008).
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

import trnsim.torch as tt


class RMSNorm(nn.Module):
    """Llama's RMSNorm written out in PyTorch ops (PyTorch 1.13 has no rms_norm)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq, head_dim, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        B, S, D = x.shape
        q = self.q_proj(x).view(B, S, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, S, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, S, self.n_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        p = F.softmax(scores.float(), dim=-1).to(q.dtype)
        o = torch.matmul(p, v).transpose(1, 2).reshape(B, S, D)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderBlock(nn.Module):
    def __init__(self, dim=256, n_heads=4, hidden=688, norm=RMSNorm):
        super().__init__()
        self.input_layernorm = norm(dim)
        self.self_attn = Attention(dim, n_heads)
        self.post_attention_layernorm = norm(dim)
        self.mlp = MLP(dim, hidden)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


def make_block(dim, n_heads, hidden, fused=False, dtype=torch.bfloat16, device="cpu", seed=0):
    """The block with weights from `seed` (the same weights for fused=False and True)."""
    torch.manual_seed(seed)
    block = DecoderBlock(dim, n_heads, hidden)
    if fused:
        state = block.state_dict()
        block = DecoderBlock(dim, n_heads, hidden, norm=tt.RMSNorm)
        block.load_state_dict(state)
    return block.to(dtype=dtype, device=device)


def make_inputs(batch, seq, dim, n_heads, dtype=torch.bfloat16, device="cpu", seed=1):
    torch.manual_seed(seed)
    x = torch.randn(batch, seq, dim).to(dtype=dtype, device=device)
    cos, sin = rope_tables(seq, dim // n_heads)
    # a causal mask: a large negative number rather than -inf, so that bf16 sums stay finite
    mask = torch.full((seq, seq), -1e4).triu(1)
    return tuple(t.to(dtype=dtype, device=device) for t in (x, cos, sin, mask))


def variants(dim, n_heads, hidden, device="cpu"):
    eager = make_block(dim, n_heads, hidden, device=device)
    fused = make_block(dim, n_heads, hidden, fused=True, device=device)
    compiled = tt.fx_fuse(make_block(dim, n_heads, hidden, device=device))
    return [("eager", eager), ("fused", fused), ("compiled", compiled)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=688)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--arch", default="trn2")
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--meta", action="store_true", help="shapes only (timing only)")
    a = ap.parse_args(argv)
    device = "meta" if a.meta else "cpu"
    inputs = make_inputs(a.batch, a.seq, a.dim, a.heads, device=device)
    print(f"Llama-style decoder block: dim {a.dim}, {a.heads} heads, MLP {a.hidden}, "
          f"batch {a.batch}, sequence {a.seq}, bf16, on a simulated {a.arch} NeuronCore\n")
    reference = None
    summary = []
    for name, block in variants(a.dim, a.heads, a.hidden, device):
        with tt.profile(arch=a.arch) as prof:
            y = block(*inputs)
        line = (f"{name:9} total {prof.total_time_us:9.1f} us, device busy "
                f"{prof.device_time_us:9.1f} us, "
                f"{prof.stats['host']['kernel_launches']:3} kernel launches")
        if not a.meta:
            with torch.no_grad():
                expected = block(*inputs)  # PyTorch on the CPU
            err = (y.float() - expected.float()).abs().max().item()
            line += f", max abs difference from PyTorch's CPU result {err:.3g}"
        summary.append(line)
        print(f"== {name}")
        print(prof.key_averages().table(sort_by="device_time_total", row_limit=a.rows))
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
