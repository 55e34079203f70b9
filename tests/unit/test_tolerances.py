"""The inequalities behind tests/_tolerances.py (derivations in tests/README.md), as property
tests against independent implementations: SciPy's Jensen–Shannon distance and softmax,
gudhi's bottleneck distance."""

from __future__ import annotations

import math

import gudhi
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import jensenshannon
from scipy.special import softmax

import attntopo as at
from _tolerances import (
    MINILM,
    SMOLLM2,
    SOFTMAX_JS_LIPSCHITZ,
    TINY,
    U,
    diagram_atol,
    distance_atol,
    forward_tolerance,
    js_distance_bound,
    js_distance_bound_tv,
)

# SciPy's JS divergence is a difference of sums of order 1: about 1e-15 absolute, which the
# square root turns into up to ~3e-8 for (nearly) identical rows.  Compare squares.
JS_SLACK = 1e-13


def _js2(p, q) -> float:
    """Squared JS distance, base 2 (= the divergence in bits), by SciPy."""
    with np.errstate(invalid="ignore"):
        d = jensenshannon(p, q, base=2)
    assume(np.isfinite(d))  # SciPy returns NaN when round-off makes the divergence negative
    return float(d) ** 2


@st.composite
def distributions(draw, n=None, zeros=True):
    n = draw(st.integers(1, 12)) if n is None else n
    lo = 0.0 if zeros else 1e-6
    x = draw(arrays(np.float64, n, elements=st.floats(lo, 1.0)))
    assume(x.sum() > 0)
    return x / x.sum()


@st.composite
def pairs(draw, zeros=True):
    """Two distributions on the same points: unrelated, or a relative perturbation."""
    n = draw(st.integers(1, 12))
    p = draw(distributions(n, zeros))
    if draw(st.booleans()):
        q = draw(distributions(n, zeros))
    else:
        scale = draw(st.sampled_from([1e-6, 1e-4, 1e-2, 0.3]))
        r = draw(arrays(np.float64, n, elements=st.floats(-1.0, 1.0)))
        q = p * (1 + scale * r)
        q = q / q.sum()
    return p, q


def _eta(p, q, alpha=0.0) -> float:
    """The smallest eta with |p_i - q_i| <= eta · max(p_i, q_i) + alpha for every i."""
    m = np.maximum(p, q)
    ex = np.maximum(np.abs(p - q) - alpha, 0.0)
    return float(np.max(np.where(m > 0, ex / np.where(m > 0, m, 1.0), 0.0), initial=0.0))


# ------------------------------------------------------------ JS against TV and Δ
@settings(max_examples=300, deadline=None)
@given(pairs())
def test_js_below_half_triangular_discrimination_below_tv(pq):
    """JS_2(p, q) <= ½ Σ (p-q)²/(p+q) <= TV(p, q): hence d(p, q) <= sqrt(TV(p, q))."""
    p, q = pq
    s = p + q
    half_delta = 0.5 * float(np.sum(np.where(s > 0, (p - q) ** 2 / np.where(s > 0, s, 1.0), 0.0)))
    tv = 0.5 * float(np.abs(p - q).sum())
    assert _js2(p, q) <= half_delta + JS_SLACK
    assert half_delta <= tv + 1e-15
    assert _js2(p, q) <= js_distance_bound_tv(float(np.abs(p - q).max()), len(p)) ** 2 + JS_SLACK


@pytest.mark.parametrize("n", [2, 5, 40])
def test_the_constant_one_is_tight(n):
    """Disjoint supports: JS_2 = ½Δ = TV = 1, so sqrt(TV) cannot be improved by a factor."""
    p = np.r_[np.full(n, 1 / n), np.zeros(n)]
    q = p[::-1]
    assert jensenshannon(p, q, base=2) ** 2 == pytest.approx(1.0, abs=1e-12)
    assert 0.5 * np.abs(p - q).sum() == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(pairs(), st.sampled_from([0.0, 1e-9, 1e-4, 1e-2]))
