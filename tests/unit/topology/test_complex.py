"""Complexes at a scale, connection scales and clusters, against independent computations:
brute-force loops, gudhi's Rips complex, SciPy's minimum spanning tree and hierarchy."""

from __future__ import annotations

import itertools
import math

import gudhi
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import cophenet, fcluster
from scipy.cluster.hierarchy import linkage as sc_linkage
from scipy.spatial.distance import pdist, squareform

from _reference import mst_minimax
from attntopo.errors import InvalidInputError, InvalidMatrixError, OutOfRangeError
from attntopo.topology import persistence
from attntopo.topology.complex import (
    Complex,
    clusters_at,
    complex_at,
    connection_scale,
    connection_scales,
    dendrogram,
    edge_birth,
    linkage,
    simplex_scale,
)


def rand_metric(rng, n, dim=3):
    """A Euclidean distance matrix with distinct, positive off-diagonal entries."""
    return squareform(pdist(rng.normal(size=(n, dim))))


def js_like(rng, n):
    """Jensen–Shannon-like matrix in [0, 1] with some ties (rounded)."""
    P = rng.dirichlet(np.full(n, 0.3), size=n)
    M = (P[:, None, :] + P[None, :, :]) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = lambda a, b: np.where(a > 0, a * np.log2(a / b), 0.0).sum(-1)  # noqa: E731
        js = 0.5 * kl(P[:, None, :], M) + 0.5 * kl(P[None, :, :], M)
    D = np.sqrt(np.clip(js, 0, 1))
    D = np.round((D + D.T) / 2, 2)
    np.fill_diagonal(D, 0)
    return D


def brute_simplices(D, eps, k):
    n = len(D)
    out = []
    for s in itertools.combinations(range(n), k + 1):
        b = max((D[a, c] for a, c in itertools.combinations(s, 2)), default=0.0)
        if b <= eps:
            out.append(tuple(s) + (b,))
    return out


# ------------------------------------------------------------------- complex_at
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("q", [0.1, 0.35, 0.7])
def test_complex_matches_brute_force(seed, q):
    rng = np.random.default_rng(seed)
    D = js_like(rng, 11) if seed % 2 else rand_metric(rng, 11)
    eps = float(np.quantile(D[np.triu_indices(11, 1)], q))
    cx = complex_at(D, eps, max_simplex_dim=3)
    assert cx.vertices == list(range(11))
    assert cx.edges == brute_simplices(D, eps, 1)
    assert cx.triangles == brute_simplices(D, eps, 2)
    assert cx.tetrahedra == brute_simplices(D, eps, 3)
    for i, j, b in cx.edges:
        assert i < j and b == D[i, j] <= eps


@pytest.mark.parametrize("seed", range(3))
def test_complex_matches_gudhi_rips(seed):
    rng = np.random.default_rng(10 + seed)
    n = 14
    D = js_like(rng, n)
    eps = float(np.quantile(D[np.triu_indices(n, 1)], 0.4))
    st_ = gudhi.RipsComplex(distance_matrix=D, max_edge_length=np.inf).create_simplex_tree(
        max_dimension=2
    )
    by_dim = {1: [], 2: []}
    for s, f in st_.get_simplices():
        if len(s) >= 2 and f <= eps:
            by_dim[len(s) - 1].append(tuple(sorted(s)) + (f,))
    cx = complex_at(D, eps, max_simplex_dim=2)
    for k, got in ((1, cx.edges), (2, cx.triangles)):
        exp = sorted(by_dim[k])
        assert [g[:-1] for g in got] == [e[:-1] for e in exp]
        np.testing.assert_allclose([g[-1] for g in got], [e[-1] for e in exp], atol=1e-12)


def test_complex_small_example_and_isolated_tokens():
    D = np.array([[0, 0.1, 0.2, 0.9], [0.1, 0, 0.15, 0.9], [0.2, 0.15, 0, 0.9], [0.9, 0.9, 0.9, 0]])
    cx = complex_at(D, 0.2, labels=["a", "b", "c", "d"])
    assert isinstance(cx, Complex)
    assert cx.edges == [(0, 1, 0.1), (0, 2, 0.2), (1, 2, 0.15)]
    assert cx.triangles == [(0, 1, 2, 0.2)]
    assert cx.tetrahedra == []
    assert cx.n_components == 2
    assert [c.tolist() for c in cx.components()] == [[0, 1, 2], [3]]
    assert cx.named(dim=2) == [("a", "b", "c", 0.2)]
    assert cx.counts().tolist() == [4, 3, 1]
    assert cx.euler_characteristic() == 4 - 3 + 1
    # edge of length exactly eps is in (<=); just below it is not
    assert len(complex_at(D, 0.19999).triangles) == 0
    assert complex_at(D, 0.0).edges == []
    assert len(complex_at(D, math.inf).triangles) == 4
    assert "Complex(scale=0.2" in repr(cx)
    # max_simplex_dim=1: no triangles built
    assert complex_at(D, 0.2, max_simplex_dim=1).triangles == []


