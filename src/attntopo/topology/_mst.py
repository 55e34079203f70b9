"""H0 of many distance matrices at once: a batched Prim's minimum spanning tree in torch.

The finite H0 deaths of the Vietoris–Rips filtration of a finite metric space are the edge
lengths of a minimum spanning tree (every H0 bar is born at 0 and dies when its component
merges: Kruskal's algorithm run on the filtration).  Prim's algorithm grows one tree from a
root, adding the nearest outside point each step; run on ``B`` matrices in lockstep it is
``n`` steps of ``O(B n)`` tensor operations, so it runs where the matrices are (a CUDA
tensor stays on its GPU; only the ``(B, n - 1)`` edge lengths need to cross to the host) and
costs ``O(B n²)``, against the ``O(n³)`` of the distances themselves.

Growing the tree from a set of roots instead of one point (the roots contracted to one
vertex) gives the minimum spanning forest that attaches every other point to the set: TOHA's
prompt-to-response score (:mod:`attntopo.features`) is that forest with the prompt as roots.

H1 and above are not trees: they stay with the persistence engines on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidInputError, InvalidMatrixError

__all__ = ["prim_edges", "prim_contracted", "h0_deaths", "h0_diagrams"]


def _as_tensor(D: Any):
    import torch

    if isinstance(D, torch.Tensor):
        return D.detach()
    return torch.from_numpy(np.ascontiguousarray(D, dtype=np.float64))


def prim_edges(D: Any, roots: Any = None):
    """Edge lengths of the minimum spanning forest attaching every point to ``roots``.

    Parameters
    ----------
    D : ndarray or torch.Tensor of shape (B, n, n)
        Symmetric distance matrices (only the entries between two points outside ``roots``
        and between a root and a point outside are read).  A tensor stays on its device and
        keeps its floating dtype; an array is used as float64 on the CPU.
    roots : array-like of shape (n,), bool, optional
        The points contracted to one vertex (at least one); default the first point alone,
        which gives the minimum spanning tree of all ``n`` points.

    Returns
    -------
    torch.Tensor of shape (B, r)
        ``r`` = the points outside ``roots``; the length of the edge that attached each of
        them, in the order Prim added them (not sorted), on ``D``'s device.  Their sum is the
        forest's length; with a single root they are the ``n - 1`` minimum-spanning-tree edge
        lengths.
    """
    import torch

    X = _as_tensor(D)
    if X.ndim != 3 or X.shape[-1] != X.shape[-2]:
        raise InvalidMatrixError(f"D must have shape (B, n, n), got {tuple(X.shape)}")
    B, n, _ = X.shape
    if roots is None:
        mask = torch.zeros(n, dtype=torch.bool)
        mask[0] = True
    else:
        mask = torch.as_tensor(np.asarray(roots, dtype=bool))
        if mask.shape != (n,) or not bool(mask.any()):
            raise InvalidInputError(f"roots must be (n,) = ({n},) booleans with at least one True")
    rest = torch.nonzero(~mask).reshape(-1)
    r = int(rest.numel())
    if r == 0 or B == 0:
        return torch.zeros((B, r), dtype=X.dtype, device=X.device)
    k = n - r
    if bool(mask[:k].all()):  # roots form a prefix (one root, a prompt before its response): views
        to_roots = X[:, :k, k:].amin(dim=1)
        RR = X[:, k:, k:]
    else:
        idx_r, idx_o = rest.to(X.device), torch.nonzero(mask).reshape(-1).to(X.device)
        to_roots = X.index_select(1, idx_o).index_select(2, idx_r).amin(dim=1)
        RR = X.index_select(1, idx_r).index_select(2, idx_r)
    return prim_contracted(to_roots, RR)


def prim_contracted(to_roots, RR):
    """Prim's algorithm from a contracted root: the core of :func:`prim_edges`.

    Parameters
    ----------
    to_roots : torch.Tensor of shape (B, r)
        Distance of each of the ``r`` outside points to the root (the nearest root point).
    RR : torch.Tensor of shape (B, r, r)
        Symmetric distances between the outside points (the diagonal is never used).

    Returns
    -------
    torch.Tensor of shape (B, r)
        The attaching edge of each point, in the order they were added.
    """
    import torch

    B, r = to_roots.shape
    dev, dt = to_roots.device, to_roots.dtype
    best = to_roots.clone()  # distance of every outside point to the growing tree
    done = torch.zeros((B, r), dtype=torch.bool, device=dev)
    edges = torch.empty((B, r), dtype=dt, device=dev)
    inf = torch.tensor(float("inf"), dtype=dt, device=dev)
    rows = torch.arange(B, device=dev)
    for step in range(r):
        v = torch.where(done, inf, best).argmin(dim=1)  # (B,)
        edges[:, step] = best[rows, v]
        done[rows, v] = True
        torch.minimum(best, RR[rows, v], out=best)
    return edges


def h0_deaths(D: Any):
    """Finite H0 deaths of the Rips filtration of each matrix: sorted MST edge lengths.

    Parameters
    ----------
    D : ndarray or torch.Tensor of shape (B, n, n)
        Symmetric distance matrices with a zero diagonal (not checked: give valid ones, as
        :func:`attntopo.distances.token_distances` makes).

    Returns
    -------
    torch.Tensor of shape (B, n - 1)
        Ascending, on ``D``'s device; zero-length edges included (a diagram drops them, as the
        persistence engines do: points at distance 0 are born merged).
    """
    return prim_edges(D).sort(dim=1).values


def h0_diagrams(D: Any, threshold: float = float("inf"), engine: str = "mst"):
    """H0-only :class:`~attntopo.topology.Diagram` of each matrix, from :func:`h0_deaths`.

    The same diagrams as :func:`attntopo.topology.persistence` with ``maxdim=0`` (bars
    ``(0, death)`` for the positive deaths, deaths above ``threshold`` infinite, one bar
    ``(0, inf)``), computed on ``D``'s device; only the deaths come to the host.

    Returns
    -------
    list of Diagram
        One per matrix, in order.
    """
    from .diagram import Diagram

    deaths = h0_deaths(D).to("cpu", dtype=_float64()).numpy()
    out = []
    for d in deaths:
        d = d[d > 0]
        finite = d[d <= threshold]
        n_inf = 1 + (d.size - finite.size)
        bars = np.zeros((finite.size + n_inf, 2))
        bars[: finite.size, 1] = finite
        bars[finite.size:, 1] = np.inf
        out.append(Diagram._from_engine([bars], threshold, engine))
    return out


def _float64():
    import torch

    return torch.float64
