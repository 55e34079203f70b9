"""The arithmetic of :func:`attntopo.theory.context`, on plain arrays (no model).

Every function here takes NumPy arrays and returns numbers; :mod:`._context` runs the model and
feeds them.  The formulas:

* **equivariance error** of a map ``f`` on a permutation ``π`` (rows of ``X`` reordered,
  ``(XP)[i] = X[π(i)]``): ``‖f(XP) − f(X)P‖_F / ‖f(X)‖_F`` (:func:`equivariance_error`);
* **contextual-mapping margins** (Yun et al., *Are Transformers universal approximators of
  sequence-to-sequence functions?*, ICLR 2020, Definition 3.1): a map is contextual when the
  token outputs of one input are all distinct and outputs of two inputs that are not
  permutations of each other share no value.  The margins measure by how much:
  ``min_{i<j} ‖h_i − h_j‖`` within an input (:func:`within_margin`) and
  ``min_{i,j} ‖h_i(X) − h_j(X′)‖`` across inputs (:func:`cross_margin`), Euclidean;
* **Ethayarajh's measures** (*How contextual are contextualized word representations?*, EMNLP
  2019): self-similarity of a word (mean cosine between its representations in different
  contexts, :func:`self_similarity`), intra-sentence similarity (mean cosine between each token
  and the mean of its text, :func:`intra_similarity`) and the anisotropy baseline (mean cosine of
  two tokens drawn uniformly from two different texts: computed exactly over all such pairs, not
  sampled, :func:`anisotropy`);
* **a word's attention across contexts**: rows of different texts live on different key sets;
  :func:`relative_support` and :func:`vocabulary_support` put them on a common one;
  :func:`h0_total_persistence` is the sum of the minimum spanning tree's edges (= the H0 deaths of
  the Vietoris–Rips filtration).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import InvalidInputError

__all__ = [
    "equivariance_error",
    "content_permutation",
    "min_distance",
    "within_margin",
    "cross_margin",
    "is_permutation",
    "prefix_keys",
    "cosine_matrix",
    "self_similarity",
    "intra_similarity",
    "anisotropy",
    "relative_support",
    "vocabulary_support",
    "entropy_bits",
    "h0_total_persistence",
    "pair_mean",
]

_EPS64 = np.finfo(np.float64).eps


# -------------------------------------------------------------------- equivariance
def equivariance_error(f_x: np.ndarray, f_xp: np.ndarray, perm: np.ndarray, axis: int = 0) -> float:
    """``‖f(XP) − f(X)P‖_F / ‖f(X)‖_F`` for token axis ``axis`` (0 when ``f(X)`` is all zero).

    Parameters
    ----------
    f_x, f_xp : ndarray of shape (..., n, d)
        The map's output on the input and on the permuted input.
    perm : ndarray of shape (n,), int
        ``(XP)[i] = X[perm[i]]``.
    axis : int
        The token axis of ``f_x`` and ``f_xp``.
    """
    a = np.asarray(f_x, dtype=np.float64)
    b = np.asarray(f_xp, dtype=np.float64)
    if a.shape != b.shape:
        raise InvalidInputError(f"f(X) and f(XP) must have one shape, got {a.shape} and {b.shape}")
    ref = np.linalg.norm(a)
    if ref == 0:
        return 0.0
    return float(np.linalg.norm(b - np.take(a, np.asarray(perm), axis=axis)) / ref)


def content_permutation(special: Sequence[bool], rng: np.random.Generator) -> np.ndarray:
    """A random permutation of the non-special positions that moves at least one of them;
    special tokens ([CLS], [SEP], <s>) keep their places.

    Returns
    -------
    ndarray of shape (n,), int64
        ``perm`` with ``perm[i] == i`` at special positions.

    Raises
    ------
    InvalidInputError
        Fewer than 2 content tokens (nothing to permute).
    """
    special = np.asarray(special, dtype=bool)
    content = np.flatnonzero(~special)
    if content.size < 2:
        raise InvalidInputError(
            f"a text needs at least 2 non-special tokens to be permuted, got {content.size}"
        )
    perm = np.arange(special.size, dtype=np.int64)
    while True:
        shuffled = content[rng.permutation(content.size)]
        if np.any(shuffled != content):
            perm[content] = shuffled
            return perm


# ------------------------------------------------------------------------- margins
def _squared(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, float]:
    """Squared Euclidean distances by the Gram identity, and a bound on their float64 error."""
    na = np.einsum("ij,ij->i", A, A)
    nb = np.einsum("ij,ij->i", B, B)
    D2 = na[:, None] + nb[None, :] - 2.0 * (A @ B.T)
    # |fl(a·b) − a·b| <= γ_d ‖a‖‖b‖ (Higham §3.1), three such terms, plus the two additions
    m = max(float(na.max(initial=0.0)), float(nb.max(initial=0.0)))
    slack = 8.0 * (A.shape[1] + 2) * _EPS64 * m
    return D2, slack


def min_distance(
    A: np.ndarray, B: np.ndarray | None = None, mask: np.ndarray | None = None
) -> tuple[float, int, int, float, int]:
    """Smallest Euclidean distance between a row of ``A`` and a row of ``B``.

    Distances come from the Gram identity in float64 (on centred rows); every pair within that
    identity's rounding bound of the smallest is recomputed from the difference vector, so the
    minimum is exact to float64 even for (nearly) equal rows.

    Parameters
    ----------
    A : ndarray of shape (m, d)
    B : ndarray of shape (k, d), optional
        ``None``: pairs ``i < j`` of distinct rows of ``A``.
    mask : ndarray of shape (m, k), bool, optional
        Pairs to consider (all by default).

    Returns
    -------
    (min, i, j, sum, count)
        The minimum, its pair (row of ``A``, row of ``B``), and the sum and number of all
        distances considered (for their mean).  ``(nan, -1, -1, 0.0, 0)`` without pairs.
    """
    A = np.asarray(A, dtype=np.float64)
    B2 = A if B is None else np.asarray(B, dtype=np.float64)
    # distances do not change under a common shift; centring makes the Gram identity's rounding
    # scale with the spread of the points, not with their distance from the origin
    centre = np.concatenate([A, B2]).mean(axis=0) if len(A) + len(B2) else 0.0
    D2, slack = _squared(A - centre, B2 - centre)
    ok = np.ones(D2.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool).copy()
    if B is None:
        ok &= np.triu(np.ones(D2.shape, dtype=bool), 1)
    if not ok.any():
        return float("nan"), -1, -1, 0.0, 0
    vals = np.where(ok, D2, np.inf)
    low = float(vals.min())
    ii, jj = np.nonzero(vals <= low + slack)
    if ii.size > 4096:  # many (near-)ties: the smallest approximations first
        keep = np.argsort(vals[ii, jj], kind="stable")[:4096]
        ii, jj = ii[keep], jj[keep]
    exact = np.sqrt(np.einsum("ij,ij->i", A[ii] - B2[jj], A[ii] - B2[jj]))
    k = int(np.argmin(exact))
    total = float(np.sqrt(np.clip(D2[ok], 0.0, None)).sum())
    return float(exact[k]), int(ii[k]), int(jj[k]), total, int(ok.sum())


def within_margin(H: np.ndarray) -> tuple[float, float, int, int]:
    """Yun et al.'s first condition measured: ``min_{i<j} ‖h_i − h_j‖`` over the rows of ``H``.

    Parameters
    ----------
    H : ndarray of shape (n, d)
        One text's token representations at one layer.

    Returns
    -------
    (margin, relative, i, j)
        The margin, the margin divided by the mean pairwise distance, and the closest pair.
    """
    d, i, j, total, count = min_distance(H)
    mean = total / count if count else float("nan")
    return d, (d / mean if count and mean > 0 else float("nan")), i, j


def cross_margin(
    Hs: Sequence[np.ndarray],
    skip: set[tuple[int, int]] | None = None,
    keys: Sequence[Sequence[int]] | None = None,
) -> tuple[float, float, tuple[int, int, int, int], int]:
    """Yun et al.'s second condition measured: ``min ‖h_i(X_a) − h_j(X_b)‖`` over texts ``a < b``.

    Parameters
    ----------
    Hs : sequence of ndarray of shape (n_t, d)
        Each text's token representations at one layer.
    skip : set of (a, b), optional
        Text pairs left out (inputs that are permutations of each other, for which the
        definition asks nothing).
    keys : sequence of sequence of int, optional
        A key per token; token pairs with equal keys are left out.  For a causal model the key
        is the token's visible context (its prefix): two tokens with the same prefix get the same
        output by construction, whatever the rest of their texts.

    Returns
    -------
    (margin, relative, (a, i, b, j), pairs)
        The margin, divided by the mean distance over all pairs considered, where it is
        attained, and how many text pairs were compared.
    """
    skip = skip or set()
    best, where, total, count, pairs = float("inf"), (-1, -1, -1, -1), 0.0, 0, 0
    for a in range(len(Hs)):
        for b in range(a + 1, len(Hs)):
            if (a, b) in skip:
                continue
            mask = None
            if keys is not None:
                mask = np.asarray(keys[a])[:, None] != np.asarray(keys[b])[None, :]
            d, i, j, s, c = min_distance(Hs[a], Hs[b], mask)
            pairs += 1
            total += s
            count += c
            if c and d < best:
                best, where = d, (a, i, b, j)
    if not count:
        return float("nan"), float("nan"), (-1, -1, -1, -1), pairs
    mean = total / count
    return best, (best / mean if mean > 0 else float("nan")), where, pairs


def prefix_keys(ids: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """Per text, an integer per token naming its prefix ``ids[:i + 1]``: equal integers exactly
    when the prefixes are equal (across all the texts given)."""
    table: dict[tuple[int, ...], int] = {}
    out = []
    for seq in ids:
        seq = tuple(int(x) for x in seq)
        out.append(
            np.array(
                [table.setdefault(seq[: i + 1], len(table)) for i in range(len(seq))],
                dtype=np.int64,
            )
        )
    return out


def is_permutation(ids_a: Sequence[int], ids_b: Sequence[int]) -> bool:
    """True when two token-id sequences are permutations of each other (same multiset)."""
    return len(ids_a) == len(ids_b) and sorted(ids_a) == sorted(ids_b)


# -------------------------------------------------------------------- similarities
def _unit(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def cosine_matrix(X: np.ndarray) -> np.ndarray:
    """Cosine similarities between the rows of ``X`` (m, d) → (m, m), float64 (0 for zero rows)."""
    U = _unit(X)
    return U @ U.T


def pair_mean(S: np.ndarray, groups: Sequence[int] | None = None) -> float:
    """Mean of ``S[a, b]`` over pairs ``a < b``
    (with ``groups``: only pairs in different groups)."""
    S = np.asarray(S, dtype=np.float64)
    ok = np.triu(np.ones(S.shape, dtype=bool), 1)
    if groups is not None:
        g = np.asarray(groups)
        ok &= g[:, None] != g[None, :]
    return float(S[ok].mean()) if ok.any() else float("nan")


def self_similarity(X: np.ndarray, texts: Sequence[int]) -> float:
    """Ethayarajh's self-similarity of one word: mean cosine between its representations ``X``
    (one row per occurrence, shape (m, d)) over pairs of occurrences in different texts."""
    return pair_mean(cosine_matrix(X), texts)


def intra_similarity(H: np.ndarray) -> float:
    """Ethayarajh's intra-sentence similarity: ``mean_i cos(h_i, mean_j h_j)`` over one text's
    token representations ``H`` (n, d)."""
    H = np.asarray(H, dtype=np.float64)
    centre = _unit(H.mean(axis=0)[None, :])[0]
    return float((_unit(H) @ centre).mean())


def anisotropy(Hs: Sequence[np.ndarray]) -> float:
    """Mean cosine between two tokens of two different texts, over all such pairs (exactly).

    With ``u`` the unit vectors, ``S_t`` their sum in text ``t`` and ``S = Σ_t S_t``, the sum
    over ordered cross-text pairs is ``‖S‖² − Σ_t ‖S_t‖²`` and their number ``N² − Σ_t n_t²``:
    the expectation of Ethayarajh's random-pair baseline, without sampling.
    """
    sums = [_unit(H).sum(axis=0) for H in Hs]
    sizes = np.array([len(H) for H in Hs], dtype=np.float64)
    total = np.sum(sums, axis=0)
    pairs = sizes.sum() ** 2 - np.sum(sizes**2)
    if pairs <= 0:
        return float("nan")
    return float((total @ total - sum(s @ s for s in sums)) / pairs)


# ------------------------------------------------------------------- common support
def relative_support(
    rows: Sequence[np.ndarray], positions: Sequence[int], width: int
) -> np.ndarray:
    """Attention rows as distributions over the offset ``key − query`` in ``[−(width−1), width−1]``.

    Parameters
    ----------
    rows : sequence of ndarray of shape (..., n_t)
        One row per context (leading axes, e.g. layers and heads, shared by all).
    positions : sequence of int
        The query token's position in each context.
    width : int
        At least every ``n_t``.

    Returns
    -------
    ndarray of shape (..., k, 2 * width − 1)
        Entry ``width − 1 + (j − i)`` holds the weight on key ``j`` of query ``i``.
    """
    lead = np.asarray(rows[0]).shape[:-1]
    out = np.zeros(lead + (len(rows), 2 * width - 1), dtype=np.float64)
    for c, (r, i) in enumerate(zip(rows, positions)):
        r = np.asarray(r, dtype=np.float64)
        n = r.shape[-1]
        if n > width or not 0 <= i < n:
            raise InvalidInputError(
                f"context {c}: position {i} of {n} tokens does not fit width {width}"
            )
        out[..., c, width - 1 - i : width - 1 - i + n] = r
    return out


def vocabulary_support(
    rows: Sequence[np.ndarray], ids: Sequence[Sequence[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Attention rows as distributions over the token types (vocabulary ids) of all contexts.

    The weight on every key with the same id is summed (a row's mass on "the" is one number).

    Returns
    -------
    (ndarray of shape (..., k, V), ndarray of shape (V,))
        The distributions and the ids of the union, sorted.
    """
    union = np.unique(np.concatenate([np.asarray(x, dtype=np.int64) for x in ids]))
    lead = np.asarray(rows[0]).shape[:-1]
    out = np.zeros(lead + (len(rows), union.size), dtype=np.float64)
    for c, (r, t) in enumerate(zip(rows, ids)):
        r = np.asarray(r, dtype=np.float64)
        cols = np.searchsorted(union, np.asarray(t, dtype=np.int64))
        view = np.zeros(lead + (union.size,), dtype=np.float64)
        for k, col in enumerate(cols):  # np.add.at on the last axis, repeated ids summed
            view[..., col] += r[..., k]
        out[..., c, :] = view
    return out, union


