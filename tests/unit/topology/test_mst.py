"""The batched Prim of attntopo.topology._mst against SciPy's minimum spanning tree, ripser's
H0 and attntopo's own persistence engines (on CPU tensors: the same code runs on a GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from ripser import ripser
from scipy.sparse.csgraph import minimum_spanning_tree

from _feature_refs import attention_matrices
from attntopo.distances import token_distances
from attntopo.errors import InvalidInputError, InvalidMatrixError
from attntopo.topology import h0_deaths, h0_diagrams, persistence, prim_edges


def _scipy_mst_lengths(D: np.ndarray) -> np.ndarray:
    """Sorted MST edge lengths (SciPy reads 0 as no edge: shift every edge by 1 and back)."""
    n = D.shape[0]
    T = minimum_spanning_tree(D + 1.0 - np.eye(n)).toarray()
    return np.sort(T[T > 0] - 1.0)


def _metric(rng: np.random.Generator, b: int, n: int, ties: bool) -> np.ndarray:
    X = rng.standard_normal((b, n, 3))
    D = np.sqrt(((X[:, :, None] - X[:, None]) ** 2).sum(-1))
    if ties:
        D = np.round(D, 1)  # many equal lengths and zero distances between distinct points
    return D


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.integers(1, 24), st.booleans())
def test_h0_deaths_are_scipy_mst_lengths(seed, b, n, ties):
    D = _metric(np.random.default_rng(seed), b, n, ties)
    got = h0_deaths(torch.from_numpy(D))
    assert got.shape == (b, n - 1)
    for k in range(b):
        np.testing.assert_allclose(got[k].numpy(), _scipy_mst_lengths(D[k]), rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(attention_matrices(max_n=12, max_b=3), st.floats(0.05, 1.5) | st.just(math.inf))
def test_h0_diagrams_equal_the_engines_and_ripser(A, threshold):
    D = token_distances(A)
    got = h0_diagrams(D, threshold=threshold)
    for k in range(D.shape[0]):
        want = persistence(D[k], maxdim=0, threshold=threshold)
        assert got[k] == want
        r = ripser(D[k], distance_matrix=True, maxdim=0, thresh=threshold)["dgms"][0]
        r = r[r[:, 1] > r[:, 0]]
        np.testing.assert_allclose(np.sort(got[k][0][:, 1]), np.sort(r[:, 1]), rtol=0, atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 14))
def test_forest_with_roots_is_the_mst_of_the_contracted_graph(seed, n):
    rng = np.random.default_rng(seed)
    D = _metric(rng, 2, n, ties=bool(seed % 2))
    roots = rng.random(n) < 0.4
    roots[rng.integers(n)] = True
    rest = np.flatnonzero(~roots)
    got = prim_edges(D, roots=roots).sum(1).numpy()
    for k in range(2):
        m = rest.size + 1
        C = np.zeros((m, m))
        C[0, 1:] = C[1:, 0] = D[k][np.ix_(roots, rest)].min(axis=0)
        C[1:, 1:] = D[k][np.ix_(rest, rest)]
        want = _scipy_mst_lengths(C).sum() if m > 1 else 0.0
        assert got[k] == pytest.approx(want, abs=1e-12)


def test_keeps_device_and_dtype_and_refuses_bad_roots():
    D = torch.from_numpy(_metric(np.random.default_rng(0), 2, 6, False)).float()
    e = prim_edges(D)
    assert e.dtype == torch.float32 and e.device == D.device and e.shape == (2, 5)
    assert prim_edges(D, roots=np.ones(6, bool)).shape == (2, 0)
    with pytest.raises(InvalidInputError, match="at least one True"):
        prim_edges(D, roots=np.zeros(6, bool))
    with pytest.raises(InvalidMatrixError, match=r"shape \(B, n, n\)"):
        prim_edges(D[0])


# ----------------------------------------------------------- single linkage from the batched tree
def _partition(labels: np.ndarray) -> set:
    """A clustering as a set of frozensets of points (label numbering ignored)."""
    return {frozenset(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)}


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**31 - 1),
    st.integers(1, 4),
    st.integers(2, 20),
    st.booleans(),
    st.sampled_from([torch.float64, torch.float32]),
)
def test_single_linkage_is_scipys(seed, b, n, ties, dtype):
    """Every head's linkage against SciPy's single linkage of the same matrix: the same heights,
    a valid linkage matrix (cluster sizes included), the same cophenetic matrix and the same
    clusters at every cut height (ties may order equal merges differently)."""
    from scipy.cluster.hierarchy import cophenet, fcluster, is_valid_linkage, linkage
    from scipy.spatial.distance import squareform

    from attntopo.topology import single_linkage

    T = torch.from_numpy(_metric(np.random.default_rng(seed), b, n, ties)).to(dtype)
    D = T.double().numpy()  # the matrices as the tensor holds them (float32 rounded), in float64
    Z = single_linkage(T)
    assert Z.shape == (b, n - 1, 4) and Z.dtype == np.float64
    for k in range(b):
        want = linkage(squareform(D[k], checks=False), "single")
        assert is_valid_linkage(Z[k])
        assert np.all(Z[k][:, 0] < Z[k][:, 1])
        np.testing.assert_allclose(
            Z[k][:, 2], want[:, 2], rtol=0, atol=0
        )  # min over entries: exact
        np.testing.assert_array_equal(cophenet(Z[k]), cophenet(want))
        for t in np.unique(want[:, 2]):
            assert _partition(fcluster(Z[k], t, "distance")) == _partition(
                fcluster(want, t, "distance")
            )


def test_single_linkage_of_a_synthetic_head_and_the_public_functions():
    """On Jensen–Shannon distances of attention: linkage() and connection_scales() of a tensor
    (the device route) equal their SciPy results of the array."""
    from scipy.cluster.hierarchy import cophenet

    from attntopo.topology import connection_scales, linkage, single_linkage

    A = np.random.default_rng(3).dirichlet(np.ones(15) * 0.3, size=(3, 15))
    D = token_distances(A)
    Z = single_linkage(torch.from_numpy(D))
    for k in range(3):
        want = linkage(D[k])
        got = linkage(torch.from_numpy(D[k]))
        np.testing.assert_array_equal(got, Z[k])
        np.testing.assert_array_equal(got[:, 2], want[:, 2])
        np.testing.assert_array_equal(cophenet(got), cophenet(want))
        np.testing.assert_array_equal(
            connection_scales(torch.from_numpy(D[k])), connection_scales(D[k])
        )


def test_single_linkage_refuses_bad_shapes():
    from attntopo.topology import linkage, mst_edges, single_linkage

    D = torch.from_numpy(_metric(np.random.default_rng(0), 2, 6, False))
    with pytest.raises(InvalidMatrixError, match=r"shape \(B, n, n\)"):
        single_linkage(D[0])
    with pytest.raises(InvalidMatrixError, match=r"shape \(B, n, n\)"):
        single_linkage(D[:, :, :5])
    with pytest.raises(InvalidMatrixError, match=r"shape \(B, n, n\)"):
        mst_edges(np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match="at least 2 points"):
        single_linkage(D[:, :1, :1])
    with pytest.raises(InvalidMatrixError, match=r"square \(n, n\)"):
        linkage(D)
    with pytest.raises(InvalidInputError, match="at least 2 tokens"):
        linkage(D[0, :1, :1])
    from attntopo.topology import cophenetic_matrix

    for bad in (np.ones((2, 2)), np.zeros((2, 4)), np.array([["a"] * 4])):  # not SciPy's format
        with pytest.raises(InvalidMatrixError, match=r"linkage matrix of shape \(n - 1, 4\)"):
            cophenetic_matrix(bad)
    lengths, a, b = mst_edges(D)
    assert lengths.shape == a.shape == b.shape == (2, 5) and a.dtype == torch.int64
    assert torch.all(lengths[:, 1:] >= lengths[:, :-1])
    np.testing.assert_array_equal(lengths.numpy(), h0_deaths(D).numpy())
    np.testing.assert_array_equal(
        lengths.numpy(),
        np.take_along_axis(D.numpy()[np.arange(2)[:, None], a.numpy()], b.numpy()[:, :, None], 2)[
            :, :, 0
        ],
    )