def test_complex_validation():
    D = np.array([[0, 1.0], [1.0, 0]])
    with pytest.raises(InvalidMatrixError):
        complex_at(np.ones((2, 3)), 0.5)
    with pytest.raises(InvalidMatrixError):
        complex_at(np.array([[0, 1.0], [2.0, 0]]), 0.5)
    for bad in (-0.1, float("nan"), "x", None, True):
        with pytest.raises(InvalidInputError, match="^scale must be"):
            complex_at(D, bad)
    for bad in (0, 4, 1.5, True, np.bool_(True)):
        with pytest.raises(InvalidInputError, match=r"^max_simplex_dim must be 1 \(edges\)"):
            complex_at(D, 0.5, max_simplex_dim=bad)
    for bad in (0, 1.5, True, np.int64(-1), None):
        with pytest.raises(InvalidInputError, match=r"^max_simplices must be an int >= 1"):
            complex_at(D, 0.5, max_simplices=bad)
    with pytest.raises(InvalidInputError, match=r"^dim must be 0, 1 or 2 \(the simplex dimensions"):
        complex_at(D, 0.5).simplices(3)
    with pytest.raises(InvalidInputError, match="labels"):
        complex_at(D, 0.5, labels=["a"])
    with pytest.raises(InvalidInputError, match="max_simplices"):
        complex_at(np.zeros((30, 30)), 1.0, max_simplices=100)


def test_complex_takes_max_simplex_dim_only():
    """``maxdim`` (a homology dimension elsewhere) was renamed before the first release."""
    D = np.array([[0, 0.1, 0.2], [0.1, 0, 0.15], [0.2, 0.15, 0]])
    new = complex_at(D, 0.2, max_simplex_dim=1)
    assert new.max_simplex_dim == 1 and new.triangles == []
    assert complex_at(D, 0.2, max_simplex_dim=1).triangles == []  # positional: the same argument
    with pytest.raises(TypeError, match="unexpected keyword argument 'maxdim'"):
        complex_at(D, 0.2, maxdim=1)
    assert not hasattr(new, "maxdim")


def test_complex_single_token():
    cx = complex_at(np.zeros((1, 1)), 0.5)
    assert cx.vertices == [0] and cx.edges == [] and cx.n_components == 1
    assert cx.betti().tolist() == [1, 0]


