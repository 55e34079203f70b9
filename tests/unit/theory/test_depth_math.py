"""The mathematics of attntopo.theory's depth diagnostics, without a model.

Every formula is checked against an independent computation (NumPy's matrix norms, explicit
matrix products, SciPy's JS distance, entropy and minimum spanning tree, scikit-learn's
nearest neighbours, attntopo's own Fisher–Rao reference) and every claim the docs make
(products of stochastic matrices go to rank one, the layer-mean product is the mean over all
head paths, Fisher–Rao is a metric in [0, π]) is a property test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from attntopo.distances import pairwise_distance
from attntopo.errors import InvalidInputError
from attntopo.theory._depth import (
    MIN_ID_POINTS,
    _mean_std,
    composite_norm,
    fisher_rao_rows,
    intrinsic_dimension,
    js_geometry,
    knn_overlap,
    path_products,
    residual,
    row_entropy,
)

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def stochastic(rng, shape, floor=0.0, alpha=0.5):
    """Row-stochastic matrices with entries >= floor / n (Dirichlet rows mixed with uniform)."""
    n = shape[-1]
    P = rng.dirichlet(np.full(n, alpha), size=shape[:-1])
    return (1 - floor) * P + floor / n


# ------------------------------------------------------------------ the norm and res(X)
@settings(max_examples=60, deadline=None)
@given(
    X=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=9),
        elements=finite,
    )
)
def test_composite_norm_is_numpys_induced_norms(X):
    # numpy: ord=1 is the largest column absolute sum, ord=inf the largest row absolute sum
    expected = math.sqrt(np.linalg.norm(X, 1) * np.linalg.norm(X, np.inf))
    assert composite_norm(X) == pytest.approx(expected, rel=1e-12, abs=0)


def _residual_direct(X):
    n, d = X.shape
    xbar = np.array([sum(X[i, j] for i in range(n)) / n for j in range(d)])
    R = X - np.outer(np.ones(n), xbar)
    num = math.sqrt(np.linalg.norm(R, 1) * np.linalg.norm(R, np.inf))
    return num / math.sqrt(np.linalg.norm(X, 1) * np.linalg.norm(X, np.inf))


@settings(max_examples=60, deadline=None)
@given(
    X=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=9),
        elements=finite,
    ),
    c=st.floats(1e-3, 1e3),
)
def test_residual_against_direct_numpy(X, c):
    assume(np.abs(X).max() > 1e-6)
    r = residual(X)
    assert r == pytest.approx(_residual_direct(X), rel=1e-10, abs=1e-12)
    assert -1e-15 <= r <= 2 + 1e-12  # ‖1 x̄ᵀ‖₁ ≤ ‖X‖₁ and ‖1 x̄ᵀ‖_∞ ≤ ‖X‖_∞
    assert residual(-c * X) == pytest.approx(r, rel=1e-9, abs=1e-12)  # scale invariant


def test_residual_batches_and_rank_one():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4, 7, 5))
    r = residual(X)
    assert r.shape == (3, 4)
    assert r[2, 1] == pytest.approx(_residual_direct(X[2, 1]), rel=1e-12)
    x = rng.normal(size=5)
    assert residual(np.tile(x, (7, 1))) == pytest.approx(0.0, abs=1e-15)  # all rows equal: rank one
    assert np.isnan(residual(np.zeros((3, 2))))


# ------------------------------------------------------ products of stochastic matrices
def _tau(A):
    """Dobrushin's ergodicity coefficient: half the largest L1 distance between two rows."""
    return 0.5 * np.abs(A[:, None, :] - A[None, :, :]).sum(-1).max()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 12),
    m=st.integers(1, 40),
    floor=st.floats(0.05, 1.0),
    alpha=st.floats(0.05, 5.0),
)
def test_products_of_positive_stochastic_matrices_go_to_rank_one(seed, n, m, floor, alpha):
    """res(A_m ⋯ A_1) ≤ 2 √n Π τ(A_k), and τ(A) ≤ 1 − floor < 1 for entries ≥ floor / n."""
    rng = np.random.default_rng(seed)
    As = stochastic(rng, (m, n, n), floor, alpha)
    P, bound = np.eye(n), 2 * math.sqrt(n)
    for A in As:
        P = A @ P
        bound *= _tau(A)
        assert _tau(A) <= 1 - floor + 1e-12
        assert residual(P) <= bound + 1e-12
    # sixty more factors of contraction at most 1 - floor: numerically rank one
    for A in stochastic(rng, (60, n, n), max(floor, 0.3), alpha):
        P = A @ P
    assert residual(P) < 1e-7


