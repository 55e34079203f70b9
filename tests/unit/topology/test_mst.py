"""The batched Prim of attntopo.topology._mst against SciPy's minimum spanning tree, ripser's
H0 and attntopo's own persistence engines (on CPU tensors: the same code runs on a GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _feature_refs import attention_matrices
from hypothesis import given, settings
from hypothesis import strategies as st
from ripser import ripser
from scipy.sparse.csgraph import minimum_spanning_tree

from attntopo.errors import InvalidInputError, InvalidMatrixError
from attntopo.distances import token_distances
from attntopo.topology import persistence
from attntopo.topology import h0_deaths, h0_diagrams, prim_edges


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
    got = prim_edges(D, roots).sum(1).numpy()
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
    assert prim_edges(D, np.ones(6, bool)).shape == (2, 0)
    with pytest.raises(InvalidInputError, match="at least one True"):
        prim_edges(D, np.zeros(6, bool))
    with pytest.raises(InvalidMatrixError, match=r"shape \(B, n, n\)"):
        prim_edges(D[0])
