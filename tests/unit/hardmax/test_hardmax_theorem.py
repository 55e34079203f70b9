"""The theorem of Alcalde, Fantuzzi & Zuazua (2025) on random instances, and the polytope checks.

For random tokens (general position: no exact ties, with probability one), every instance must
show: the tokens converge (the last step moves nothing, one more step moves nothing: the limit
is a fixed configuration of finitely many points); leaders do not move and stay leaders; every
limit point lies in the polytope spanned by the leaders and on its boundary; there are no more
clusters than (distinct) leaders.  docs/hardmax.md says why the last claim needs general
position (a tie makes a midpoint of an edge a limit point).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attntopo.hardmax import (
    affine_dimension,
    attention_sets,
    hardmax_step,
    polytope_position,
    simulate,
)
from attntopo.hardmax._dynamics import tolerances


def make_A(rng, d, kind):
    if kind == "identity":
        return np.eye(d)
    if kind == "diagonal":
        return np.diag(np.exp(rng.uniform(-2, 2, size=d)))
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    lam = np.exp(rng.uniform(0, math.log(50.0), size=d))  # condition number up to 50
    return (Q * lam) @ Q.T


def make_Z0(rng, n, d, cloud):
    Z = rng.normal(size=(n, d))
    if cloud == "shifted":
        Z += rng.normal(size=d) * 2.0  # a cloud away from the origin
    elif cloud == "scaled":
        Z *= np.exp(rng.uniform(-3, 3))
    elif cloud == "duplicates":
        Z[n // 2 :] = Z[: n - n // 2]  # every token twice (or nearly)
    return Z


def steps_for(alpha):
    # followers contract by 1/(1+α) per step towards their leader: 1e-12 of the scale, and as
    # many steps again for tokens that change target on the way
    return int(2 * math.log(1e12) / math.log1p(alpha)) + 20


def check_theorem(r):
    T, L = r.trajectories, r.leaders
    tol = r.same_point
    # the limit exists: the last step moved nothing, and one more step moves nothing
    assert r.converged
    Zf = T[-1]
    t = tolerances(T[0], r.A, r.rtol, r.cluster_tol)
    nxt = hardmax_step(Zf, attention_sets(Zf, r.A, t), r.alpha)
    assert np.linalg.norm(nxt - Zf, axis=1).max() <= tol
    # ... and is finitely many points: every token is at its cluster's point
    pts = r.limit_points
    assert np.linalg.norm(Zf - pts[r.labels], axis=1).max() <= tol
    # leaders are fixed points and stay leaders
    for k in range(r.steps):
        idx = np.flatnonzero(L[k])
        assert np.linalg.norm(T[k + 1, idx] - T[k, idx], axis=1).max(initial=0) <= tol
        assert not (L[k] & ~L[k + 1]).any()
    # every limit point is in conv(leaders) and on its boundary
    pos = r.polytope()
    assert pos.inside.all(), pos
    assert pos.on_boundary.all(), pos
    assert pos.agree()
    # no more clusters than leader points (general position)
    assert r.n_clusters[-1] <= r.leader_points.shape[0] <= r.n_leaders[-1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 30),
    d=st.sampled_from([1, 2, 3, 4, 5]),
    alpha=st.floats(0.5, 4.0),
    kind=st.sampled_from(["identity", "diagonal", "random"]),
    cloud=st.sampled_from(["centred", "shifted", "scaled", "duplicates"]),
)
def test_theorem_on_random_instances(seed, n, d, alpha, kind, cloud):
    rng = np.random.default_rng(seed)
    A = make_A(rng, d, kind)
    r = simulate(make_Z0(rng, n, d, cloud), A=A, alpha=alpha, steps=steps_for(alpha))
    check_theorem(r)


@pytest.mark.parametrize("seed,n,d", [(0, 40, 8), (1, 30, 16), (2, 60, 12)])
def test_theorem_in_higher_dimension(seed, n, d):
    rng = np.random.default_rng(seed)
    r = simulate(
        rng.normal(size=(n, d)), A=make_A(rng, d, "random"), alpha=1.0, steps=steps_for(1.0)
    )
    check_theorem(r)


def test_small_alpha_converges_too():
    rng = np.random.default_rng(11)
    r = simulate(
        rng.normal(size=(25, 2)), A=make_A(rng, 2, "random"), alpha=0.1, steps=steps_for(0.1)
    )
    check_theorem(r)


def test_the_hull_only_shrinks():
    rng = np.random.default_rng(4)
    r = simulate(rng.normal(size=(20, 3)), A=make_A(rng, 3, "random"), alpha=0.7, steps=12)
    for k in range(r.steps):
        assert polytope_position(r.trajectories[k + 1], r.trajectories[k]).inside.all()


def test_a_tie_gives_a_limit_point_on_an_edge_and_more_clusters_than_leaders():
    # (0.3, 0.3) attends equally to the two leaders and converges to the midpoint of the edge:
    # on the boundary of the polytope (a segment in R^2), not at a vertex
    r = simulate(np.array([[1.0, 0.0], [0.0, 1.0], [0.3, 0.3]]), A=None, alpha=1.0, steps=80)
    assert r.converged
    np.testing.assert_allclose(r.final[2], [0.5, 0.5], atol=1e-12)
    assert r.n_leaders[-1] == 2 and r.n_clusters[-1] == 3
    pos = r.polytope()
    assert pos.affine_dim == 1 and pos.degenerate
    assert pos.inside.all() and pos.on_boundary.all()
    assert list(pos.on_relative_boundary) == [True, True, False]


def test_a_limit_point_strictly_inside_would_be_caught():
    # the checker itself: an interior point of a full-dimensional polytope is not on its boundary
    V = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    pos = polytope_position(np.array([[1.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]]), V)
    assert list(pos.inside) == [True, True, True, False]
    assert list(pos.on_boundary) == [False, True, True, False]
    assert pos.agree()
    np.testing.assert_allclose(pos.lp_margin[:3], [0.25, 0.0, 0.0], atol=1e-9)


# ---------------------------------------------------------------- the checker
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    m=st.integers(1, 12),
    d=st.sampled_from([2, 3, 4]),
    r=st.integers(0, 4),
)
def test_lp_and_qhull_agree(seed, m, d, r):
    rng = np.random.default_rng(seed)
    r = min(r, d, m - 1)
    # m vertices in a random r-dimensional affine subspace of R^d
    B = np.linalg.qr(rng.normal(size=(d, d)))[0][:, :r]
    c = rng.normal(size=d)
    V = c + rng.normal(size=(m, r)) @ B.T
    # points: vertices, edge midpoints, convex combinations, points off the subspace, far points
    w = rng.dirichlet(np.ones(m), size=6)
    P = np.vstack(
        [
            V,
            0.5 * (V[:1] + V[-1:]),
            w @ V,
            c + 3 * rng.normal(size=(3, d)),
            (w @ V)[:2] + 0.5 * rng.normal(size=(2, d)),
        ]
    )
    pos = polytope_position(P, V)
    assert pos.affine_dim == affine_dimension(V)[0] == r
    assert pos.inside[:m].all() and pos.on_relative_boundary[:m].any()
    assert pos.inside[m : m + 7].all()
    if r < d:
        assert np.array_equal(pos.on_boundary, pos.inside)  # no interior in R^d
    # ambiguous points within round-off of a face are not in this sample: the two tests agree
    margin = pos.hull_margin
    if margin is not None:
        clear = np.abs(margin) > 1e-6
        assert np.array_equal(pos._hull_inside[clear], pos.inside[clear])


def test_degenerate_polytopes():
    # a triangle in R^3: the centroid is in it, on its boundary in R^3, inside it relatively
    V = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    pos = polytope_position(np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0], [0.4, 0.4, 0.4]]), V)
    assert pos.affine_dim == 2
    assert list(pos.inside) == [True, True, False]
    assert list(pos.on_boundary) == [True, True, False]
    assert list(pos.on_relative_boundary) == [False, True, False]
    assert pos.offset[2] > 0.1
    # one point
    pos = polytope_position(np.array([[1.0, 2.0], [1.0, 2.5]]), np.array([[1.0, 2.0], [1.0, 2.0]]))
    assert (
        pos.affine_dim == 0
        and list(pos.inside) == [True, False]
        and list(pos.on_boundary) == [True, False]
    )