def test_path_products_are_explicit_products():
    rng = np.random.default_rng(1)
    L, H, n = 4, 3, 6
    A = stochastic(rng, (L, H, n, n))
    same, mean = path_products(A)
    for layer in range(L):
        for h in range(H):
            ref = np.linalg.multi_dot([A[j, h] for j in range(layer, -1, -1)]) if layer else A[0, h]
            np.testing.assert_allclose(same[layer, h], ref, rtol=0, atol=1e-14)
    # the layer-mean product is the mean over all H^(l+1) head paths of their products
    for layer in range(L):
        paths = [
            np.linalg.multi_dot([A[j, path[j]] for j in range(layer, -1, -1)])
            if layer
            else A[0, path[0]]
            for path in itertools.product(range(H), repeat=layer + 1)
        ]
        np.testing.assert_allclose(mean[layer], np.mean(paths, axis=0), rtol=0, atol=1e-13)
    np.testing.assert_allclose(same.sum(-1), 1.0, atol=1e-13)


def test_path_products_rescale_float32_rows():
    rng = np.random.default_rng(2)
    A = stochastic(rng, (40, 2, 8, 8), floor=0.5).astype(np.float32)  # row sums off by ~1e-7
    same, mean = path_products(A)
    assert residual(mean[-1]) < 1e-12 and residual(same[-1]).max() < 1e-12
    with pytest.raises(InvalidInputError, match=r"\(L, H, n, n\)"):
        path_products(A[0])


# ------------------------------------------------------------------------- Fisher–Rao
@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30), alpha=st.floats(0.05, 3.0))
def test_fisher_rao_against_direct_formula_and_reference(seed, n, alpha):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(n, alpha), size=3)
    d = fisher_rao_rows(P, P[::-1])
    bc = np.clip(np.sqrt(P * P[::-1]).sum(-1), 0, 1)
    np.testing.assert_allclose(d, 2 * np.arccos(bc), rtol=0, atol=2e-7)  # arccos near 1 loses ~1e-8
    assert d[0] == pytest.approx(pairwise_distance(P[0], P[2], metric="fisher_rao"), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 20), alpha=st.floats(0.05, 3.0))
def test_fisher_rao_is_a_metric_on_the_simplex(seed, n, alpha):
    rng = np.random.default_rng(seed)
    p, q, r = rng.dirichlet(np.full(n, alpha), size=3)
    dpq, dqp = fisher_rao_rows(p, q), fisher_rao_rows(q, p)
    assert dpq == dqp  # symmetric
    assert fisher_rao_rows(p, p) == 0.0
    assert 0.0 <= dpq <= math.pi
    assert dpq <= fisher_rao_rows(p, r) + fisher_rao_rows(r, q) + 1e-12  # triangle inequality


def test_fisher_rao_extremes_and_errors():
    e = np.eye(4)
    np.testing.assert_allclose(
        fisher_rao_rows(e, e[::-1]), math.pi, rtol=0, atol=1e-15
    )  # disjoint supports
    assert fisher_rao_rows([2.0, 2.0], [0.5, 0.5]) == 0.0  # rows are rescaled to sum 1
    with pytest.raises(InvalidInputError, match="one shape"):
        fisher_rao_rows(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(InvalidInputError, match="non-negative"):
        fisher_rao_rows([1.0, -0.5], [0.5, 0.5])
    with pytest.raises(InvalidInputError, match="positive sum"):
        fisher_rao_rows([0.0, 0.0], [0.5, 0.5])


# ------------------------------------------------------ entropy, JS geometry, H0 = MST
def test_entropy_against_scipy():
    from scipy.stats import entropy

    rng = np.random.default_rng(3)
    A = stochastic(rng, (2, 3, 9, 9), alpha=0.2)
    A[0, 0, 4] = np.eye(9)[4]  # a one-hot row: 0 bits
    want = np.array(
        [[np.mean([entropy(row, base=2) for row in A[i, j]]) for j in range(3)] for i in range(2)]
    )
    np.testing.assert_allclose(row_entropy(A), want, rtol=1e-12, atol=1e-14)
    assert row_entropy(np.full((1, 8, 8), 1 / 8)) == pytest.approx(
        [3.0], abs=1e-14
    )  # uniform on 8: 3 bits


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 24),
    alpha=st.floats(0.1, 2.0),
    causal=st.booleans(),
)
def test_js_geometry_against_scipy(seed, n, alpha, causal):
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import pdist, squareform

    rng = np.random.default_rng(seed)
    A = stochastic(rng, (2, n, n), alpha=alpha)
    if causal:
        A = np.tril(A)
        A /= A.sum(-1, keepdims=True)
    mean, diam, h0 = js_geometry(A)
    for j in range(2):
        d = pdist(A[j], "jensenshannon") / math.sqrt(math.log(2))  # scipy 1.17: natural log only
        # Error model: each divergence is a sum of n terms of size <= 1, so the two computations
        # differ by at most E = 4 n eps in it; a distance is its square root, and
        # |sqrt(a + E) - sqrt(a)| <= min(sqrt(E), E / (2 sqrt(a))): tiny for distances of
        # ordinary size, up to sqrt(E) for two nearly equal rows (seen: 1.9e-9 at d = 2e-8).
        E = 4 * n * np.finfo(np.float64).eps
        delta = np.minimum(math.sqrt(E), E / (2 * np.maximum(d, 1e-300)))
        assert abs(mean[j] - d.mean()) <= delta.mean() + 1e-15
        assert abs(diam[j] - d.max()) <= delta.max() + 1e-15
        # H0 deaths are the edges of a minimum spanning tree (no zero distances off the diagonal
        # here); a tree's total weight moves by at most (n - 1) x the largest change of a distance
        assume(d.min() > 0)
        mst = minimum_spanning_tree(squareform(d)).sum()
        assert abs(h0[j] - mst) <= (n - 1) * delta.max() + 1e-15