def entropy_bits(P: np.ndarray) -> np.ndarray:
    """Shannon entropy in bits of the distributions on the last axis (``0 log 0 = 0``)."""
    P = np.asarray(P, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, -P * np.log2(np.where(P > 0, P, 1.0)), 0.0)
    return terms.sum(axis=-1)


def h0_total_persistence(D: np.ndarray) -> np.ndarray:
    """Sum of the finite H0 deaths of the Rips filtration of each distance matrix: the weight of
    a minimum spanning tree (Prim's algorithm; zero distances are edges too).

    Parameters
    ----------
    D : ndarray of shape (..., k, k)

    Returns
    -------
    ndarray of shape (...,)
    """
    D = np.asarray(D, dtype=np.float64)
    lead, k = D.shape[:-2], D.shape[-1]
    flat = D.reshape(-1, k, k)
    out = np.zeros(flat.shape[0], dtype=np.float64)
    for m, M in enumerate(flat):
        inside = np.zeros(k, dtype=bool)
        inside[0] = True
        best = M[0].copy()
        total = 0.0
        for _ in range(k - 1):
            cand = np.where(inside, np.inf, best)
            v = int(np.argmin(cand))
            total += float(cand[v])
            inside[v] = True
            best = np.minimum(best, M[v])
        out[m] = total
    return out.reshape(lead)
