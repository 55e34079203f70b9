"""Classical (Torgerson) multidimensional scaling: one implementation for analyses and figures."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import check_positive_int
from .errors import InvalidInputError

__all__ = ["classical_mds"]


def classical_mds(D: Any, dim: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Classical (Torgerson) multidimensional scaling.

    ``B = -½ J D² J`` (``J`` the centring matrix); the embedding is the top ``dim``
    eigenvectors of ``B`` (numpy ``eigh``) scaled by the square roots of their eigenvalues
    (negative ones clipped to 0).  For a Euclidean distance matrix of points in
    ``R^dim`` the embedding reproduces the distances exactly (up to rotation).
    Deterministic: each axis is oriented so that its largest-magnitude coordinate is
    positive.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Symmetric distance matrix.
    dim : int, default 2

    Returns
    -------
    X : ndarray of shape (n, dim)
    eigenvalues : ndarray of shape (n,)
        All eigenvalues of ``B``, largest first; the share of the positive ones in the first
        ``dim`` says how much of the geometry the picture shows.
    """
    A = np.asarray(D, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise InvalidInputError(f"D must be a non-empty square matrix, got shape {A.shape}")
    dim = check_positive_int(dim, "dim", allow_none=False)
    n = A.shape[0]
    A = (A + A.T) / 2.0
    S = A * A
    B = -0.5 * (S - S.mean(0, keepdims=True) - S.mean(1, keepdims=True) + S.mean())
    vals, vecs = np.linalg.eigh((B + B.T) / 2.0)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    k = min(dim, n)
    X = np.zeros((n, dim))
    X[:, :k] = vecs[:, :k] * np.sqrt(np.clip(vals[:k], 0.0, None))
    for c in range(k):
        i = int(np.argmax(np.abs(X[:, c])))
        if X[i, c] < 0:
            X[:, c] = -X[:, c]
    return X, vals
