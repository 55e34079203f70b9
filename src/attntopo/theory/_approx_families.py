"""The families of efficient attention, as approximations of one attention matrix (arrays only).

Every function takes a head's attention ``A`` (``(n, n)`` or a stack ``(..., n, n)``, rows
summing to 1) and returns the best approximation ``Â`` its family offers at the given size,
in float64.  :mod:`._approx` runs them on every head at matched budgets.

``band_sparse(A, w, columns, corrections)``
    Support = the band ``|i − j| <= w`` (head types' band fit) ∪ the ``columns`` key columns
    with the most mass outside the band (head types' vertical fit applied to what the band
    leaves) ∪ the ``corrections`` largest remaining entries of each row.  On a fixed support
    the Frobenius-optimal approximation keeps ``A``'s entries there, which this does.
``top_k(A, k)``
    The ``k`` largest entries of each row: the Frobenius optimum over all matrices with ``k``
    non-zeros per row.
``low_rank(A, r)``
    Truncated SVD: the Frobenius optimum over rank ``r`` (Eckart–Young), with
    ``‖A − Â‖_F² = Σ_{i>r} σ_i²``.
``performer(Q, K, scaling, omega, causal)``
    FAVOR+ (Choromanski et al. 2021): positive random features
    ``φ(x) = exp(ωᵀx − ‖x‖²/2) / √m`` of the head's own queries and keys (scaled by
    ``√scaling`` so that ``φ(q)·φ(k)`` estimates ``exp(scaling · q·k)`` without bias), then
    ``Â = D⁻¹ (φ(Q) φ(K)ᵀ ⊙ mask)``.  ``omega`` from :func:`random_features`: iid Gaussian rows or
    orthogonal blocks (Performer's default, rows rescaled to chi(d) norms so each row is still
    marginally Gaussian).
``clustered(A, labels, causal)``
    Queries grouped into clusters that share one row, the mean of the cluster's rows (the
    Frobenius optimum for a given grouping), through :func:`attntopo.compress.replace_rows`.

Errors: :func:`relative_error` (``‖A − Â‖_F / ‖A‖_F``) and :func:`js_error` (mean over rows of
the Jensen–Shannon distance, base 2, between ``A``'s row and ``Â``'s row with negative entries
clipped to 0, causal future entries set to 0, and renormalized to sum 1; a row left without
mass counts as distance 1, the largest there is).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int
from ..errors import InvalidInputError, OutOfRangeError

__all__ = [
    "FAMILIES",
    "family_sizes",
    "band_mask",
    "band_entries",
    "band_sparse",
    "band_sparse_search",
    "top_k",
    "low_rank",
    "random_features",
    "positive_features",
    "kernel_estimate",
    "performer",
    "clustered",
    "relative_error",
    "js_error",
    "js_error_support",
]

_LN2 = float(np.log(2.0))

#: The families, in the order of every table (ties go to the first).
FAMILIES = ("band_sparse", "top_k", "low_rank", "kernel", "cluster_kmeans", "cluster_h0")


def _square(A: Any, name: str = "A") -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.shape[-1] < 1:
        raise InvalidInputError(
            f"{name} must be a square matrix or a stack of them (..., n, n), got shape {A.shape}"
        )
    if not np.all(np.isfinite(A)):
        raise InvalidInputError(f"{name} holds NaN or inf")
    return A


def _size(value: Any, name: str, n: int, lo: int = 1) -> int:
    """An int in ``lo..n``; above ``n`` (a budget larger than the matrix) is an OutOfRangeError."""
    v = check_int(value, name, lo=lo)
    if v > n:
        raise OutOfRangeError(f"{name} must be at most n = {n} (the number of tokens), got {v}")
    return v


# ------------------------------------------------------------------------- budgets
def band_entries(w: int, causal: bool) -> int:
    """Entries of an interior row inside the band ``|i − j| <= w``:
    ``2w + 1`` (causal ``w + 1``)."""
    return int(w) + 1 if causal else 2 * int(w) + 1


def family_sizes(budget: int, n: int) -> dict[str, int]:
    """The size of each family at a budget of ``budget`` numbers stored per query row.

    A sparse entry is a value and a column index (2 numbers); a rank-``r`` factorization
    stores one row of ``U`` and one of ``V`` per token (``2r``); ``m`` random features store
    ``φ(q_i)`` and ``φ(k_i)`` (``2m``); ``k`` clusters store ``k`` rows of ``n`` values (``k``
    per row on average) and one label per row (``k + 1``).  Band entries have implicit
    positions (1 number each), as do global columns (1 per row; their ``c`` indices are shared).

    Returns ``{"top_k": k, "low_rank": r, "kernel": m, "clusters": k}`` (``band_sparse``
    splits the budget itself: :func:`band_sparse_search`).
    """
    p = _size(budget, "budget", n, lo=2)
    return {"top_k": p // 2, "low_rank": p // 2, "kernel": p // 2, "clusters": min(p - 1, n)}


# ----------------------------------------------------------------------- band + sparse
def band_mask(n: int, w: int, causal: bool = False) -> np.ndarray:
    """Boolean ``(n, n)``: ``|i − j| <= w`` (and ``j <= i`` when causal)."""
    i = np.arange(n)
    m = np.abs(i[:, None] - i[None, :]) <= w
    return m & (i[None, :] <= i[:, None]) if causal else m


def _heavy_columns(Aoff: np.ndarray, c: int) -> np.ndarray:
    """Indices ``(..., c)`` of the columns with the largest mean mass (head types' vertical fit)."""
    col = Aoff.mean(-2)
    return np.argsort(-col, axis=-1, kind="stable")[..., :c]


def band_sparse(
    A: Any, w: int, columns: int = 0, corrections: int = 0, *, causal: bool = False
) -> np.ndarray:
    """Band of half-width ``w`` ∪ ``columns`` global columns ∪ ``corrections`` entries per row.

    Parameters
    ----------
    A : array_like of shape (..., n, n)
    w : int in 0..n
        Half-width of the band ``|i − j| <= w`` (``w >= n − 1`` keeps every entry).
    columns : int in 0..n
        Key columns kept whole: those with the most mean mass outside the band.
    corrections : int in 0..n
        Largest entries of each row kept among what the band and columns leave.
    causal : bool
        Entries above the diagonal are not part of the band (they are 0 in causal attention).

    Returns
    -------
    ndarray of shape (..., n, n), float64
        ``A`` on the support, 0 elsewhere (the Frobenius optimum on that support).
    """
    A = _square(A)
    n = A.shape[-1]
    w = _size(w, "w", n, lo=0)
    c = _size(columns, "columns", n, lo=0)
    s = _size(corrections, "corrections", n, lo=0)
    keep = np.broadcast_to(band_mask(n, w, causal), A.shape).copy()
    if c:
        cols = _heavy_columns(np.where(keep, 0.0, np.abs(A)), c)
        np.put_along_axis(
            keep, np.broadcast_to(cols[..., None, :], A.shape[:-1] + (c,)), True, axis=-1
        )
    if s:
        rest = np.where(keep, -np.inf, np.abs(A))
        idx = np.argpartition(-rest, s - 1, axis=-1)[..., :s]
        np.put_along_axis(keep, idx, True, axis=-1)
    return np.where(keep, A, 0.0)


def _grid(limit: int) -> list[int]:
    """0 and the powers of two up to ``limit``."""
    out, v = [0], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def band_sparse_search(
    A: Any, budgets: Any, *, causal: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The best band + columns + corrections split of each budget (numbers per row).

    For every budget ``p`` it tries band half-widths ``w >= 0`` and global column counts ``c``
    on the grid 0, 1, 2, 4, 8, … with ``band_entries(w) + c <= p``, and spends what is
    left on ``s = (p − band_entries(w) − c) // 2`` corrections per row (2 numbers each).

    Parameters
    ----------
    A : array_like of shape (..., n, n)
    budgets : sequence of int, each in 2..n

    Returns
    -------
    err2 : ndarray of shape (len(budgets), ...)
        Squared Frobenius error of the best split.
    params : ndarray of shape (len(budgets), ..., 3), int
        Its ``(w, c, s)``.
    """
    A = _square(A)
    n = A.shape[-1]
    bs = [_size(b, "budget", n, lo=1) for b in budgets]
    lead = A.shape[:-2]
    best = np.full((len(bs),) + lead, np.inf)
    params = np.zeros((len(bs),) + lead + (3,), dtype=np.int64)
    pmax = max(bs)
    sq = A * A
    for w in _grid(n):
        bw = band_entries(w, causal)
        if bw > pmax:
            break
        band = band_mask(n, w, causal)
        off = np.where(band, 0.0, np.abs(A))
        order = np.argsort(-off.mean(-2), axis=-1, kind="stable")
        R0 = np.where(band, 0.0, sq)
        for c in _grid(min(pmax - bw, n)):
            R = R0
            if c:
                cols = order[..., :c]
                mask = np.zeros(lead + (n,), dtype=bool)
                np.put_along_axis(mask, cols, True, axis=-1)
                R = np.where(mask[..., None, :], 0.0, R)
            rest = R.sum((-2, -1))
            smax = min(max((p - bw - c) // 2 for p in bs), n)
            if smax > 0:
                top = -np.partition(-R, smax - 1, axis=-1)[..., :smax]
                top = -np.sort(-top, axis=-1)
                gain = np.concatenate(
                    [np.zeros(lead + (1,)), np.cumsum(top.sum(-2), axis=-1)], axis=-1
                )
            for j, p in enumerate(bs):
                if bw + c > p:
                    continue
                s = min((p - bw - c) // 2, n)
                e = np.maximum(rest - (gain[..., s] if s else 0.0), 0.0)
                # ties keep the narrower band / fewer columns found first
                better = e < best[j] - 1e-12 * np.where(np.isfinite(best[j]), best[j], 0.0)
                best[j] = np.where(better, e, best[j])
                params[j] = np.where(better[..., None], np.array([w, c, s]), params[j])
    return best, params


# ----------------------------------------------------------------------------- sparse
def top_k(A: Any, k: int) -> np.ndarray:
    """The ``k`` largest entries (in absolute value) of every row,
    the rest 0 (ties broken arbitrarily).

    The Frobenius optimum among matrices with at most ``k`` non-zeros per row.  ``k = n``
    returns ``A``; ``k > n`` raises :class:`~attntopo.errors.OutOfRangeError`.
    """
    A = _square(A)
    n = A.shape[-1]
    k = _size(k, "k", n)
    if k == n:
        return A.copy()
    idx = np.argpartition(-np.abs(A), k - 1, axis=-1)[..., :k]
    out = np.zeros_like(A)
    np.put_along_axis(out, idx, np.take_along_axis(A, idx, axis=-1), axis=-1)
    return out


def low_rank(A: Any, r: int, *, svd: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Truncated SVD of rank ``r`` and the singular values.

    Returns
    -------
    approx : ndarray of shape (..., n, n)
        ``U_r Σ_r V_rᵀ``; ``‖A − approx‖_F² = Σ_{i>r} σ_i²`` (Eckart–Young).
    sigma : ndarray of shape (..., n)
        All singular values, descending.
    """
    A = _square(A)
    n = A.shape[-1]
    r = _size(r, "r", n)
    U, s, Vt = np.linalg.svd(A) if svd is None else svd
    return (U[..., :, :r] * s[..., None, :r]) @ Vt[..., :r, :], s


# ----------------------------------------------------------------------------- kernel
def random_features(
    m: int, d: int, rng: np.random.Generator, *, orthogonal: bool = True
) -> np.ndarray:
    """``m`` random directions ``ω`` in ``R^d``, each marginally ``N(0, I_d)``.

    ``orthogonal=True`` (FAVOR+'s default): blocks of up to ``d`` exactly orthogonal rows (QR of
    a Gaussian matrix, signs fixed so the block is Haar-distributed), each row rescaled to the
    norm of an independent Gaussian vector (chi with ``d`` degrees of freedom); ``False``: iid
    Gaussian rows.

    Returns
    -------
    ndarray of shape (m, d), float64
    """
    m = check_int(m, "m", lo=1)
    d = check_int(d, "d", lo=1)
    if not orthogonal:
        return rng.standard_normal((m, d))
    nb = -(-m // d)
    G = rng.standard_normal((nb, d, d))
    Qm, R = np.linalg.qr(G)
    Qm = Qm * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[:, None, :]
    rows = np.swapaxes(Qm, -1, -2).reshape(nb * d, d)[:m]  # block b: rows = columns of its Q
    norms = np.linalg.norm(rng.standard_normal((m, d)), axis=1)
    return rows * norms[:, None]


def _log_features(X: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """``log φ(X) + ½ log m``: ``X ωᵀ − ‖X‖²/2``, shape (..., n, m)."""
    return X @ np.swapaxes(omega, -1, -2) - 0.5 * (X * X).sum(-1, keepdims=True)


def positive_features(X: Any, omega: Any) -> np.ndarray:
    """FAVOR+ positive features ``φ(x) = exp(ωᵀx − ‖x‖²/2) / √m``
    of each row of ``X`` (…, n, d) → (…, n, m)."""
    X = np.asarray(X, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    return np.exp(_log_features(X, omega)) / np.sqrt(omega.shape[-2])


def kernel_estimate(q: Any, k: Any, omega: Any) -> float:
    """``φ(q)·φ(k)``: an unbiased estimate of ``exp(q·k)`` (``E_ω[φ(q)·φ(k)] = exp(q·k)``)."""
    return float(positive_features(q, omega) @ positive_features(k, omega))


def performer(Q: Any, K: Any, scaling: float, omega: Any, *, causal: bool = False) -> np.ndarray:
    """FAVOR+ attention ``D⁻¹ (φ(Q') φ(K')ᵀ ⊙ mask)`` with ``Q' = √scaling Q``, ``K' = √scaling K``.

    Parameters
    ----------
    Q, K : array_like of shape (..., n, d)
    scaling : float > 0
        The model's logit factor (``d ** -0.5``).
    omega : array_like of shape (..., m, d)
        From :func:`random_features` (a leading axis draws several sets at once).
    causal : bool

    Returns
    -------
    ndarray of shape (..., n, n), float64
        Rows sum to 1.  Per-row constants are factored out of the query features and one
        global constant out of the key features before exponentiating (they cancel in the row
        normalization), so nothing overflows.
    """
    if not scaling > 0:
        raise InvalidInputError(f"scaling must be a positive number, got {scaling!r}")
    root = np.sqrt(float(scaling))
    Q = np.asarray(Q, dtype=np.float64) * root
    K = np.asarray(K, dtype=np.float64) * root
    omega = np.asarray(omega, dtype=np.float64)
    lq = _log_features(Q, omega)
    lk = _log_features(K, omega)
    lq = lq - lq.max(-1, keepdims=True)
    lk = lk - lk.max((-2, -1), keepdims=True)
    M = np.exp(lq) @ np.swapaxes(np.exp(lk), -1, -2)
    if causal:
        M = np.tril(M)
    s = M.sum(-1, keepdims=True)
    bad = ~(s > 0) | ~np.isfinite(s)
    if np.any(bad):  # every feature of a row underflowed: redo in log space (rare, exact)
        from scipy.special import logsumexp

        L = logsumexp(lq[..., :, None, :] + lk[..., None, :, :], axis=-1)
        if causal:
            n = L.shape[-1]
            L = np.where(np.tril(np.ones((n, n), dtype=bool)), L, -np.inf)
        return np.exp(L - logsumexp(L, axis=-1, keepdims=True))
    return M / s


# --------------------------------------------------------------------------- clusters
def clustered(A: Any, labels: Any, *, causal: bool = False) -> np.ndarray:
    """Every cluster's rows replaced by their mean (:func:`attntopo.compress.replace_rows`).

    The mean is the Frobenius optimum for a given grouping; causal rows are cut to their
    own keys and renormalized (a row may not see later tokens).
    """
    from ..compress import replace_rows

    A = _square(A)
    if A.ndim != 2:
        raise InvalidInputError(f"clustered takes one (n, n) matrix, got shape {A.shape}")
    labels = np.asarray(labels)
    if labels.shape != (A.shape[0],):
        raise InvalidInputError(f"labels must have shape ({A.shape[0]},), got {labels.shape}")
    return replace_rows(A, labels, None, "barycenter", bool(causal))  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- errors
def relative_error(A: Any, approx: Any) -> np.ndarray:
    """``‖A − Â‖_F / ‖A‖_F`` over the last two axes."""
    A = np.asarray(A, dtype=np.float64)
    approx = np.asarray(approx, dtype=np.float64)
    return np.sqrt(((A - approx) ** 2).sum((-2, -1)) / (A * A).sum((-2, -1)))


def js_error(A: Any, approx: Any, *, causal: bool = False, normalized: bool = False) -> np.ndarray:
    """Mean over rows of the JS distance (base 2)
    between ``A``'s rows and ``Â``'s renormalized rows.

    ``A``'s rows are divided by their sums (float32 weights sum to 1 only within ~1e-7).

    ``Â``'s negative entries are clipped to 0 and (causal) its entries above the diagonal set to
    0 before each row is divided by its sum; a row with no positive mass left counts as the
    largest distance, 1.  Computed as ``H(m) − ½ H(p) − ½ H(q)`` (entropies in nats,
    ``m = (p + q)/2``), one logarithm per entry; the divergence is accurate to about 1e-15
    absolute, so distances below about 1e-7 are not resolved.  ``normalized=True`` says ``Â``'s
    rows already are distributions of the right support (the kernel family's): no clipping.
    """
    from scipy.special import entr

    A = np.asarray(A, dtype=np.float64)
    A = A / A.sum(-1, keepdims=True)
    P = np.asarray(approx, dtype=np.float64)
    empty = None
    if not normalized:
        P = np.clip(P, 0.0, None)
        if causal:
            P = np.tril(P)
        s = P.sum(-1, keepdims=True)
        empty = s[..., 0] <= 0
        P = np.where(s > 0, P / np.where(s > 0, s, 1.0), 0.0)
    div = entr(0.5 * (A + P)).sum(-1) - 0.5 * entr(A).sum(-1) - 0.5 * entr(P).sum(-1)
    d = np.sqrt(np.clip(div / _LN2, 0.0, 1.0))
    return (d if empty is None else np.where(empty, 1.0, d)).mean(-1)


def js_error_support(kept: Any, total: Any = 1.0) -> np.ndarray:
    """:func:`js_error` of an approximation that keeps ``A``'s entries on a support, from the
    mass each row keeps there (``kept`` of shape (..., n)) and its whole mass (``total``, the
    row sums of ``A``); mean over rows.

    The renormalized row is ``p / s`` on the support and 0 elsewhere (``s = kept / total``), so
    the divergence depends on ``s`` alone: ``JS = ½ [s ln(2s / (1 + s)) + (1 − s) ln 2 +
    ln(2 / (1 + s))]`` (0 at ``s = 1``, ``ln 2`` — distance 1 — at ``s = 0``), evaluated with
    ``log1p`` in ``e = 1 − s`` so that rows kept whole give exactly 0.
    """
    s = np.clip(np.asarray(kept, dtype=np.float64) / np.asarray(total, dtype=np.float64), 0.0, 1.0)
    e = 1.0 - s
    div = 0.5 * (s * np.log1p(-e / (2.0 - e)) + e * _LN2 - np.log1p(-e / 2.0))
    return np.sqrt(np.clip(div / _LN2, 0.0, 1.0)).mean(-1)
