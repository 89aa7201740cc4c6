"""Finding the 4-bit form of weights that came from a Q4_1 model, for ``q4_gemm.c``.

Q4_1 stores each block of 32 inputs of an output row as d * q + m (q in 0..15, d and m fp16).
The model cache keeps the fp32 weights that dequantization produced, so the codes are not kept;
they are recovered here, block by block: m is the block's minimum (the code 0 always occurs), d
the fp16 value nearest (max - m) / 15 or one of its neighbours, q = round((w - m) / d). A weight
gets a 4-bit copy only if *every* block rebuilds bit for bit with the kernel's own operations
(fp32 multiply, then add); otherwise it stays fp32 only. Exactness is checked, never assumed.
"""
from __future__ import annotations

import torch

BLOCK = 32
CODES = 16
D_NEIGHBOURS = (0, 1, -1, 2, -2)   # fp16 steps around (max - m) / 15 to try for d


def recover_q4(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """(q uint8 [N, K], d fp32 [N, K/32], m fp32 [N, K/32]) with w == d * q + m exactly, or None."""
    if w.dim() != 2 or w.dtype != torch.float32 or w.shape[1] % BLOCK or not torch.isfinite(w).all():
        return None
    N, K = w.shape
    W = w.view(N, K // BLOCK, BLOCK)
    m = W.amin(-1)
    base = ((W.amax(-1) - m) / (CODES - 1)).to(torch.float16).view(torch.int16)
    d = torch.zeros_like(m)
    q = torch.zeros(W.shape, dtype=torch.uint8)
    todo = torch.ones_like(m, dtype=torch.bool)
    for step in D_NEIGHBOURS:
        cand = (base + step).view(torch.float16).float()
        cand = torch.where(torch.isfinite(cand) & (cand >= 0), cand, torch.zeros_like(cand))
        safe = torch.where(cand > 0, cand, torch.ones_like(cand))
        codes = torch.round((W - m[..., None]) / safe[..., None]).clamp_(0, CODES - 1)
        codes = torch.where(cand[..., None] > 0, codes, torch.zeros_like(codes))
        rebuilt = torch.mul(cand[..., None], codes).add(m[..., None])   # two roundings, as the kernel
        ok = todo & (rebuilt == W).all(-1)
        d = torch.where(ok, cand, d)
        q = torch.where(ok[..., None], codes.to(torch.uint8), q)
        todo &= ~ok
        if not todo.any():
            return q.view(N, K), d, m
    return None


def pack_q4(w: torch.Tensor, panel: int = 16) -> torch.Tensor | None:
    """The 4-bit layout of ``q4_gemm.c`` (per panel of ``panel`` columns and block of 32 inputs:
    d, m as fp32, then 16 bytes per input pair), or None when ``w`` is not exactly Q4_1."""
    found = recover_q4(w)
    if found is None:
        return None
    q, d, m = found
    N, K = q.shape
    P, nb = -(-N // panel), K // BLOCK
    pad = P * panel - N        # padding columns: d = m = 0 and code 0, so the weight is 0
    if pad:
        q = torch.cat([q, q.new_zeros(pad, K)])
        d, m = (torch.cat([t, t.new_zeros(pad, nb)]) for t in (d, m))
    pairs = q.view(P, panel, nb, BLOCK // 2, 2)
    codes = (pairs[..., 0] | (pairs[..., 1] << 4)).permute(0, 2, 3, 1)      # [P, nb, pair, column]
    scales = [t.view(P, panel, nb).permute(0, 2, 1).contiguous().view(torch.uint8) for t in (d, m)]
    return torch.cat([*scales, codes.reshape(P, nb, BLOCK // 2 * panel)], -1).contiguous()
