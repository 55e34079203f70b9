"""H0 of many distance matrices at once: a batched Prim's minimum spanning tree in torch.

The finite H0 deaths of the Vietoris–Rips filtration of a finite metric space are the edge
lengths of a minimum spanning tree (every H0 bar is born at 0 and dies when its component
merges: Kruskal's algorithm run on the filtration).  Prim's algorithm grows one tree from a
root, adding the nearest outside point each step; run on ``B`` matrices in lockstep it is
``n`` steps of ``O(B n)`` tensor operations, so it runs where the matrices are (a CUDA
tensor stays on its GPU; only the ``(B, n - 1)`` edge lengths need to cross to the host) and
costs ``O(B n²)``, against the ``O(n³)`` of the distances themselves.

Single linkage is the same tree: its merges are the tree's edges sorted by length, joined with
union-find (:func:`single_linkage`, SciPy's linkage-matrix format, batched over matrices; the
sort runs on ``D``'s device, only the ``(B, n - 1)`` edges cross to the host).

Growing the tree from a set of roots instead of one point (the roots contracted to one
vertex) gives the minimum spanning forest that attaches every other point to the set: TOHA's
prompt-to-response score (:mod:`attntopo.features`) is that forest with the prompt as roots.

H1 and above are not trees: they stay with the persistence engines on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidInputError, InvalidMatrixError

__all__ = [
    "prim_edges",
    "prim_contracted",
    "h0_deaths",
    "h0_diagrams",
    "mst_edges",
    "single_linkage",
]


def _as_tensor(D: Any):
    import torch

    if isinstance(D, torch.Tensor):
        return D.detach()
    return torch.from_numpy(np.ascontiguousarray(D, dtype=np.float64))


def prim_edges(D: Any, *, roots: Any = None):
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

    X = _square_stack(D)
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


def prim_contracted(to_roots, RR, *, endpoints: bool = False):
    """Prim's algorithm from a contracted root: the core of :func:`prim_edges`.

    Parameters
    ----------
    to_roots : torch.Tensor of shape (B, r)
        Distance of each of the ``r`` outside points to the root (the nearest root point).
    RR : torch.Tensor of shape (B, r, r)
        Symmetric distances between the outside points (the diagonal is never used).
    endpoints : bool, default False
        Also return which point each step added and the tree point it was attached to.

    Returns
    -------
    torch.Tensor of shape (B, r)
        The attaching edge of each point, in the order they were added.  With ``endpoints``, a
        tuple ``(edges, added, attached)``: two int64 tensors of shape (B, r), the outside point
        (0 … r - 1) added at each step and the outside point it was attached to, ``-1`` for the
        root (the first point of the tree that reached it, among equal distances).
    """
    import torch

    B, r = to_roots.shape
    dev, dt = to_roots.device, to_roots.dtype
    best = to_roots.clone()  # distance of every outside point to the growing tree
    done = torch.zeros((B, r), dtype=torch.bool, device=dev)
    edges = torch.empty((B, r), dtype=dt, device=dev)
    inf = torch.tensor(float("inf"), dtype=dt, device=dev)
    rows = torch.arange(B, device=dev)
    if endpoints:
        near = torch.full((B, r), -1, dtype=torch.int64, device=dev)  # tree point nearest each
        added = torch.empty((B, r), dtype=torch.int64, device=dev)
        attached = torch.empty((B, r), dtype=torch.int64, device=dev)
    for step in range(r):
        v = torch.where(done, inf, best).argmin(dim=1)  # (B,)
        edges[:, step] = best[rows, v]
        done[rows, v] = True
        if not endpoints:
            torch.minimum(best, RR[rows, v], out=best)
            continue
        added[:, step] = v
        attached[:, step] = near[rows, v]
        row = RR[rows, v]
        closer = row < best
        near = torch.where(closer, v[:, None], near)
        torch.where(closer, row, best, out=best)
    return (edges, added, attached) if endpoints else edges


def _square_stack(D: Any):
    X = _as_tensor(D)
    if X.ndim != 3 or X.shape[-1] != X.shape[-2]:
        raise InvalidMatrixError(f"D must have shape (B, n, n), got {tuple(X.shape)}")
    return X


def mst_edges(D: Any):
    """The edges of a minimum spanning tree of each matrix, sorted by length, on its device.

    Parameters
    ----------
    D : ndarray or torch.Tensor of shape (B, n, n), n >= 1
        Symmetric distance matrices (not checked).  A tensor stays on its device and keeps its
        floating dtype; an array is used as float64 on the CPU.

    Returns
    -------
    (lengths, a, b) : three torch.Tensor of shape (B, n - 1)
        Edge ``t`` of matrix ``k`` joins points ``a[k, t]`` and ``b[k, t]`` (int64, 0-based) and
        has length ``lengths[k, t]`` (``D``'s dtype), ascending in ``t``; the sort is stable
        over Prim's order (the tree grown from point 0), on ``D``'s device.
    """
    X = _square_stack(D)
    B, n, _ = X.shape
    if n < 2 or B == 0:
        import torch

        empty = torch.zeros((B, max(n - 1, 0)), dtype=torch.int64, device=X.device)
        return torch.zeros((B, max(n - 1, 0)), dtype=X.dtype, device=X.device), empty, empty.clone()
    edges, added, attached = prim_contracted(X[:, 0, 1:], X[:, 1:, 1:], endpoints=True)
    lengths, order = edges.sort(dim=1, stable=True)
    return lengths, added.gather(1, order) + 1, attached.gather(1, order) + 1


def single_linkage(D: Any) -> np.ndarray:
    """Single-linkage hierarchies of many matrices at once, in SciPy's linkage-matrix format.

    The minimum spanning trees (:func:`mst_edges`: Prim's algorithm batched over the matrices
    and the sort by length, both on ``D``'s device: a CUDA tensor's work stays on its GPU) and
    then union-find on the host over the ``(B, n - 1)`` edges, batched over the matrices
    (union by size: ``O(B n log n)``).  The same hierarchy as
    ``scipy.cluster.hierarchy.linkage(squareform(D[k]), "single")`` (the same heights; among
    equal heights the merges may come in another order, with the same clusters at every cut
    and the same cophenetic matrix).

    Parameters
    ----------
    D : ndarray or torch.Tensor of shape (B, n, n), n >= 2
        Symmetric distance matrices with a zero diagonal (not checked: give valid ones, as
        :func:`attntopo.distances.token_distances` makes).

    Returns
    -------
    ndarray of shape (B, n - 1, 4), float64
        Row ``t`` of matrix ``k`` merges clusters ``Z[k, t, 0] < Z[k, t, 1]`` (points are
        ``0 … n - 1``, the cluster made at row ``t`` is ``n + t``) at height ``Z[k, t, 2]`` (a
        distance, ascending) into a cluster of ``Z[k, t, 3]`` points.

    Raises
    ------
    InvalidMatrixError
        ``D`` is not a stack of square matrices.
    InvalidInputError
        Fewer than 2 points.
    """
    X = _square_stack(D)
    n = int(X.shape[-1])
    if n < 2:
        raise InvalidInputError(f"a linkage needs at least 2 points, got {n}")
    lengths, a, b = mst_edges(X)
    h = lengths.to("cpu", dtype=_float64()).numpy()
    return _union_find_linkage(h, a.cpu().numpy(), b.cpu().numpy(), n)


def _union_find_linkage(h: np.ndarray, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """SciPy linkage matrices ``(B, n - 1, 4)`` of sorted tree edges ``(B, n - 1)``: union-find
    run on all ``B`` trees in lockstep (union by size keeps every tree of roots ≤ log₂ n deep)."""
    B = h.shape[0]
    rows = np.arange(B)
    parent = np.tile(np.arange(n), (B, 1))
    size = np.ones((B, n), dtype=np.int64)
    cluster = parent.copy()  # the cluster id of each root point
    Z = np.empty((B, n - 1, 4))
    Z[:, :, 2] = h

    def find(x: np.ndarray) -> np.ndarray:
        while True:
            p = parent[rows, x]
            if np.array_equal(p, x):
                return x
            x = p

    for t in range(n - 1):
        ra, rb = find(a[:, t]), find(b[:, t])
        ca, cb = cluster[rows, ra], cluster[rows, rb]
        sa, sb = size[rows, ra], size[rows, rb]
        Z[:, t, 0] = np.minimum(ca, cb)
        Z[:, t, 1] = np.maximum(ca, cb)
        Z[:, t, 3] = sa + sb
        big = np.where(sa >= sb, ra, rb)
        parent[rows, np.where(sa >= sb, rb, ra)] = big
        size[rows, big] = sa + sb
        cluster[rows, big] = n + t
    return Z


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


def h0_diagrams(D: Any, *, threshold: float = float("inf"), engine: str = "mst"):
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
        bars[finite.size :, 1] = np.inf
        out.append(Diagram._from_engine([bars], threshold, engine))
    return out


def _float64():
    import torch

    return torch.float64