def test_js_geometry_shapes_and_errors():
    rng = np.random.default_rng(4)
    mean, diam, h0 = js_geometry(stochastic(rng, (3, 2, 5, 5)))
    assert mean.shape == diam.shape == h0.shape == (3, 2)
    assert np.all((0 <= mean) & (mean <= diam) & (diam <= 1))
    with pytest.raises(InvalidInputError, match="n >= 2"):
        js_geometry(np.ones((1, 1)))


# ------------------------------------------------------------ neighbourhoods and ID
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 40), k=st.integers(1, 10))
def test_knn_overlap_against_sklearn(seed, n, k):
    from sklearn.neighbors import NearestNeighbors

    k = min(k, n - 1)
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(n, 4)), rng.normal(size=(n, 6))
    sets = []
    for Z in (X, Y):
        idx = NearestNeighbors(n_neighbors=k + 1).fit(Z).kneighbors(Z, return_distance=False)
        sets.append([set(row) - {i} for i, row in enumerate(idx)])
    want = np.mean([len(a & b) for a, b in zip(*sets)]) / k
    assert knn_overlap(X, Y, k) == pytest.approx(want, abs=1e-12)
    # Euclidean neighbourhoods survive rotations, translations and scaling
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    assert knn_overlap(X, 3.0 * X @ Q + 1.0, k) == 1.0


def test_knn_overlap_errors():
    with pytest.raises(InvalidInputError, match="at most n - 1"):
        knn_overlap(np.eye(4), np.eye(4), 4)
    with pytest.raises(InvalidInputError, match="k must be"):
        knn_overlap(np.eye(4), np.eye(4), 0)
    with pytest.raises(InvalidInputError, match="same n"):
        knn_overlap(np.eye(4), np.eye(3), 1)


def test_intrinsic_dimension_uses_distinct_points_and_skdim():
    import skdim

    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3)) @ rng.normal(size=(3, 20))  # a 3-D linear subspace of R^20
    dim, used = intrinsic_dimension(X)
    assert used == 400 and dim == pytest.approx(skdim.id.TwoNN().fit(X).dimension_, rel=1e-12)
    assert 2.5 < dim < 3.5
    again, used2 = intrinsic_dimension(np.concatenate([X, X[:50]]))  # duplicates are dropped
    assert used2 == 400 and again == pytest.approx(dim, rel=1e-12)
    dim_few, n_few = intrinsic_dimension(X[: MIN_ID_POINTS - 1])
    assert math.isnan(dim_few) and n_few == MIN_ID_POINTS - 1


def test_mean_std_against_numpy():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(5, 7))
    x[0, 2] = np.nan
    x[:, 4] = np.nan
    x[1:, 5] = np.nan
    mean, std = _mean_std(x)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        np.testing.assert_allclose(mean, np.nanmean(x, 0), rtol=1e-14, equal_nan=True)
    np.testing.assert_allclose(
        std[[0, 1, 2, 3, 6]], np.nanstd(x[:, [0, 1, 2, 3, 6]], 0, ddof=1), rtol=1e-12
    )
    assert np.isnan(std[4]) and np.isnan(std[5]) and np.isnan(mean[4])  # one value: no spread