def test_js_distance_under_a_relative_perturbation(pq, alpha):
    """|p_i - q_i| <= eta·max(p_i, q_i) + alpha  =>
    JS_2 <= eta²(1 + n alpha/2)/(2-eta) + 1.5 n alpha."""
    p, q = pq
    eta = _eta(p, q, alpha)
    bound = js_distance_bound(eta, len(p), alpha)
    assert _js2(p, q) <= bound**2 + JS_SLACK


def test_relative_bound_is_nearly_tight_for_small_perturbations():
    """For q = p(1 ± eta) the distance is about eta/2
    (the bound says eta/sqrt 2): not loose by orders."""
    p = np.full(10, 0.1)
    eta = 1e-3
    q = p * (1 + eta * np.r_[np.ones(5), -np.ones(5)])
    d = jensenshannon(p, q, base=2)
    assert 0.3 * js_distance_bound(eta, 10) <= d <= js_distance_bound(eta, 10)


@settings(max_examples=200, deadline=None)
@given(pairs(zeros=False), st.integers(0, 2**32 - 1), st.sampled_from([1e-7, 1e-4, 1e-2]))
def test_distance_atol_bounds_the_change_of_a_distance(pq, seed, eta):
    """Weights perturbed within eta (relative) move d(p, q) by at most distance_atol(eta, n)."""
    p, q = pq
    rng = np.random.default_rng(seed)
    # p' and q' with |p_i - p'_i| <= eta·max(p_i, p'_i):
    # a factor in [1 - eta/2, 1 + eta/2], renormalized
    pp = p * (1 + eta / 2 * rng.uniform(-1, 1, p.shape))
    qq = q * (1 + eta / 2 * rng.uniform(-1, 1, q.shape))
    pp, qq = pp / pp.sum(), qq / qq.sum()
    e = max(_eta(p, pp), _eta(q, qq))
    assert e <= eta + 1e-12
    change = abs(math.sqrt(_js2(p, q)) - math.sqrt(_js2(pp, qq)))
    assert change <= distance_atol(e, len(p)) + 1e-7  # SciPy's own error near zero


# ------------------------------------------------------------------------ softmax
@settings(max_examples=300, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 16), elements=st.floats(-40, 40)),
    st.integers(0, 2**32 - 1),
    st.sampled_from([1e-6, 1e-3, 0.1, 1.0]),
)
def test_softmax_is_half_lipschitz_and_relatively_stable(z, seed, eps):
    """||softmax(z+δ) - softmax(z)||_inf <= ||δ||_inf / 2 and |p'/p - 1| <= exp(2||δ||_inf) - 1."""
    delta = np.random.default_rng(seed).uniform(-eps, eps, z.shape)
    p, pp = softmax(z), softmax(z + delta)
    d = float(np.abs(delta).max(initial=0.0))
    assert np.abs(pp - p).max() <= d / 2 + 4e-16
    big = p > 1e-300
    assert np.all(np.abs(pp[big] / p[big] - 1) <= math.expm1(2 * d) + 1e-12)


