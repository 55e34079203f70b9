"""Independent reference computations shared by several test modules (SciPy, plain Python)."""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree


def mst_minimax(D: np.ndarray) -> np.ndarray:
    """(n, n): the largest edge on the minimum-spanning-tree path between every pair.

    The single-linkage merge height of each pair, from SciPy's MST and a plain tree walk,
    independent of attntopo's implementation.
    """
    n = len(D)
    T = minimum_spanning_tree(D).toarray()
    T = np.maximum(T, T.T)
    U = np.zeros((n, n))
    for s in range(n):
        stack, seen = [(s, 0.0)], {s}
        while stack:
            v, m = stack.pop()
            U[s, v] = m
            for w in np.flatnonzero(T[v] > 0):
                if w not in seen:
                    seen.add(w)
                    stack.append((w, max(m, T[v, w])))
    return U


def heads_notebook_matrix(W: np.ndarray, js=None) -> np.ndarray:
    """The founding paper's heads notebook on (L, H, n, n) weights: an (H, H) matrix.

    Its ``get_js_distance_matrix`` loops (for every layer, every pair of heads of that layer,
    the sum over tokens of ``jensenshannon`` of the two rows) followed by
    ``distances.sum(dim=0)``.  ``js`` is the row distance: default
    ``scipy.spatial.distance.jensenshannon`` (natural log), as the notebook calls it.
    """
    if js is None:
        from scipy.spatial.distance import jensenshannon as js
    L, H, n, _ = W.shape
    distances = np.zeros((L, H, H))
    for layer_idx in range(L):
        for head_i in range(H):
            for head_j in range(head_i, H):
                distance = sum(
                    js(W[layer_idx, head_i, t], W[layer_idx, head_j, t]) for t in range(n)
                )
                distances[layer_idx, head_i, head_j] = distance
                distances[layer_idx, head_j, head_i] = distance
    return distances.sum(0)
