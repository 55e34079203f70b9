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
