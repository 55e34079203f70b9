"""The barcode and js sets against gudhi (an engine attntopo does not use by default; float64,
so counts at thresholds such as "deaths <= 0.25" agree exactly) and plain per-diagram formulas;
property tests for the invariants of the statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree

from _feature_refs import attention_matrices, bar_stats, random_attention
from attntopo.distances import token_distances
from attntopo.features import BARCODE_QUANTITIES, barcode_features, barcode_matrices
from attntopo.features._bars import Bars
from attntopo.features._js import (
    DEFAULT_QUANTILES,
    DEFAULT_SCALES,
    IMAGE_PIXEL,
    LANDSCAPE_DEPTH,
    LANDSCAPE_STEPS,
    image_stats,
    js_names,
    js_stats,
    landscape_stats,
)
from attntopo.topology import Diagram, persistence_batch

gudhi = pytest.importorskip("gudhi")


def _gudhi_finite(D: np.ndarray, dim: int) -> np.ndarray:
    """Finite bars of positive length of the full Rips filtration of D, by gudhi."""
    st_ = gudhi.RipsComplex(distance_matrix=D).create_simplex_tree(max_dimension=2)
    st_.persistence()
    dgm = np.asarray(st_.persistence_intervals_in_dimension(dim), dtype=np.float64).reshape(-1, 2)
    dgm = dgm[np.isfinite(dgm[:, 1])]
    return dgm[dgm[:, 1] > dgm[:, 0]]


def _barcode_reference(A: np.ndarray) -> np.ndarray:
    """la-tda's recipe on one matrix: cut small weights,
    1 - max(A, A^T), persistence, statistics."""
    W = np.where(A > 1e-3, A, 0.0)
    D = 1.0 - W
    np.fill_diagonal(D, 0.0)
    D = np.minimum(D, D.T)
    h0, h1 = _gudhi_finite(D, 0), _gudhi_finite(D, 1)
    s0, s1 = bar_stats(h0), bar_stats(h1)
    return np.array(
        [
            s0["sum"],
            s0["entropy_e"],
            s0["longest_death"],
            np.sum(h0[:, 1] >= 0.75),
            np.sum(h0[:, 1] >= 0.5),
            np.sum(h0[:, 1] <= 0.25),
            s1["longest_birth"],
            np.sum(h1[:, 0] >= 0.25),
            np.sum(h1[:, 0] <= 0.95),
            np.sum(h1[:, 0] <= 0.70),
            s1["sum"],
            s1["entropy_e"],
            s1["std"],
            s1["n"],
        ],
        dtype=np.float64,
    )


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=8))
def test_barcode_set_equals_ripser_and_direct_formulas(A):
    got = barcode_features(A, n_jobs=1)
    assert got.shape == (A.shape[0], len(BARCODE_QUANTITIES))
    for b in range(A.shape[0]):
        np.testing.assert_allclose(got[b], _barcode_reference(A[b]), rtol=1e-12, atol=1e-12)


def test_barcode_matrices_are_dissimilarities():
    rng = np.random.default_rng(0)
    A = random_attention(rng, 3, 9)
    A[0, 2, 5] = 5e-4  # below the lower bound: counted as no attention
    D = barcode_matrices(A)
    np.testing.assert_array_equal(D, D.transpose(0, 2, 1))
    assert np.all(np.diagonal(D, axis1=1, axis2=2) == 0)
    assert D.min() >= 0 and D.max() <= 1
    i, j = 3, 7
    assert D[1, i, j] == 1 - max(A[1, i, j], A[1, j, i])
    assert D[0, 2, 5] == 1 - max(0.0, A[0, 5, 2]) or A[0, 5, 2] <= 1e-3


@settings(max_examples=40, deadline=None)
@given(attention_matrices(max_n=8))
def test_the_matrices_features_sends_to_persistence_unchecked_are_valid(A):
    """features() hands its js and barcode matrices to persistence without validating them
    again: the validator accepts every one of them as it is."""
    from attntopo.topology.persistence import validate_distance_matrix

    for M in list(barcode_matrices(A)) + list(token_distances(A)):
        validate_distance_matrix(M)
        np.testing.assert_array_equal(M, M.T)
        assert M.dtype == np.float64


def _js_reference(D: np.ndarray) -> np.ndarray:
    """js statistics of one JS matrix: gudhi bars, scipy MST for the H0 deaths."""
    n = D.shape[0]
    out = []
    for d in (0, 1):
        fin = _gudhi_finite(D, d)
        s = bar_stats(fin)
        n_inf = 1 if d == 0 else 0
        out += [s["n"] + n_inf, s["sum"], s["max"], s["mean"], s["entropy_2"]]
        for eps in DEFAULT_SCALES:
            out.append(np.sum((fin[:, 0] <= eps) & (eps < fin[:, 1])) + n_inf)
    # H0 deaths = MST edge lengths; scipy reads a 0 entry as "no edge", so every edge is
    # lengthened by 1 (the same tree is minimal) and shortened again afterwards
    mst = minimum_spanning_tree(D + 1.0 - np.eye(n)).data
    deaths = np.sort(mst - 1.0)
    out += list(np.quantile(deaths, DEFAULT_QUANTILES)) if n > 1 else [0.0] * len(DEFAULT_QUANTILES)
    return np.array(out, dtype=np.float64)


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=8, max_b=2))
def test_js_set_equals_ripser_scipy_and_direct_formulas(A):
    D = token_distances(A)
    dgms = persistence_batch(D, maxdim=1, n_jobs=1)
    got = js_stats(dgms, np.full(len(dgms), A.shape[-1]), DEFAULT_SCALES, DEFAULT_QUANTILES)
    assert got.shape[1] == len(js_names(DEFAULT_SCALES, DEFAULT_QUANTILES))
    for b in range(A.shape[0]):
        np.testing.assert_allclose(got[b], _js_reference(D[b]), rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
def test_js_set_of_mixed_sizes_equals_gudhi_and_scipy(sizes, seed):
    """A chunk holds texts of several lengths: the H0-death quantiles are taken per length
    (``Bars.padded_deaths(size, rows)`` after one sort of all the chunk's bars).  Every row
    equals the independent reference of its own matrix (gudhi bars, SciPy's minimum spanning
    tree for the H0 deaths), and padding some rows equals padding each diagram alone."""
    rng = np.random.default_rng(seed)
    Ds = [token_distances(random_attention(rng, 1, n))[0] for n in sizes]
    dgms = persistence_batch(Ds, maxdim=1, n_jobs=1)
    n_pts = np.array(sizes)
    got = js_stats(dgms, n_pts, DEFAULT_SCALES, DEFAULT_QUANTILES)
    for i, D in enumerate(Ds):
        np.testing.assert_allclose(got[i], _js_reference(D), rtol=1e-12, atol=1e-12)
    h0 = Bars.of(dgms, 0)
    for size in {max(n - 1, 0) for n in sizes}:
        rows = np.flatnonzero(n_pts - 1 == size)
        alone = np.concatenate([Bars.of([dgms[r]], 0).padded_deaths(size) for r in rows])
        np.testing.assert_array_equal(h0.padded_deaths(size, rows), alone)
    assert h0.padded_deaths(3, np.array([], dtype=np.int64)).shape == (0, 3)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), max_size=12), st.integers(0, 3))
@example([(0.0, 5e-324), (0.0, 1.0), (0.0, 1.0)], 0)  # 5e-324 / 2 divides to 0: once NaN entropy
def test_bar_statistics_invariants(points, n_inf):
    pts = np.array([(min(a, b), max(a, b)) for a, b in points], dtype=np.float64).reshape(-1, 2)
    pts = np.vstack([pts, np.tile([[0.0, np.inf]], (n_inf, 1))])
    g = Diagram([pts], maxdim=0)
    bars = Bars.of([g], 0)
    life = pts[np.isfinite(pts[:, 1]), 1] - pts[np.isfinite(pts[:, 1]), 0]
    assert bars.sum()[0] == pytest.approx(life.sum())  # total persistence = sum of lengths
    assert bars.max()[0] == pytest.approx(life.max() if life.size else 0.0)
    assert bars.std()[0] == pytest.approx(np.std(life) if life.size else 0.0, abs=1e-12)
    pos = life[life > 0]
    assert 0 <= bars.entropy(2.0)[0] <= (np.log2(pos.size) if pos.size else 0) + 1e-12
    assert bars.n_infinite[0] == n_inf
    # Betti numbers at a scale count the bars alive there
    for eps in (0.0, 0.3, 0.99):
        alive = np.sum((pts[:, 0] <= eps) & (eps < pts[:, 1]))
        assert bars.betti(np.array([eps]))[0, 0] == alive


def test_h0_total_persistence_is_the_mst_weight():
    rng = np.random.default_rng(1)
    A = random_attention(rng, 5, 20)
    D = token_distances(A)
    dgms = persistence_batch(D, maxdim=1, n_jobs=1)
    got = js_stats(dgms, np.full(5, 20), DEFAULT_SCALES, DEFAULT_QUANTILES)
    total = got[:, js_names(DEFAULT_SCALES, DEFAULT_QUANTILES).index("h0.total_persistence")]
    np.testing.assert_allclose(total, [minimum_spanning_tree(d).sum() for d in D], rtol=1e-12)


def test_persistence_image_mass_is_the_weighted_bar():
    # one bar well inside the grid, a narrow kernel: the pixels hold its weight, the persistence
    g = Diagram([np.array([[0.0, np.inf]]), np.array([[0.3, 0.7]])], maxdim=1)
    img = image_stats([g])[0]
    k = int(round(1 / IMAGE_PIXEL)) ** 2
    assert img[:k].sum() == 0  # no finite H0 bar
    assert img[k:].sum() == pytest.approx(0.4, rel=1e-3)


def test_persistence_landscapes_equal_the_tent_functions():
    pts = np.array([[0.1, 0.5], [0.2, 0.9], [0.3, 0.4]])
    g = Diagram([np.array([[0.0, np.inf]]), pts], maxdim=1)
    got = landscape_stats([g])[0].reshape(2, LANDSCAPE_DEPTH, LANDSCAPE_STEPS)[1]
    t = np.linspace(0, 1, LANDSCAPE_STEPS)
    tents = np.maximum(0, np.minimum(t[None] - pts[:, :1], pts[:, 1:] - t[None]))
    expected = -np.sort(-tents, axis=0)[:LANDSCAPE_DEPTH]
    np.testing.assert_allclose(got, expected, atol=1e-12)
