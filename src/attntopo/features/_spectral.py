"""The ``spectral`` set: LapEigvals, the top-k eigenvalues of each head's attention Laplacian.

Binkowski et al., *Hallucination Detection in LLMs Using Spectral Features of Attention Maps*
(EMNLP 2025) read a head's attention matrix ``A`` (n × n, rows sum to 1) as the adjacency
matrix of a directed graph and take the Laplacian

    L = D − A,        D = diag(d_ii),   d_ii = Σ_u a_ui / c_i

where ``Σ_u a_ui`` is token i's in-degree (the attention it receives, a column sum) and ``c_i``
the number of tokens that can attend to it: ``n − i`` (0-based i) for a causal model, whose
row u sees keys 0..u, and ``n`` for a bidirectional one.  The features are the ``k`` largest
eigenvalues of ``L``.

For a causal model ``A`` is lower triangular, so ``L`` is too and its eigenvalues are its
diagonal entries ``λ_i = d_ii − a_ii`` (the paper's shortcut): real, and O(n²) per head.  For a
bidirectional model ``L`` is a full non-symmetric matrix: its eigenvalues come from
:func:`numpy.linalg.eigvals` (O(n³) per head) and may be complex; the set keeps the ``k`` of
largest real part and reports their real parts.  Fewer than ``k`` tokens: the rest are 0.

(The authors' code also joins consecutive layers by "vertical" edges through the next layer's
diagonal; the single-head Laplacian here is the formula of the paper's Section 3.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["SPECTRAL_K", "spectral_names", "spectral_features", "attention_laplacian"]

#: Eigenvalues kept per head.
SPECTRAL_K = 10


def spectral_names(k: int = SPECTRAL_K) -> list[str]:
    """Quantity names of the ``spectral`` set: ``eig_1`` (largest) … ``eig_k``."""
    return [f"eig_{j}" for j in range(1, k + 1)]


def attention_laplacian(A: np.ndarray, causal: bool) -> np.ndarray:
    """``L = D − A`` of a stack of attention matrices, ndarray of shape (B, n, n), float64.

    Parameters
    ----------
    A : ndarray of shape (B, n, n) or (n, n)
        Attention matrices (rows: queries, summing to 1).
    causal : bool
        Whether token i can be attended by the n − i tokens from i on (causal) or by all n.
    """
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[-1]
    counts = (n - np.arange(n)) if causal else np.full(n, n)
    d = A.sum(axis=-2) / counts  # in-degree (column sums), normalized
    L = -A.copy()
    idx = np.arange(n)
    L[..., idx, idx] += d
    return L


def spectral_features(A: np.ndarray, causal: bool, *, k: int = SPECTRAL_K) -> np.ndarray:
    """The ``spectral`` set of a stack of attention matrices, shape (B, k), largest first.

    Causal: the diagonal of ``L`` (its eigenvalues), sorted.  Bidirectional: the real parts of
    the ``k`` eigenvalues of largest real part (:func:`numpy.linalg.eigvals`).
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim == 2:
        A = A[None]
    B, n, _ = A.shape
    out = np.zeros((B, k))
    if n == 0:
        return out
    L = attention_laplacian(A, causal)
    if causal:
        lam = np.diagonal(L, axis1=-2, axis2=-1)
    else:
        lam = np.linalg.eigvals(L).real
    top = -np.sort(-lam, axis=-1)[:, :k]
    out[:, : top.shape[1]] = top
    return out
