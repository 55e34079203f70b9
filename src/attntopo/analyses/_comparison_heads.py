"""The per-head numbers :func:`~attntopo.analyses.compare` is made of: both texts' token
distances (on the model's device), the shared tokens' connection scales, the distances
between the texts' diagrams, and the edges and triangles the shared tokens make."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..attention import Attention
from ..distances import token_distances
from ..topology import Diagram, single_linkage
from ..topology.complex import connection_scales, cophenetic_matrix
from ..topology.diagram_distances import bottleneck, wasserstein

__all__ = ["device_distances", "shared_connection_scales", "PAPER_MIN_PERSISTENCE"]


def device_distances(att: Attention, device: str):
    """Jensen–Shannon distances of ``att``'s weights computed on ``device``: a float64
    torch.Tensor of shape ``(L, H, n, n)`` there (the same numbers as :func:`token_distances`)."""
    import torch

    from ..distances import token_distances_tensor

    return token_distances_tensor(torch.from_numpy(att.weights).to(device))


def shared_connection_scales(D: Any, idx: np.ndarray) -> np.ndarray:
    """Connection scales (:func:`attntopo.topology.connection_scales`) of every head's tokens
    ``idx``: ndarray of shape ``(L, H, m, m)`` from distances ``D`` of shape ``(L, H, n, n)``.

    An ndarray goes through SciPy head by head; a torch tensor (the distances where the model
    is, a GPU) through :func:`attntopo.topology.single_linkage`, all heads' trees in one batch
    on its device, then each cophenetic matrix on the host (the same numbers: the subdominant
    ultrametric does not depend on which tree is found among ties)."""
    L, H, n = D.shape[0], D.shape[1], D.shape[-1]
    out = np.zeros((L, H, idx.size, idx.size))
    sub = np.ix_(idx, idx)
    if isinstance(D, np.ndarray):
        for i in range(L):
            for j in range(H):
                out[i, j] = connection_scales(D[i, j])[sub]
        return out
    if n < 2:
        return out
    Z = single_linkage(D.reshape(L * H, n, n))
    for k in range(L * H):
        out[k // H, k % H] = cophenetic_matrix(Z[k])[sub]
    return out


def _grid(flat: Sequence[Diagram], L: int, H: int, start: int = 0) -> list[list[Diagram]]:
    return [[flat[start + i * H + j] for j in range(H)] for i in range(L)]


#: The notebooks' ``simplex_tree.persistence(min_persistence=0.01)``: bars this short or
#: shorter are left out of the diagrams they compare (``paper_compat="notebook"``).
PAPER_MIN_PERSISTENCE = 0.01


def _without_short_bars(dgm: Diagram, min_persistence: float = PAPER_MIN_PERSISTENCE) -> Diagram:
    """``dgm`` keeping only the bars longer than ``min_persistence`` (gudhi's rule)."""
    return dgm.replace(
        dgms=[d[d[:, 1] - d[:, 0] > min_persistence] for d in dgm.dgms], maxdim=dgm.maxdim
    )


def _pair_distances(da: Diagram, db: Diagram) -> np.ndarray:
    """(3, maxdim + 1): bottleneck, W1, W2 per dimension."""
    return np.stack([bottleneck(da, db), wasserstein(da, db, p=1), wasserstein(da, db, p=2)])


def _triangle_counts(M: np.ndarray) -> np.ndarray:
    """Number of triangles of each boolean adjacency in a (..., m, m) stack."""
    F = M.astype(np.float64)
    return np.rint(np.einsum("...ij,...jk,...ki->...", F, F, F) / 6.0).astype(np.int64)


def _adaptive_scales(dgm_a: list[list[Diagram]], dgm_b: list[list[Diagram]]) -> np.ndarray:
    L, H = len(dgm_a), len(dgm_a[0]) if dgm_a else 0
    out = np.zeros((L, H))
    for i in range(L):
        for j in range(H):
            deaths = np.concatenate([dgm_a[i][j].finite(0)[:, 1], dgm_b[i][j].finite(0)[:, 1]])
            deaths = deaths[deaths > 0]
            out[i, j] = float(np.median(deaths)) if deaths.size else 1.0
    return out


def _text_distances(
    A: Attention, B: Attention, device: str, metric: str, paper: Any, progress: Any
) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    """Both texts' token distances ``(DA, DB)`` as arrays, and ``(TA, TB)`` where the
    connection scales are computed: the same arrays, or torch tensors on the model's GPU."""
    if device != "cpu" and metric == "jensen_shannon" and not paper:
        # the model is on a GPU: distances there, the connection scales' trees there too
        TA, TB = (device_distances(x, device) for x in (A, B))
        progress.advance(2 * A.weights.shape[0] * A.weights.shape[1])
        return TA.cpu().numpy(), TB.cpu().numpy(), TA, TB
    DA = token_distances(A, metric=metric, paper_compat=paper, progress=progress)
    DB = token_distances(B, metric=metric, paper_compat=paper, progress=progress)
    return DA, DB, DA, DB


def _head_diagram_distances(
    grid_a: list,
    grid_b: list,
    sh_a: list | None,
    sh_b: list | None,
    maxdim: int,
    paper: Any,
    progress: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Per head, the :data:`~attntopo.constants.DISTANCE_NAMES` distances between the texts'
    diagrams and between their shared tokens' diagrams (NaN without shared tokens): two
    ``(3, L, H, maxdim + 1)``."""
    L, H = len(grid_a), len(grid_a[0])
    dist = np.zeros((3, L, H, maxdim + 1))
    sdist = np.full((3, L, H, maxdim + 1), np.nan)
    kept = (
        _without_short_bars if paper == "notebook" else (lambda dgm: dgm)
    )  # the notebook's diagrams
    progress.stage("diagram distances")
    for i in range(L):
        for j in range(H):
            dist[:, i, j] = _pair_distances(kept(grid_a[i][j]), kept(grid_b[i][j]))
            if sh_a is not None:
                sdist[:, i, j] = _pair_distances(kept(sh_a[i][j]), kept(sh_b[i][j]))
            progress.advance()
    return dist, sdist


def _shared_counts(SA: np.ndarray, SB: np.ndarray, scales: np.ndarray) -> dict[str, np.ndarray]:
    """The :data:`~attntopo.constants.COUNT_NAMES` counts per head: edges and triangles
    among the shared tokens at each head's scale, in each text and in both."""
    L, H, m = SA.shape[0], SA.shape[1], SA.shape[-1]
    eps = scales[:, :, None, None]
    off = ~np.eye(m, dtype=bool)
    MA = (SA <= eps) & off
    MB = (SB <= eps) & off
    MS = MA & MB
    counts = {
        "shared_edges": MS.sum(axis=(-1, -2)) // 2,
        "shared_triangles": _triangle_counts(MS),
        "edges_a": MA.sum(axis=(-1, -2)) // 2,
        "edges_b": MB.sum(axis=(-1, -2)) // 2,
        "triangles_a": _triangle_counts(MA),
        "triangles_b": _triangle_counts(MB),
    }
    return {k: np.asarray(v, dtype=np.int64).reshape(L, H) for k, v in counts.items()}
