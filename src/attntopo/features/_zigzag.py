"""The ``zigzag`` set: zigzag persistence of the attention graphs through the layers (HalluZig).

Samaga, Gonzalez Arroyo and Dey, *HalluZig: Hallucination Detection using Zigzag Persistence*
(EACL 2026) read each layer's attention, averaged over its heads, as a graph on the tokens and
follow how its components and cycles appear, vanish and come back from layer to layer.  Here,
for a text of ``n`` tokens (a (prompt, answer) pair joined, like every set but ``prompt`` and
``lookback``) and the chosen layers ``l = 0 … L−1`` (in the model's order) and heads:

1. **The layer's attention** ``Ā_l``: the mean over the chosen heads of their matrices (with
   ``drop_special=True``: over the real tokens, each head's rows renormalized first).
2. **Its graph** ``G_l``: vertices the tokens; the edge ``{i, j}`` (``i ≠ j``) weighs
   ``w_ij = max(Ā_l[i, j], Ā_l[j, i])`` (the attention either way; for a causal model the
   later token's attention on the earlier one), and ``G_l`` keeps the ``k = ⌈2 n⌉`` heaviest
   pairs (:data:`ZIGZAG_EDGES_PER_TOKEN` = 2 edges per token, a mean degree of 4; every pair of
   weight at least the ``k``-th largest, and never a pair of weight 0).  HalluZig keeps a top
   percentile of the weights instead; a share of the ``n(n−1)/2`` pairs grows as ``n²`` (a
   mean degree of 50 for 5 % of a 1,000-token text), a number per token keeps the graphs, the
   cost and the H1 counts linear in ``n``.
3. **The zigzag**: ``G_0 ⊆ G_0 ∪ G_1 ⊇ G_1 ⊆ G_1 ∪ G_2 ⊇ … ⊇ G_{L−1}`` (Carlsson and de
   Silva's union zigzag), as 1-dimensional complexes (vertices and edges: H0 counts
   components, H1 independent cycles).  Its complexes ``K_0 … K_{2L−2}`` are indexed by
   steps ``s`` (``K_{2l} = G_l``, ``K_{2l+1} = G_l ∪ G_{l+1}``); every token is in every
   complex.  dionysus 2 (:func:`dionysus.zigzag_homology_persistence`) computes the barcode:
   a bar ``[b, d)`` in steps is a class present in ``K_b … K_{d−1}``; a class still alive in
   the last graph ends at ``d = 2L − 1``.
4. **Features**, with times rescaled to ``[0, 1]`` (``b / (2L−1)``, ``d / (2L−1)``) so that
   models of any depth give the same columns: per dimension ``d`` ∈ {0, 1} the number of bars
   ``h{d}.n_bars``, their total length ``h{d}.total_persistence``, and the persistence image
   (persim, birth × persistence on ``[0, 1]²``, pixels of side :data:`ZIGZAG_PIXEL`, a Gaussian
   of s.d. :data:`ZIGZAG_SIGMA`, weight linear in persistence) ``h{d}.image_{i}_{j}``.

One set of columns per text, not per head: they are named ``L*H*.zigzag.{quantity}``
(:func:`attntopo.features.parse_column` gives layer and head None).  Cost per text: the head
means, ``O(H n²)`` per layer (the attention is read once), and the zigzag of ``L`` graphs of
``2n`` edges each (dionysus; about linear in the number of edges in practice).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import MissingDependencyError

__all__ = [
    "ZIGZAG_EDGES_PER_TOKEN",
    "ZIGZAG_PIXEL",
    "ZIGZAG_SIGMA",
    "zigzag_names",
    "layer_graph",
    "zigzag_times",
    "zigzag_diagrams",
    "zigzag_features",
]

#: Edges of each layer's graph per token (``⌈2 n⌉`` heaviest pairs).
ZIGZAG_EDGES_PER_TOKEN = 2.0
#: Persistence images on (birth, persistence) ∈ [0, 1]²: pixel side and Gaussian s.d.
ZIGZAG_PIXEL = 0.125
ZIGZAG_SIGMA = 0.05

_DIMS = (0, 1)


def _side() -> int:
    return int(round(1.0 / ZIGZAG_PIXEL))


def zigzag_names() -> list[str]:
    """Quantity names of the ``zigzag`` set, in column order."""
    k = _side()
    names = [f"h{d}.{q}" for d in _DIMS for q in ("n_bars", "total_persistence")]
    return names + [f"h{d}.image_{i}_{j}" for d in _DIMS for i in range(k) for j in range(k)]


def _dionysus():
    try:
        import dionysus
    except ImportError:
        raise MissingDependencyError(
            "the zigzag set needs dionysus 2: pip install 'attntopo[zigzag]'"
        ) from None
    return dionysus


def layer_graph(
    W: Any,
    *,
    keep: np.ndarray | None = None,
    edges_per_token: float = ZIGZAG_EDGES_PER_TOKEN,
    order: Sequence[int] | None = None,
) -> np.ndarray:
    """The edges of one layer's graph ``G_l`` (module docstring), shape (m, 2), int64, ``i < j``.

    Parameters
    ----------
    W : ndarray of shape (H, n, n) or (n, n)
        The layer's attention, the chosen heads (rows: queries).
    keep : ndarray of int, optional
        Token positions kept (ascending): each head's rows and columns restricted to them and
        renormalized (:func:`attntopo.attention.renormalized_subset`); vertices are then
        numbered ``0 … len(keep) − 1``.
    edges_per_token : float
        ``k = ⌈edges_per_token · n⌉`` heaviest pairs (at most all of them).
    order : sequence of int, optional
        The order in which the heads are summed (e.g. by head id, so that the same heads given
        in another order give the same float64 mean, bit for bit); ``0 … H−1`` by default.
    """
    W = np.asarray(W)
    if W.ndim == 2:
        W = W[None]
    H = W.shape[0]
    if keep is not None:
        from ..attention import renormalized_subset

        keep = np.asarray(keep, dtype=np.int64)
    m = W.shape[-1] if keep is None else keep.size
    mean = np.zeros((m, m))
    for h in range(H) if order is None else order:  # one head at a time
        mean += W[h] if keep is None else renormalized_subset(W[h : h + 1], keep)[0]
    mean /= H
    n = mean.shape[0]
    iu, ju = np.triu_indices(n, k=1)
    w = np.maximum(mean[iu, ju], mean[ju, iu])
    k = min(w.size, int(math.ceil(edges_per_token * n)))
    if k == 0:
        return np.zeros((0, 2), dtype=np.int64)
    cut = np.partition(w, w.size - k)[w.size - k]
    pick = (w >= cut) & (w > 0)
    return np.stack([iu[pick], ju[pick]], axis=1).astype(np.int64)


def zigzag_times(graphs: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, list[list[float]]]:
    """The union zigzag of ``graphs`` as dionysus takes it: the edges of their union, shape
    (E, 2), and per edge its times (steps where it enters, at even positions, and leaves, at
    odd ones).  Vertices (not listed) are there from step 0 to the end."""
    L = len(graphs)
    keys = [
        np.unique(np.asarray(g, dtype=np.int64).reshape(-1, 2) @ np.array([n, 1])) for g in graphs
    ]
    union = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
    present = np.zeros((union.size, L), dtype=bool)
    for layer, k in enumerate(keys):
        present[np.searchsorted(union, k), layer] = True
    # presence in K_0 … K_{2L−2}: K_{2l} = G_l, K_{2l+1} = G_l ∪ G_{l+1}
    K = np.zeros((union.size, 2 * L - 1), dtype=bool)
    K[:, 0::2] = present
    K[:, 1::2] = present[:, :-1] | present[:, 1:]
    edge = np.zeros((union.size, K.shape[1] + 2), dtype=np.int8)
    edge[:, 1:-1] = K
    change = np.diff(edge, axis=1)  # +1: enters at that step, −1: leaves at that step
    rows, steps = np.nonzero(change)
    times: list[list[float]] = [[] for _ in range(union.size)]
    last = K.shape[1]
    for r, s in zip(rows.tolist(), steps.tolist()):
        if s < last:  # leaving after the last complex is no event
            times[r].append(float(s))
    edges = np.stack([union // n, union % n], axis=1)
    return edges, times


def zigzag_diagrams(graphs: Sequence[np.ndarray], n: int) -> list[np.ndarray]:
    """The zigzag barcode of the graphs' union zigzag: ``[H0, H1]``, each of shape (k, 2),
    (birth, death) in steps (module docstring; still alive at the end: ``2L − 1``), sorted.

    Parameters
    ----------
    graphs : sequence of ndarray of shape (m_l, 2), int
        The edges of ``G_0 … G_{L−1}`` (:func:`layer_graph`), vertices ``0 … n − 1``.
    n : int
        Number of vertices (tokens).
    """
    d = _dionysus()
    L = len(graphs)
    if L == 0 or n == 0:
        return [np.zeros((0, 2)) for _ in _DIMS]
    edges, times = zigzag_times(graphs, n)
    simplices = [[v] for v in range(n)] + [[int(a), int(b)] for a, b in edges]
    f = d.Filtration(simplices)
    # dionysus sorts the filtration; the times must follow its order
    pos = {tuple(s): k for k, s in enumerate(simplices)}
    all_times = [[0.0]] * n + times
    ordered = [all_times[pos[tuple(int(v) for v in s)]] for s in f]
    _, dgms, _ = d.zigzag_homology_persistence(f, ordered)
    end = float(2 * L - 1)
    out = []
    for dim in _DIMS:
        pts = [(p.birth, p.death) for p in dgms[dim]] if dim < len(dgms) else []
        arr = np.array(pts, dtype=np.float64).reshape(-1, 2)
        arr[np.isinf(arr[:, 1]), 1] = end
        out.append(arr[np.lexsort((arr[:, 1], arr[:, 0]))])
    return out


def zigzag_features(graphs: Sequence[np.ndarray], n: int) -> np.ndarray:
    """The ``zigzag`` set of one text, shape (len(:func:`zigzag_names`),)."""
    from ._js import _persim

    _persim()
    from persim import PersistenceImager

    L = len(graphs)
    dgms = zigzag_diagrams(graphs, n)
    scale = float(2 * L - 1) if L else 1.0
    imager = PersistenceImager(
        birth_range=(0.0, 1.0),
        pers_range=(0.0, 1.0),
        pixel_size=ZIGZAG_PIXEL,
        kernel_params={"sigma": [[ZIGZAG_SIGMA**2, 0.0], [0.0, ZIGZAG_SIGMA**2]]},
    )
    k = _side()
    stats, images = [], []
    for dim in _DIMS:
        pts = dgms[dim] / scale
        stats += [float(pts.shape[0]), float(np.sum(pts[:, 1] - pts[:, 0]))]
        img = (
            np.asarray(imager.transform(pts, skew=True)).ravel()
            if pts.shape[0]
            else np.zeros(k * k)
        )
        images.append(img)
    return np.concatenate([np.array(stats)] + images)
