"""Grouping the attention rows of one head, and one representative row per group.

Methods (``labels`` of shape ``(n,)``, groups numbered by their first token):

``persistence``
    H0 clusters of the rows under the Jensen–Shannon distance (base 2): the connected components
    of the graph joining rows at distance ``<= ε`` (single linkage cut at ``ε``; their number is
    the number of H0 bars alive at ``ε``).  ``scale`` is a fixed ``ε`` in ``[0, 1]``, or
    ``"gap"``: per head, ``ε`` in the middle of the largest gap between consecutive finite H0
    deaths (the scale where the most persistent cluster structure opens; the stretch below the
    first death, where nothing is merged yet, does not count — see :func:`gap_scale`).
``random``
    A random partition into the same number ``k`` of non-empty groups.
``kmeans``
    k-means on the rows (Euclidean, scikit-learn, 4 starts), ``k`` groups.
``tome``
    ToMe-style bipartite soft matching (Bolya et al. 2023) on the head's key vectors: the groups
    alternate into sets A and B, every group of A is matched to the most cosine-similar group of
    B (mean keys), the ``r`` best matches are merged, and rounds repeat until ``k`` groups remain.

The baselines get the ``k`` of the persistence clusters of the same head, so each head is
compressed to the same number of distinct rows by every method.

Representatives: ``barycenter`` (the mean of the group's rows, a distribution) or ``medoid``
(the row with the smallest sum of JS distances to the others).  For causal heads a row may not
put weight on later tokens: row ``i``'s replacement is cut to keys ``<= i`` and renormalized
(if nothing is left, which only a medoid can cause, row ``i`` is kept).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_choice
from ..errors import InvalidInputError

__all__ = [
    "METHODS",
    "REPRESENTATIVES",
    "persistence_labels",
    "baseline_labels",
    "replace_rows",
    "canonical",
]

BASELINES = ("random", "kmeans", "tome")  # the groupings persistence is compared with
METHODS = ("persistence", *BASELINES)
REPRESENTATIVES = ("barycenter", "medoid")


def canonical(labels: np.ndarray) -> np.ndarray:
    """Relabel groups ``0, 1, …`` in order of their first token."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def gap_scale(D: np.ndarray) -> float:
    """``ε`` in the middle of the largest gap between consecutive finite H0 deaths of ``D``.

    ``D`` is an ``(n, n)`` distance matrix.  The finite H0 deaths are the ``n - 1`` edge lengths
    of a minimum spanning tree, sorted ``d_1 <= … <= d_{n-1}``; the largest difference
    ``d_{i+1} - d_i`` (the first one on ties) gives ``ε = (d_i + d_{i+1}) / 2``, where ``n - i``
    clusters live.  The stretch from 0 to ``d_1``, where every token is its own cluster, is not a
    gap between deaths and is never chosen: the gap scale always merges something, and leaves at
    least two clusters unless all deaths are equal (then ``ε`` is that death and everything
    merges: identical rows, for instance, lose nothing).  With fewer than two finite deaths
    (``n <= 2``) there is no gap and ``ε = 0`` (nothing merged).  The deaths are
    :func:`attntopo.topology.linkage`'s merge heights.
    """
    from ..topology import linkage

    n = D.shape[0]
    if n < 3:
        return 0.0
    deaths = linkage(D)[:, 2]  # the finite H0 deaths, sorted (single-linkage merge heights)
    gaps = np.diff(deaths)
    i = int(np.argmax(gaps))
    return float(0.5 * (deaths[i] + deaths[i + 1]))


def persistence_labels(D: np.ndarray, scale: Any) -> tuple[np.ndarray, float]:
    """H0 clusters of one head's rows at ``scale`` (a number, or ``"gap"``) and the ``ε`` used."""
    from ..topology import clusters_at

    eps = gap_scale(D) if scale == "gap" else float(scale)
    return canonical(np.asarray(clusters_at(D, eps))), eps


def _random_labels(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    order = rng.permutation(n)
    labels = np.empty(n, dtype=np.int64)
    labels[order[:k]] = np.arange(k)
    labels[order[k:]] = rng.integers(0, k, size=n - k)
    return labels


def kmeans_labels(
    P: np.ndarray, k: int, seed: int, *, n_init: int = 4, what: str = "method='kmeans'"
) -> np.ndarray:
    """k-means labels of the rows of ``P`` (n, m) into ``k`` groups (scikit-learn, seeded);
    ``k >= n`` gives every row its own group.  ``what`` names the caller in the error shown
    without scikit-learn."""
    try:
        from sklearn.cluster import KMeans
    except ImportError:
        from ..errors import MissingDependencyError

        raise MissingDependencyError(
            f"{what} needs scikit-learn: pip install scikit-learn"
        ) from None
    if k >= P.shape[0]:
        return np.arange(P.shape[0])
    # identical rows can leave k-means with fewer distinct centres than k: fine, fewer groups
    return KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(P).astype(np.int64)


def _tome_labels(K: np.ndarray, k: int) -> np.ndarray:
    n = K.shape[0]
    groups = [[i] for i in range(n)]
    while len(groups) > k:
        A, B = groups[0::2], groups[1::2]
        ka = np.stack([K[g].mean(0) for g in A])
        kb = np.stack([K[g].mean(0) for g in B])
        ka /= np.maximum(np.linalg.norm(ka, axis=1, keepdims=True), 1e-12)
        kb /= np.maximum(np.linalg.norm(kb, axis=1, keepdims=True), 1e-12)
        S = ka @ kb.T
        best = S.argmax(1)
        score = S[np.arange(len(A)), best]
        r = min(len(groups) - k, len(A))
        merge = np.argsort(-score, kind="stable")[:r]
        merged = set(int(a) for a in merge)
        for a in merge:
            B[int(best[a])] = B[int(best[a])] + A[int(a)]
        groups = [g for j, g in enumerate(A) if j not in merged] + B
    labels = np.empty(n, dtype=np.int64)
    for c, g in enumerate(groups):
        labels[g] = c
    return labels


def baseline_labels(
    method: str, k: int, *, P: np.ndarray, K: np.ndarray | None, rng: np.random.Generator, seed: int
) -> np.ndarray:
    """``k`` groups of one head's rows by ``method`` (``random``, ``kmeans`` or ``tome``)."""
    check_choice(method, "method", BASELINES, what="baseline method")
    n = P.shape[0]
    k = max(1, min(int(k), n))
    if method == "random":
        out = _random_labels(n, k, rng)
    elif method == "kmeans":
        out = kmeans_labels(P, k, seed)
    else:
        if K is None:
            raise InvalidInputError("method='tome' needs the head's key vectors")
        out = _tome_labels(K, k)
    return canonical(out)


def replace_rows(
    P: np.ndarray, labels: np.ndarray, D: np.ndarray, representative: str, causal: bool
) -> np.ndarray:
    """``P`` ``(n, n)`` with every group's rows replaced by the group's representative row."""
    check_choice(representative, "representative", REPRESENTATIVES)
    out = P.copy()
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        if idx.size < 2:
            continue
        if representative == "barycenter":
            rep = P[idx].mean(0)
        else:
            rep = P[idx[int(np.argmin(D[np.ix_(idx, idx)].sum(1)))]]
        for i in idx:
            row = rep.copy()
            if causal:
                row[i + 1 :] = 0.0
                s = row.sum()
                if s <= 0:
                    continue
                row /= s
            out[i] = row
    return out
