"""Hellinger (and from it Fisher–Rao) and total variation distances of all row pairs."""

from __future__ import annotations

import torch

from ._workers import _refine_, _Workers

_H2_CUTOFF = {torch.float64: 1e-6, torch.float32: 1e-4}  # 1 - BC; below: recompute accurately


def _half_sq_root_diff(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """½ Σ (sqrt p − sqrt q)², using sqrt p − sqrt q = (p − q) / (sqrt p + sqrt q) (exact-ish)."""
    r = p.sqrt() + q.sqrt()
    diff = (p - q) / torch.where(r > 0, r, 1.0)
    return 0.5 * (diff * diff).sum(-1)


def _hellinger_block(
    P: torch.Tensor, dtype: torch.dtype, budget: int, workers: _Workers
) -> torch.Tensor:
    """Normalized Hellinger distances of all row pairs of a chunk: (B, m, k) -> (B, m, m)."""
    B, m, _ = P.shape
    H2 = torch.empty((B, m, m), dtype=torch.float64, device=P.device)
    rowsum = P.sum(-1)

    def one_matrix(h: int) -> None:
        S = torch.sqrt(P[h].to(dtype))
        bc = (S @ S.T).to(torch.float64)
        H2[h] = (rowsum[h, :, None] * 0.5 + rowsum[h, None, :] * 0.5).sub_(bc)

    workers.run(one_matrix, list(range(B)))
    _refine_(H2, P, _H2_CUTOFF[dtype], budget, workers, _half_sq_root_diff)
    return H2.clamp_(0.0, 1.0).sqrt_()


def _tv_block(P: torch.Tensor, dtype: torch.dtype, budget: int, workers: _Workers) -> torch.Tensor:
    """Total variation distances of all row pairs of a chunk: (B, n, k) -> (B, n, n) float64."""
    B, n, k = P.shape
    Pc = P.to(dtype)
    out = torch.empty((B, n, n), dtype=torch.float64, device=P.device)
    rows = max(1, budget // max(1, 4 * n * k * workers.n))  # bounds cdist's work per task

    def one_block(t: tuple[int, int]) -> None:
        h, a = t
        b = min(n, a + rows)
        out[h, a:b] = torch.cdist(Pc[h, a:b], Pc[h], p=1.0).to(torch.float64)

    workers.run(one_block, [(h, a) for h in range(B) for a in range(0, n, rows)])
    return out.mul_(0.5).clamp_(0.0, 1.0)
