"""attntopo.hardmax.simulate: the update rule against
independent implementations, ties, bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from attntopo.errors import InvalidInputError, InvalidMatrixError
from attntopo.hardmax import attention_sets, default_rtol, simulate
from attntopo.hardmax._dynamics import check_spd, tolerances


# ------------------------------------------------------------------ references
def loop_reference(Z0, A, alpha, steps, rtol):
    """The dynamics token by token, in plain Python (math.fsum dot products)."""
    Z = [list(map(float, z)) for z in Z0]
    n, d = len(Z), len(Z[0])
    A = [list(map(float, row)) for row in A]
    R = max(math.sqrt(math.fsum(x * x for x in z)) for z in Z)
    normA = float(np.linalg.norm(np.asarray(A), 2))
    out = [np.array(Z)]
    for _ in range(steps):
        new = []
        for i in range(n):
            Az = [math.fsum(A[a][b] * Z[i][b] for b in range(d)) for a in range(d)]
            s = [math.fsum(Az[a] * Z[j][a] for a in range(d)) for j in range(n)]
            top = max(s)
            gap = rtol * normA * math.sqrt(math.fsum(x * x for x in Z[i])) * R
            C = [j for j in range(n) if s[j] >= top - gap]
            mean = [math.fsum(Z[j][a] for j in C) / len(C) for a in range(d)]
            new.append([Z[i][a] / (1 + alpha) + alpha / (1 + alpha) * mean[a] for a in range(d)])
        Z = new
        out.append(np.array(Z))
    return np.stack(out)


def exact_reference(Z0, A, alpha, steps):
    """The dynamics in rational arithmetic: exact argmax, exact ties."""
    Z = [[Fraction(x) for x in z] for z in Z0]
    A = [[Fraction(x) for x in row] for row in A]
    a = Fraction(alpha)
    n, d = len(Z), len(Z[0])
    out = [[[float(x) for x in z] for z in Z]]
    sets = []
    for _ in range(steps):
        new, Cs = [], []
        for i in range(n):
            Az = [sum(A[p][q] * Z[i][q] for q in range(d)) for p in range(d)]
            s = [sum(Az[p] * Z[j][p] for p in range(d)) for j in range(n)]
            C = [j for j in range(n) if s[j] == max(s)]
            Cs.append(C)
            mean = [sum(Z[j][p] for j in C) / len(C) for p in range(d)]
            new.append([Z[i][p] / (1 + a) + a / (1 + a) * mean[p] for p in range(d)])
        Z = new
        sets.append(Cs)
        out.append([[float(x) for x in z] for z in Z])
    return np.array(out), sets


def random_spd(rng, d, cond=20.0):
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    lam = np.exp(rng.uniform(0, math.log(cond), size=d))
    return (Q * lam) @ Q.T


# ------------------------------------------------------------------------ rule
@pytest.mark.parametrize("seed,n,d", [(0, 12, 2), (1, 9, 3), (2, 15, 5), (3, 6, 1)])
def test_trajectories_match_a_loop_over_tokens(seed, n, d):
    rng = np.random.default_rng(seed)
    Z0, A, alpha = rng.normal(size=(n, d)), random_spd(rng, d), float(rng.uniform(0.3, 3))
    r = simulate(Z0, A=A, alpha=alpha, steps=25)
    ref = loop_reference(Z0, A, alpha, 25, default_rtol(d))
    assert r.trajectories.shape == (26, n, d)
    np.testing.assert_allclose(r.trajectories, ref, rtol=0, atol=1e-12 * np.abs(Z0).max())


def test_exact_ties_are_averaged_as_in_rational_arithmetic():
    # a square's corners and points on its diagonals and edges: many exact ties
    Z0 = [
        [1, 0],
        [0, 1],
        [-1, 0],
        [0, -1],
        [Fraction(3, 10), Fraction(3, 10)],
        [0, 0],
        [Fraction(1, 2), 0],
        [Fraction(-1, 4), Fraction(1, 4)],
    ]
    A = [[1, 0], [0, 1]]
    ref, sets = exact_reference(Z0, A, Fraction(1), 12)
    r = simulate(np.array(Z0, dtype=float), A=np.array(A, dtype=float), alpha=1.0, steps=12)
    np.testing.assert_allclose(r.trajectories, ref, rtol=0, atol=1e-14)
    # the attention sets of the first step, exactly
    C = attention_sets(r.trajectories[0], np.eye(2), tolerances(r.trajectories[0], np.eye(2)))
    assert [list(np.flatnonzero(row)) for row in C] == sets[0]
    assert sets[0][5] == list(range(8))  # the origin ties with everybody
    assert sets[0][4] == [0, 1]  # (0.3, 0.3): a tie between two corners
    np.testing.assert_allclose(r.trajectories[-1, 4], [0.5, 0.5], atol=1e-3)


def test_ties_with_a_non_identity_A_in_rational_arithmetic():
    A = [[2, 1], [1, 3]]
    Z0 = [[1, 0], [0, 1], [1, 1], [-1, 2], [Fraction(1, 3), Fraction(1, 3)], [2, -1]]
    ref, _ = exact_reference(Z0, A, Fraction(1, 2), 15)
    r = simulate(np.array(Z0, dtype=float), A=np.array(A, dtype=float), alpha=0.5, steps=15)
    np.testing.assert_allclose(r.trajectories, ref, rtol=0, atol=1e-13)


def test_a_tie_that_float_round_off_breaks_is_still_a_tie():
    # token 0 attends to tokens 1 and 2 with exactly equal scores in rational arithmetic
    # (z2 - z1 is orthogonal to A z0), but the float64 scores differ by 2.8e-14
    A = [[Fraction(15, 7), 3], [3, 6]]
    Z0 = [
        [5, -4],
        [Fraction(-344, 91), -27],
        [Fraction(-617, 91), Fraction(-186, 7)],
        [Fraction(-20, 9), Fraction(-8, 9)],
        [Fraction(6, 7), Fraction(-1, 33)],
    ]
    ref, sets = exact_reference(Z0, A, Fraction(1, 2), 8)
    assert sets[0][0] == [1, 2]
    Zf, Af = np.array(Z0, dtype=float), np.array(A, dtype=float)
    S = (Zf @ Af) @ Zf.T
    assert S[0, 1] != S[0, 2]  # the case is a real test of the tolerance
    r = simulate(Zf, A=Af, alpha=0.5, steps=8)
    np.testing.assert_allclose(r.trajectories, ref, rtol=0, atol=1e-13)
    strict = simulate(
        Zf, A=Af, alpha=0.5, steps=8, rtol=0.0
    )  # without the tolerance the tie is lost
    assert np.abs(strict.trajectories - ref).max() > 0.1


def test_the_docs_tied_token_stays_tied_for_200_steps():
    # docs/hardmax.md §1.5: leaders (1, 0) and (0, 1), a token exactly tied between them and a
    # follower of (1, 0); in exact arithmetic the tied token converges to (0.5, 0.5).  The
    # follower comes within the tie tolerance of its leader (step 38): counted as a second
    # token at the leader's point, it had pulled the tied token to (0.9999, 1e-4) by step 50
    Z0 = [[1, 0], [0, 1], [Fraction(3, 10), Fraction(3, 10)], [Fraction(4, 5), Fraction(1, 10)]]
    ref, sets = exact_reference(Z0, [[1, 0], [0, 1]], Fraction(1), 200)
    assert all(C[2] == [0, 1] for C in sets)  # the tie is exact at every step
    r = simulate(np.array(Z0, dtype=float), steps=200)  # the defaults: A = I, alpha = 1
    # within 7e-13 of (0.5, 0.5) the token also ties with itself (the tie tolerance) and
    # slows down, by at most 1e-13
    np.testing.assert_allclose(r.trajectories, ref, rtol=0, atol=1e-13)
    np.testing.assert_allclose(r.trajectories[-1, 2], [0.5, 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(
        simulate(np.array(Z0, dtype=float)).trajectories, ref[:51], rtol=0, atol=1e-13
    )
    assert r.converged and r.n_clusters[-1] == 3 and r.n_leaders[-1] == 2


def test_identical_tokens_keep_their_multiplicity():
    # two copies of the leader (1, 0) (identical in Z0: leaders together) weigh twice, as in
    # exact arithmetic, where both maximize: the token at (0.3, 0.3) leaves the tie for (1, 0);
    # and a follower of the duplicated leader is counted once when it merges
    Z0 = [
        [1, 0],
        [1, 0],
        [0, 1],
        [Fraction(3, 10), Fraction(3, 10)],
        [Fraction(1, 10), Fraction(4, 5)],
        [Fraction(4, 5), Fraction(1, 10)],
    ]
    ref, sets = exact_reference(Z0, [[1, 0], [0, 1]], Fraction(1, 2), 150)
    assert sets[0][3] == [0, 1, 2]
    r = simulate(np.array(Z0, dtype=float), alpha=0.5, steps=150)
    np.testing.assert_allclose(r.trajectories, ref, rtol=0, atol=1e-14)
    assert r.leaders[-1].tolist() == [True, True, True, False, False, False]


def test_a_leader_does_not_move_at_all():
    rng = np.random.default_rng(5)
    r = simulate(rng.normal(size=(30, 3)), A=random_spd(rng, 3), alpha=1.3, steps=40)
    T, L = r.trajectories, r.leaders
    for k in range(r.steps):
        idx = np.flatnonzero(L[k])
        moved = np.linalg.norm(T[k + 1, idx] - T[k, idx], axis=1)
        assert np.all(moved <= r.same_point)
    # before any follower comes near, a leader stays bit for bit
    idx = np.flatnonzero(L[0])
    assert np.array_equal(T[1, idx], T[0, idx])


def test_leaders_are_the_tokens_that_attend_only_to_themselves():
    rng = np.random.default_rng(8)
    Z0, A = rng.normal(size=(25, 2)), random_spd(rng, 2)
    r = simulate(Z0, A=A, alpha=1.0, steps=0)
    S = (Z0 @ A) @ Z0.T
    assert np.array_equal(r.leaders[0], S.argmax(axis=1) == np.arange(25))
    # the token of largest A-norm always leads (Cauchy–Schwarz)
    assert r.leaders[0][np.argmax(np.einsum("id,de,ie->i", Z0, A, Z0))]


def test_duplicates_at_a_leader_point_lead_together_and_followers_never_join_them():
    Z0 = np.array([[1.0, 0.0], [1.0, 0.0], [0.3, 0.1], [0.0, 0.0], [-0.2, 0.9]])
    r = simulate(Z0, A=None, alpha=1.0, steps=80)
    assert r.leaders[0, 0] and r.leaders[0, 1]
    assert not r.leaders[:, 2].any()  # a follower that reaches its leader stays a follower
    assert r.n_leaders.max() == r.n_leaders[-1]
    assert r.converged


def test_scaling_z_or_a_changes_nothing_but_the_scale():
    rng = np.random.default_rng(3)
    Z0, A = rng.normal(size=(20, 3)), random_spd(rng, 3)
    r = simulate(Z0, A=A, alpha=0.8, steps=30)
    r2 = simulate(1e6 * Z0, A=1e-6 * A, alpha=0.8, steps=30)
    np.testing.assert_allclose(r2.trajectories, 1e6 * r.trajectories, rtol=1e-12, atol=0)
    assert np.array_equal(r2.leaders, r.leaders)
    assert np.array_equal(r2.cluster_labels, r.cluster_labels)


def test_steps_zero_and_the_identity_default():
    Z0 = np.array([[1.0, 2.0], [3.0, -1.0]])
    r = simulate(Z0, steps=0)
    assert r.trajectories.shape == (1, 2, 2) and not r.converged
    assert np.array_equal(r.A, np.eye(2))


def test_torch_tensors_and_lists_are_accepted():
    torch = pytest.importorskip("torch")
    Z0 = [[1.0, 0.0], [0.0, 2.0], [0.5, 0.5]]
    a = simulate(Z0, steps=5)
    b = simulate(torch.tensor(Z0, requires_grad=True), A=torch.eye(2), steps=5)
    assert np.array_equal(a.trajectories, b.trajectories)


# ------------------------------------------------------------------- bad input
def _one_line(excinfo):
    msg = str(excinfo.value)
    assert msg and "\n" not in msg
    return msg


@pytest.mark.parametrize("alpha", [0, -1.0, float("nan"), float("inf"), True, "1", None])
def test_alpha_must_be_positive(alpha):
    with pytest.raises(InvalidInputError) as e:
        simulate(np.eye(2), A=None, alpha=alpha, steps=3)
    assert "alpha must be a positive finite number" in _one_line(e)


def test_a_not_symmetric():
    with pytest.raises(InvalidMatrixError) as e:
        simulate(np.eye(2), A=np.array([[1.0, 0.5], [0.0, 1.0]]), alpha=1.0, steps=3)
    assert "A must be symmetric" in _one_line(e)


@pytest.mark.parametrize(
    "A,lam",
    [(np.diag([1.0, 0.0]), "0"), (np.array([[1.0, 2.0], [2.0, 1.0]]), "-1"), (-np.eye(2), "-1")],
)
def test_a_not_positive_definite(A, lam):
    with pytest.raises(InvalidMatrixError) as e:
        simulate(np.eye(2), A=A, alpha=1.0, steps=3)
    msg = _one_line(e)
    assert "A must be positive definite" in msg and f"smallest eigenvalue is {lam}" in msg


@pytest.mark.parametrize("A", [np.eye(3), np.eye(2)[:1], np.ones(2)])
def test_dimension_mismatch(A):
    with pytest.raises(InvalidMatrixError) as e:
        simulate(np.ones((4, 2)), A=A, alpha=1.0, steps=3)
    assert "A must be a (2, 2) matrix for tokens in R^2" in _one_line(e)


@pytest.mark.parametrize(
    "Z0,what",
    [
        (np.ones(3), "shape (n, d)"),
        (np.ones((0, 2)), "shape (n, d)"),
        (np.ones((2, 0)), "shape (n, d)"),
        (np.ones((2, 2, 2)), "shape (n, d)"),
        ([[1.0, float("nan")]], "finite"),
        ([["a", "b"]], "real numbers"),
        (None, "real numbers"),
    ],
)
def test_bad_tokens(Z0, what):
    with pytest.raises(InvalidMatrixError) as e:
        simulate(Z0, A=None, alpha=1.0, steps=3)
    assert what in _one_line(e)


@pytest.mark.parametrize("steps", [-1, 2.0, True, None])
def test_bad_steps(steps):
    with pytest.raises(InvalidInputError) as e:
        simulate(np.eye(2), A=None, alpha=1.0, steps=steps)
    assert "steps must be an int >= 0" in _one_line(e)


def test_bad_tolerances_and_labels():
    with pytest.raises(InvalidInputError):
        simulate(np.eye(2), rtol=-1)
    with pytest.raises(InvalidInputError):
        simulate(np.eye(2), cluster_tol=float("nan"))
    with pytest.raises(InvalidInputError) as e:
        simulate(np.eye(2), tokens=["a"])
    assert "one label per row of Z0 (2)" in _one_line(e)


def test_check_spd_returns_the_exactly_symmetric_part():
    A = np.array([[2.0, 1.0 + 1e-15], [1.0, 2.0]])
    S = check_spd(A, 2)
    assert np.array_equal(S, S.T)