# --------------------------------------------------------------- bottleneck stability
def _bottleneck_gudhi(a, b) -> float:
    """Bottleneck of two diagrams of one dimension: gudhi on the finite points, the
    essential classes matched in sorted order of birth."""
    fa, fb = a[np.isfinite(a[:, 1])], b[np.isfinite(b[:, 1])]
    ia, ib = np.sort(a[~np.isfinite(a[:, 1]), 0]), np.sort(b[~np.isfinite(b[:, 1]), 0])
    assert len(ia) == len(ib)
    return max(gudhi.bottleneck_distance(fa, fb, 0.0), float(np.abs(ia - ib).max(initial=0.0)))


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 10), st.integers(0, 2**32 - 1), st.sampled_from([1e-6, 1e-3, 5e-2]))
def test_rips_diagrams_are_stable(n, seed, delta):
    """bottleneck(dgm(D), dgm(D')) <= ||D - D'||_inf, in H0 and H1 (stability theorem)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    D /= D.max()
    E = np.triu(rng.uniform(-delta, delta, (n, n)), 1)
    D2 = np.clip(D + E + E.T, 0.0, None)
    np.fill_diagonal(D2, 0.0)
    sup = float(np.abs(D2 - D).max())
    a, b = at.persistence(D, maxdim=1), at.persistence(D2, maxdim=1)
    for dim in (0, 1):
        got = _bottleneck_gudhi(
            np.asarray(a[dim]).reshape(-1, 2), np.asarray(b[dim]).reshape(-1, 2)
        )
        assert got <= diagram_atol(sup, max_value=max(D.max(), D2.max())) + 1e-12


# ------------------------------------------------------------------ the constants
def test_constants_follow_the_formula():
    t = forward_tolerance(6, 1536, 32, 512)
    dz = 6 * math.sqrt(1536) * math.sqrt(32) * U
    assert t == MINILM and t.logit_atol == pytest.approx(dz)
    assert t.weights_atol == pytest.approx(dz + 2 * (math.sqrt(512) + 4) * U)
    assert t.weights_rtol == pytest.approx(4 * dz, rel=0.02)
    assert t.distance_atol == pytest.approx(
        2 * t.weights_rtol / math.sqrt(2 - t.weights_rtol), rel=1e-6
    )
    assert t.bottleneck_atol == 2 * t.diagram_atol > 2 * t.distance_atol
    assert SMOLLM2.logit_atol == pytest.approx(30 * math.sqrt(1536) * 8 * U)
    # orders of magnitude: far above float32 round-off, far below a padding leak or bfloat16 (~1e-2)
    for tol in (MINILM, SMOLLM2):
        assert 100 * U < tol.weights_atol < 1e-3 and tol.distance_atol < 5e-3
    assert js_distance_bound(0.0, 512, 4 * TINY) < 1e-15


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(2, 40),
    scale=st.sampled_from([0.1, 1.0, 5.0, 30.0]),
    size=st.sampled_from([1e-4, 1e-2, 0.3, 3.0]),
    two_valued=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_softmax_js_is_lipschitz_in_the_range_of_the_logit_perturbation(
    n, scale, size, two_valued, seed
):
    """d_JS(softmax(z), softmax(z + δ)) ≤ range(δ) / sqrt(8 ln 2) (base 2): the link that turns
    a low-precision pass's logit errors into distance errors (tests/README.md)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * scale
    d = rng.normal(size=n) * size
    if two_valued:  # the extreme perturbations: two values only
        d = np.where(rng.random(n) < 0.5, d.max(), d.min())
    spread = float(d.max() - d.min())
    assume(spread > 1e-12)
    p, q = softmax(z), softmax(z + d)
    js = jensenshannon(p, q, base=2)
    js = 0.0 if not np.isfinite(js) else float(js)  # identical rows: scipy's sqrt of -0
    assert js <= SOFTMAX_JS_LIPSCHITZ * spread * (1 + 1e-9) + 1e-12


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 40),
    scale=st.sampled_from([0.1, 1.0, 5.0, 30.0]),
    size=st.sampled_from([1e-4, 1e-2, 0.3, 3.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_renormalized_subset_moves_like_the_softmax_of_its_logits(n, scale, size, seed):
    """A row restricted to some tokens and divided by its kept sum (the ``prompt`` set's rows,
    ``drop_special``) is the softmax of the kept logits: between two passes its JS distance is
    within ``range_S(δ) / sqrt(8 ln 2)`` and each kept weight moves by a factor within
    ``exp(±range_S(δ))``, the two links of ``_tolerances.low_precision_subset_bounds``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n) * scale
    d = rng.normal(size=n) * size
    keep = np.flatnonzero(rng.random(n) < 0.6)
    assume(keep.size >= 1)
    p, q = softmax(z), softmax(z + d)
    ps, qs = p[keep] / p[keep].sum(), q[keep] / q[keep].sum()
    spread = float(np.ptp(d[keep]))
    js = jensenshannon(ps, qs, base=2)
    js = 0.0 if not np.isfinite(js) else float(js)  # identical rows: scipy's sqrt of -0
    assert js <= SOFTMAX_JS_LIPSCHITZ * spread * (1 + 1e-9) + 1e-12
    ratio = qs / ps
    assert (ratio <= math.exp(spread) * (1 + 1e-12)).all()
    assert (ratio >= math.exp(-spread) * (1 - 1e-12)).all()
