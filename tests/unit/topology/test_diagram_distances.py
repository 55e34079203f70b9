"""Bottleneck and Wasserstein distances: exact, against gudhi and brute force."""

from __future__ import annotations

import itertools
import math

import gudhi
import gudhi.hera
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.errors import InvalidInputError
from attntopo.topology import Diagram, persistence
from attntopo.topology.diagram_distances import (
    _bottleneck_matching,
    bottleneck,
    diagram_distance,
    matching,
    wasserstein,
)


def rand_dgm(rng, k, inf=0):
    b = rng.uniform(0, 1, k)
    d = b + rng.exponential(0.2, k)
    pts = np.c_[b, d]
    if inf:
        pts = np.r_[pts, np.c_[rng.uniform(0, 0.3, inf), np.full(inf, np.inf)]]
    return pts


def brute_force(a, b, p):
    """All matchings of the augmented diagrams (tiny inputs only)."""
    n, m = len(a), len(b)
    A = [("pt", x) for x in a] + [("diag", y) for y in b]
    B = [("pt", y) for y in b] + [("diag", x) for x in a]

    def cost(u, v):
        if u[0] == "pt" and v[0] == "pt":
            return max(abs(u[1][0] - v[1][0]), abs(u[1][1] - v[1][1]))
        if u[0] == "pt":
            return (u[1][1] - u[1][0]) / 2 if v[0] == "diag" and v[1] is u[1] else math.inf
        if v[0] == "pt":
            return (v[1][1] - v[1][0]) / 2 if u[1] is v[1] else math.inf
        return 0.0

    best = math.inf
    for perm in itertools.permutations(range(n + m)):
        cs = [cost(A[i], B[perm[i]]) for i in range(n + m)]
        if math.isinf(p):
            val = max(cs) if cs else 0.0
        else:
            val = sum(c**p for c in cs) ** (1 / p) if cs else 0.0
        best = min(best, val)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_brute_force_small(seed):
    rng = np.random.default_rng(seed)
    a = [tuple(x) for x in rand_dgm(rng, rng.integers(0, 4))]
    b = [tuple(x) for x in rand_dgm(rng, rng.integers(0, 4))]
    A = np.array(a).reshape(-1, 2)
    B = np.array(b).reshape(-1, 2)
    for p in (1, 2):
        assert wasserstein(A, B, p=p) == pytest.approx(brute_force(a, b, p), abs=1e-12)
    assert bottleneck(A, B) == pytest.approx(brute_force(a, b, math.inf), abs=1e-12)
    assert _bottleneck_matching(A, B)[0] == pytest.approx(brute_force(a, b, math.inf), abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_against_gudhi(seed):
    rng = np.random.default_rng(100 + seed)
    inf = int(rng.integers(0, 3))
    a = rand_dgm(rng, int(rng.integers(0, 40)), inf)
    b = rand_dgm(rng, int(rng.integers(0, 40)), inf)
    ref_b = gudhi.bottleneck_distance(a, b, 0)
    assert bottleneck(a, b) == pytest.approx(ref_b, abs=1e-12)
    # our own exact routine agrees with gudhi too
    val, pairs = matching(a, b, metric="bottleneck")
    assert val == pytest.approx(ref_b, abs=1e-12)
    for p in (1, 2):
        ref = gudhi.hera.wasserstein_distance(a, b, order=p, internal_p=np.inf, delta=1e-7)
        assert wasserstein(a, b, p=p) == pytest.approx(ref, rel=1e-6, abs=1e-12)


def test_infinite_bars():
    a = np.array([[0, 1.0], [0, np.inf]])
    b = np.array([[0, 1.0], [0.25, np.inf]])
    assert bottleneck(a, b) == pytest.approx(0.25)
    assert wasserstein(a, b, p=1) == pytest.approx(0.25)
    c = np.array([[0, 1.0]])
    assert bottleneck(a, c) == math.inf and wasserstein(a, c) == math.inf
    assert bottleneck(a, c, infinite="ignore") == 0.0


def test_matching_is_optimal_and_complete():
    rng = np.random.default_rng(7)
    a, b = rand_dgm(rng, 12, 1), rand_dgm(rng, 9, 1)
    val, pairs = matching(a, b, metric="wasserstein", p=1)
    assert val == pytest.approx(wasserstein(a, b, p=1))
    left = sorted(i for i, _ in pairs if i >= 0)
    right = sorted(j for _, j in pairs if j >= 0)
    assert left == list(range(len(a))) and right == list(range(len(b)))
    # recompute the cost of the returned matching
    cost = 0.0
    for i, j in pairs:
        if i >= 0 and j >= 0:
            if np.isinf(a[i, 1]):
                cost += abs(a[i, 0] - b[j, 0])
            else:
                cost += max(abs(a[i, 0] - b[j, 0]), abs(a[i, 1] - b[j, 1]))
        elif i >= 0:
            cost += (a[i, 1] - a[i, 0]) / 2
        else:
            cost += (b[j, 1] - b[j, 0]) / 2
    assert cost == pytest.approx(val)


def test_per_dimension_on_diagrams():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 2))
    Y = X + rng.normal(scale=0.05, size=X.shape)
    from scipy.spatial.distance import cdist

    d1 = persistence(cdist(X, X), maxdim=1)
    d2 = persistence(cdist(Y, Y), maxdim=1)
    out = bottleneck(d1, d2)
    assert out.shape == (2,)
    for d in range(2):
        assert out[d] == pytest.approx(gudhi.bottleneck_distance(d1[d], d2[d], 0), abs=1e-12)
    # stability theorem: bottleneck ≤ sup-norm difference of the distance matrices
    assert out.max() <= np.abs(cdist(X, X) - cdist(Y, Y)).max() + 1e-12
    assert np.all(diagram_distance(d1, d2, metric="wasserstein", p=2) >= out - 1e-12)


points = st.lists(
    st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: (min(t), max(t))), max_size=8
)


@settings(max_examples=60, deadline=None)
@given(points, points, points)
def test_metric_axioms(a, b, c):
    A, B, C = (np.array(x, dtype=float).reshape(-1, 2) for x in (a, b, c))
    for f in (bottleneck, lambda x, y: wasserstein(x, y, p=1), lambda x, y: wasserstein(x, y, p=2)):
        ab, ba = f(A, B), f(B, A)
        assert ab == pytest.approx(ba, abs=1e-12)
        assert f(A, A) == pytest.approx(0, abs=1e-12)
        assert f(A, C) <= ab + f(B, C) + 1e-9


def test_errors():
    with pytest.raises(InvalidInputError, match=r"\(k, 2\)"):
        bottleneck(np.zeros((3, 3)), np.zeros((1, 2)))
    with pytest.raises(InvalidInputError, match="p must be"):
        wasserstein(np.zeros((1, 2)), np.zeros((1, 2)), p=0.5)
    with pytest.raises(InvalidInputError, match="unknown diagram metric"):
        diagram_distance(np.zeros((1, 2)), np.zeros((1, 2)), metric="energy")
    with pytest.raises(InvalidInputError, match="infinite"):
        bottleneck(np.zeros((1, 2)), np.zeros((1, 2)), infinite="drop")
    d = Diagram((np.zeros((0, 2)), np.zeros((0, 2))), maxdim=1)
    with pytest.raises(InvalidInputError, match="dim"):
        bottleneck(d, np.zeros((0, 2)))


def test_non_numeric_diagram():
    with pytest.raises(InvalidInputError, match="birth, death"):
        bottleneck("x", "y")