@pytest.mark.parametrize("seed", range(4))
def test_betti_matches_persistence(seed):
    rng = np.random.default_rng(20 + seed)
    D = js_like(rng, 12)
    dgm = persistence(D, maxdim=2)
    vals = np.unique(D[np.triu_indices(12, 1)])
    for eps in list(vals[:: max(1, len(vals) // 8)]) + [0.0, 1.0]:
        b = complex_at(D, eps, max_simplex_dim=3).betti()
        np.testing.assert_array_equal(b, dgm.betti(eps))


# ---------------------------------------------------------------- pairs and sets
@pytest.mark.parametrize("seed", range(5))
def test_connection_scales_against_mst_and_cophenet(seed):
    rng = np.random.default_rng(seed)
    D = rand_metric(rng, 13)
    U = connection_scales(D)
    np.testing.assert_array_equal(U, mst_minimax(D))
    np.testing.assert_array_equal(U, squareform(cophenet(sc_linkage(squareform(D), "single"))))
    assert connection_scale(D, 2, 7) == U[2, 7]
    assert connection_scale(D, 3, 3) == 0.0
    assert connection_scale(D, -1, 0) == U[12, 0]
    assert edge_birth(D, 2, 7) == D[2, 7]


def test_connection_scales_with_zero_distances_and_ties():
    # two identical tokens (distance 0) and ties: SciPy's MST would drop the zero edge
    D = np.array(
        [[0, 0, 0.5, 0.5], [0, 0, 0.5, 0.3], [0.5, 0.5, 0, 0.3], [0.5, 0.3, 0.3, 0]], dtype=float
    )
    U = connection_scales(D)
    assert U[0, 1] == 0 and U[0, 3] == 0.3 and U[0, 2] == 0.3 and U[2, 3] == 0.3
    # brute force minimax closure
    V = D.copy()
    for k in range(4):
        V = np.minimum(V, np.maximum(V[:, [k]], V[[k], :]))
    np.testing.assert_array_equal(U, V)


def test_pair_and_set_validation():
    D = np.array([[0, 1.0, 2.0], [1.0, 0, 1.5], [2.0, 1.5, 0]])
    with pytest.raises(OutOfRangeError, match="0..2"):
        edge_birth(D, 0, 3)
    with pytest.raises(OutOfRangeError):
        connection_scale(D, 0.5, 1)
    assert simplex_scale(D, [0, 1, 2]) == 2.0
    assert simplex_scale(D, [1]) == 0.0
    assert simplex_scale(D, 2) == 0.0
    with pytest.raises(InvalidInputError, match="distinct"):
        simplex_scale(D, [1, 1])
    with pytest.raises(InvalidInputError, match="at least one"):
        simplex_scale(D, [])


# ----------------------------------------------------------- clusters, hierarchy
@pytest.mark.parametrize("seed", range(4))
def test_clusters_match_fcluster_and_h0(seed):
    rng = np.random.default_rng(seed)
    D = js_like(rng, 15) if seed % 2 else rand_metric(rng, 15)
    Z = sc_linkage(squareform(D), "single")
    dgm = persistence(D, maxdim=0)
    for eps in np.unique(np.r_[0.0, D[np.triu_indices(15, 1)]])[::5]:
        lab = clusters_at(D, eps)
        ref = fcluster(Z, eps, criterion="distance")
        # same partition (labels may differ): identical co-membership
        assert np.array_equal(lab[:, None] == lab[None, :], ref[:, None] == ref[None, :])
        assert (
            lab.max() + 1 == dgm.betti(eps)[0] == complex_at(D, eps, max_simplex_dim=1).n_components
        )
        assert lab[0] == 0 and set(lab.tolist()) == set(range(lab.max() + 1))
        # numbered by smallest member
        firsts = [np.flatnonzero(lab == c)[0] for c in range(lab.max() + 1)]
        assert firsts == sorted(firsts)


def test_linkage_heights_are_h0_deaths_and_dendrogram():
    rng = np.random.default_rng(3)
    D = rand_metric(rng, 9)
    Z = linkage(D)
    assert Z.shape == (8, 4)
    h0 = persistence(D, maxdim=0)[0]
    np.testing.assert_array_equal(np.sort(Z[:, 2]), np.sort(h0[np.isfinite(h0[:, 1]), 1]))
    labels = [f"t{i}" for i in range(9)]
    dd = dendrogram(D, labels=labels)
    assert sorted(dd["ivl"]) == sorted(labels) and sorted(dd["leaves"]) == list(range(9))
    assert np.array_equal(dd["linkage"], Z)
    assert max(max(c) for c in dd["dcoord"]) == Z[:, 2].max()
    with pytest.raises(InvalidInputError, match="at least 2"):
        linkage(np.zeros((1, 1)))


# -------------------------------------------------------------- property tests
@st.composite
def metrics(draw):
    n = draw(st.integers(2, 9))
    pts = draw(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=n, max_size=n))
    X = np.array(pts, dtype=float)
    return squareform(pdist(X, "chebyshev"))  # integer-valued: many ties and zeros


@settings(max_examples=60, deadline=None)
@given(metrics(), st.integers(0, 7))
def test_properties(D, e):
    eps = float(e)
    n = len(D)
    U = connection_scales(D)
    assert np.all(U <= D + 0)
    assert np.all(U == U.T) and np.all(np.diag(U) == 0)
    # ultrametric inequality
    assert np.all(U[:, :, None] <= np.maximum(U[:, None, :], U.T[None, :, :]) + 0)
    cx = complex_at(D, eps, max_simplex_dim=2)
    adj = (D <= eps) & ~np.eye(n, dtype=bool)
    A = adj.astype(np.int64)
    assert len(cx.edges) == adj.sum() // 2
    assert len(cx.triangles) == np.trace(A @ A @ A) // 6
    lab = clusters_at(D, eps)
    # same cluster <=> connection scale <= eps
    assert np.array_equal(lab[:, None] == lab[None, :], U <= eps)
    assert cx.n_components == lab.max() + 1
