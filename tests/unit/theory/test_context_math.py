"""attntopo.theory._context_math: equivariance of self-attention, margins, Ethayarajh's measures,
common supports — against direct NumPy formulas, scipy.spatial.distance, scipy.stats and ripser."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist, cosine, pdist

from attntopo.errors import InvalidInputError
from attntopo.theory import _context_math as cm


# ----------------------------------------------------------- a pure self-attention map
def self_attention(X, Wq, Wk, Wv, causal=False):
    """One softmax self-attention head in NumPy float64: softmax(XWq (XWk)ᵀ / √d) XWv."""
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    Z = Q @ K.T / np.sqrt(Q.shape[1])
    if causal:
        Z = np.where(np.tril(np.ones(Z.shape, dtype=bool)), Z, -np.inf)
    Z = Z - Z.max(axis=1, keepdims=True)
    A = np.exp(Z)
    return (A / A.sum(axis=1, keepdims=True)) @ V


def sinusoidal(n, d):
    pos = np.arange(n)[:, None] / 10000 ** (np.arange(d)[None, :] // 2 * 2 / d)
    return np.where(np.arange(d) % 2 == 0, np.sin(pos), np.cos(pos))


def setup(seed, n, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(3)]
    perm = rng.permutation(n)
    while np.all(perm == np.arange(n)):
        perm = rng.permutation(n)
    return X, W, perm


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 24), d=st.integers(1, 16))
def test_self_attention_without_positions_is_equivariant(seed, n, d):
    X, W, perm = setup(seed, n, d)
    f_x, f_xp = self_attention(X, *W), self_attention(X[perm], *W)
    # float64: a softmax and three products of length <= max(n, d) reordered: ~ (n + d) eps
    assert cm.equivariance_error(f_x, f_xp, perm) <= 64 * (n + d) * np.finfo(float).eps


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 24), d=st.integers(4, 16))
def test_positions_and_causal_masks_break_equivariance(seed, n, d):
    X, W, perm = setup(seed, n, d)
    P = sinusoidal(n, d)
    with_pos = cm.equivariance_error(
        self_attention(X + P, *W), self_attention(X[perm] + P, *W), perm
    )
    causal = cm.equivariance_error(
        self_attention(X, *W, causal=True), self_attention(X[perm], *W, causal=True), perm
    )
    assert with_pos > 1e-6 and causal > 1e-6


def test_equivariance_error_formula():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    perm = np.array([2, 0, 1, 4, 3])
    direct = np.sqrt(((b - a[perm]) ** 2).sum()) / np.sqrt((a**2).sum())
    assert cm.equivariance_error(a, b, perm) == pytest.approx(direct, rel=1e-14)
    stack = np.stack([a, a])  # (layers, n, d): token axis 1
    assert cm.equivariance_error(stack, stack[:, perm], perm, axis=1) == 0.0
    assert cm.equivariance_error(np.zeros((2, 2)), np.ones((2, 2)), np.array([1, 0])) == 0.0
    with pytest.raises(InvalidInputError, match="one shape"):
        cm.equivariance_error(a, b[:4], perm)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 30))
def test_content_permutation_keeps_special_tokens(seed, n):
    rng = np.random.default_rng(seed)
    special = rng.random(n) < 0.3
    if (~special).sum() < 2:
        with pytest.raises(InvalidInputError, match="at least 2 non-special"):
            cm.content_permutation(special, rng)
        return
    perm = cm.content_permutation(special, rng)
    assert sorted(perm.tolist()) == list(range(n))
    assert np.all(perm[special] == np.flatnonzero(special))
    assert np.any(perm != np.arange(n))


# -------------------------------------------------------------------------- margins
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 40),
    d=st.integers(1, 20),
    scale=st.sampled_from([1e-3, 1.0, 300.0]),
    dup=st.booleans(),
    offset=st.sampled_from([0.0, 1e4]),
)
def test_within_margin_is_scipy_pdist_min(seed, n, d, scale, dup, offset):
    rng = np.random.default_rng(seed)
    H = offset + scale * rng.normal(size=(n, d))  # far from the origin: the rows are centred first
    if dup:
        H[-1] = H[0]  # equal rows: the margin is exactly 0
    ref = pdist(H)
    margin, rel, i, j = cm.within_margin(H)
    assert margin == pytest.approx(ref.min(), rel=1e-12, abs=0)
    if ref.mean() > 0:
        assert rel == pytest.approx(ref.min() / ref.mean(), rel=1e-6)
    else:
        assert np.isnan(rel)
    assert i < j and np.linalg.norm(H[i] - H[j]) == pytest.approx(ref.min(), rel=1e-12, abs=0)
    if dup:
        assert margin == 0.0


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    sizes=st.lists(st.integers(1, 12), min_size=3, max_size=6),
    d=st.integers(1, 10),
    near=st.booleans(),
)
def test_cross_margin_is_scipy_cdist_min(seed, sizes, d, near):
    rng = np.random.default_rng(seed)
    Hs = [rng.normal(size=(s, d)) for s in sizes]
    if near:
        Hs[2][0] = Hs[0][-1] + 1e-9  # a nearly shared point: the Gram identity alone would lose it
    skip = {(0, 1)}
    keys = [rng.integers(0, 4, size=s) for s in sizes]
    for use_keys in (False, True):
        best, total, count, pairs = np.inf, 0.0, 0, 0
        for a in range(len(Hs)):
            for b in range(a + 1, len(Hs)):
                if (a, b) in skip:
                    continue
                D = cdist(Hs[a], Hs[b])
                ok = keys[a][:, None] != keys[b][None, :] if use_keys else np.ones(D.shape, bool)
                pairs += 1
                if ok.any():
                    best = min(best, D[ok].min())
                    total += D[ok].sum()
                    count += ok.sum()
        margin, rel, (a, i, b, j), n_pairs = cm.cross_margin(Hs, skip, keys if use_keys else None)
        assert n_pairs == pairs
        if count == 0:
            assert np.isnan(margin)
            continue
        assert margin == pytest.approx(best, rel=1e-12, abs=1e-15)
        assert rel == pytest.approx(best / (total / count), rel=1e-6)
        assert (a, b) not in skip and np.linalg.norm(Hs[a][i] - Hs[b][j]) == pytest.approx(
            margin, rel=1e-12
        )


def test_prefix_keys_and_permutations():
    keys = cm.prefix_keys([[5, 6, 7], [5, 6, 8], [6, 6]])
    assert keys[0][0] == keys[1][0] and keys[0][1] == keys[1][1]  # same prefixes 5 / 5 6
    assert keys[0][2] != keys[1][2] and keys[2][0] != keys[0][0] and keys[2][1] != keys[2][0]
    assert cm.is_permutation([1, 2, 3], [3, 1, 2]) and not cm.is_permutation([1, 2, 2], [1, 1, 2])


# ------------------------------------------------------------------------ similarity
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 9), d=st.integers(2, 12))
def test_self_similarity_is_the_direct_cosine_formula(seed, m, d):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) + rng.normal(size=d)  # correlated occurrences
    texts = rng.integers(0, 3, size=m)
    pairs = [(a, b) for a in range(m) for b in range(a + 1, m) if texts[a] != texts[b]]
    got = cm.self_similarity(X, texts)
    if not pairs:
        assert np.isnan(got)
        return
    # Ethayarajh (2019), eq. 1: mean over pairs of contexts of the cosine similarity
    ref = np.mean([1 - cosine(X[a], X[b]) for a, b in pairs])
    assert got == pytest.approx(ref, abs=1e-12)


def test_intra_similarity_and_anisotropy_direct():
    rng = np.random.default_rng(3)
    Hs = [rng.normal(size=(n, 6)) + 2.0 for n in (4, 7, 5)]
    for H in Hs:
        centre = H.mean(0)
        ref = np.mean([1 - cosine(h, centre) for h in H])
        assert cm.intra_similarity(H) == pytest.approx(ref, abs=1e-12)
    pairs = [
        1 - cosine(x, y) for a in range(3) for b in range(3) if a != b for x in Hs[a] for y in Hs[b]
    ]
    assert cm.anisotropy(Hs) == pytest.approx(np.mean(pairs), abs=1e-12)
    assert np.isnan(cm.anisotropy([Hs[0]]))


# -------------------------------------------------------------------- common supports
def test_relative_support_places_rows_by_offset():
    rows = [np.array([[0.2, 0.3, 0.5]]), np.array([[0.1, 0.9]])]  # (1 head, n) each
    S = cm.relative_support(rows, [1, 0], width=3)  # (1, 2, 5): offsets -2..2
    assert S.shape == (1, 2, 5)
    assert S[0, 0].tolist() == [
        0.0,
        0.2,
        0.3,
        0.5,
        0.0,
    ]  # query at 1: keys 0, 1, 2 at offsets -1, 0, 1
    assert S[0, 1].tolist() == [0.0, 0.0, 0.1, 0.9, 0.0]
    with pytest.raises(InvalidInputError, match="does not fit"):
        cm.relative_support(rows, [3, 0], width=3)


def test_vocabulary_support_sums_repeated_types():
    rows = [np.array([0.2, 0.3, 0.5]), np.array([0.6, 0.4])]
    S, union = cm.vocabulary_support(rows, [[7, 9, 7], [9, 11]])
    assert union.tolist() == [7, 9, 11]
    np.testing.assert_allclose(S, [[0.7, 0.3, 0.0], [0.0, 0.6, 0.4]], atol=1e-15)


def test_entropy_bits_is_scipy_entropy():
    from scipy.stats import entropy

    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.full(9, 0.4), size=(3, 5))
    P[0, 0] = np.eye(9)[2]
    np.testing.assert_allclose(cm.entropy_bits(P), entropy(P, base=2, axis=-1), atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 12))
def test_h0_total_persistence_is_ripser_h0(seed, k):
    from ripser import ripser

    D = cdist(*(2 * [np.random.default_rng(seed).normal(size=(k, 3))]))
    dgm = ripser(D, distance_matrix=True, maxdim=0)["dgms"][0]
    assert cm.h0_total_persistence(D[None])[0] == pytest.approx(
        dgm[np.isfinite(dgm[:, 1]), 1].sum(), rel=1e-6
    )
    # zero distances are edges too
    Z = np.zeros((4, 4))
    assert cm.h0_total_persistence(Z) == 0.0
