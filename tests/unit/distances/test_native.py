"""The C kernel of the Jensen–Shannon distances (attntopo._native) against independent references.

* its logarithm against math.log (within 1 ulp) over the whole positive normal range;
* distances from the C path against the pure-torch path (ATTNTOPO_NATIVE=0), scipy and the
  NumPy reference, on random, causal (zeros), near-identical and identical rows.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr

from attntopo import _native
from attntopo.distances import pairwise_distance, row_distances, token_distances


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a - b) / np.spacing(np.maximum(np.abs(b), np.finfo(float).tiny))


def test_kernel_is_built_here():
    # CI and `make test` build the extension; a silent fallback would hide a broken build
    if os.environ.get("ATTNTOPO_NATIVE", "").strip().lower() in {"0", "false", "no", "off"}:
        pytest.skip("ATTNTOPO_NATIVE=0 set for this run")
    assert _native.available(), _native.describe()
    assert _native.describe().startswith("C kernel")


needs_kernel = pytest.mark.skipif(not _native.available(), reason="C kernel not built")


@needs_kernel
def test_log_within_one_ulp_on_a_dense_sweep():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.exp(rng.uniform(-708, 709, 200_000)),  # every binade
            1.0 + rng.uniform(-0.3, 0.5, 100_000),  # around 1, where log is small
            np.nextafter(math.sqrt(2.0), [0.0, 4.0]),  # the reduction's boundary
            np.nextafter(math.sqrt(0.5), [0.0, 4.0]),
            [1.0, 2.0, 0.5, np.finfo(float).tiny, np.finfo(float).max, 1e-300, 2e-300],
        ]
    )
    ref = np.array([math.log(v) for v in x])
    got = _native.log(x)
    assert np.all(_ulps(got, ref) <= 1.0)
    assert got[np.flatnonzero(x == 1.0)[0]] == 0.0


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=2.2250738585072014e-308, max_value=1.7976931348623157e308))
def test_log_property_within_one_ulp(v):
    got = float(_native.log(np.array([v]))[0])
    ref = math.log(v)
    assert abs(got - ref) <= np.spacing(max(abs(ref), np.finfo(float).tiny))


@needs_kernel
def test_log_rejects_what_it_does_not_handle():
    with pytest.raises(ValueError):
        _native.log(np.array([0.0]))
    with pytest.raises(ValueError):
        _native.log(np.array([-1.0]))
    with pytest.raises(ValueError):
        _native.log(np.array([np.inf]))


def _both(fn, monkeypatch):
    """fn() with the C kernel and with the pure-torch path."""
    native = fn()
    monkeypatch.setenv("ATTNTOPO_NATIVE", "0")
    try:
        assert not _native.available()
        torch_path = fn()
    finally:
        monkeypatch.delenv("ATTNTOPO_NATIVE")
    return native, torch_path


def _rows(rng, b, n, k, scale=3.0, causal=False):
    logits = rng.normal(size=(b, n, k)) * scale
    if causal:
        mask = np.triu(np.ones((n, k), bool), 1)
        logits[:, mask] = -np.inf
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _scipy_js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """The base-2 JS divergence exactly as ``scipy.spatial.distance.jensenshannon`` computes it
    (normalize, ``rel_entr`` against the midpoint, halve), without its final square root."""
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2.0
    return float((rel_entr(p, m).sum() + rel_entr(q, m).sum()) / np.log(2.0) / 2.0)


@needs_kernel
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("base", [2.0, math.e])
def test_native_matches_torch_path_and_scipy(monkeypatch, causal, base):
    rng = np.random.default_rng(1)
    A = _rows(rng, 6, 40, 40, causal=causal)
    native, torch_path = _both(lambda: token_distances(A, base=base), monkeypatch)
    assert np.abs(native - torch_path).max() < 1e-12
    for h in range(A.shape[0]):
        for i, j in [(0, 1), (3, 17), (39, 38), (10, 25)]:
            ref = jensenshannon(A[h, i], A[h, j], base=base)
            assert abs(native[h, i, j] - ref) < 1e-12
    assert np.array_equal(native, np.swapaxes(native, -1, -2))
    assert np.all(np.diagonal(native, axis1=-2, axis2=-1) == 0.0)


@needs_kernel
def test_native_close_and_identical_rows(monkeypatch):
    rng = np.random.default_rng(2)
    base = _rows(rng, 1, 1, 30)[0, 0]
    rows = [base, base.copy()]  # identical
    for eps in (1e-3, 1e-6, 1e-9, 1e-12):  # nearly identical: the refined pairs
        r = base * (1 + eps * rng.normal(size=base.size))
        rows.append(r / r.sum())
    onehot = np.zeros(30)
    onehot[4] = 1.0
    rows += [onehot, onehot.copy()]
    A = np.array(rows)
    native, torch_path = _both(lambda: row_distances(A), monkeypatch)
    assert native[0, 1] == 0.0 and native[-1, -2] == 0.0
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            ref = pairwise_distance(A[i], A[j])
            assert native[i, j] == pytest.approx(ref, rel=1e-9, abs=1e-15)
            assert native[i, j] == pytest.approx(torch_path[i, j], rel=1e-9, abs=1e-15)


@needs_kernel
def test_native_zeros_and_subnormals_are_harmless():
    A = np.array(
        [
            [0.5, 0.5, 0.0, 0.0],
            [0.0, 0.5, 0.5, 0.0],
            [1e-310, 0.5, 0.5 - 1e-310, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )
    D = row_distances(A)
    assert np.all(np.isfinite(D))
    for i in range(4):
        for j in range(4):
            if i != j:
                assert D[i, j] == pytest.approx(pairwise_distance(A[i], A[j]), abs=1e-12)
    assert D[0, 3] == 1.0  # disjoint supports: the maximum, exactly


@needs_kernel
def test_native_paper_compat_and_row_distances(monkeypatch):
    rng = np.random.default_rng(3)
    A = _rows(rng, 3, 20, 20)
    for mode in ("notebook", "listing"):
        native, torch_path = _both(lambda: token_distances(A, paper_compat=mode), monkeypatch)
        assert np.abs(native - torch_path).max() < 1e-12
    X = _rows(rng, 4, 9, 33, causal=False)  # non-square stacks (head distances)
    native, torch_path = _both(lambda: row_distances(X), monkeypatch)
    assert np.abs(native - torch_path).max() < 1e-12


@needs_kernel
@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=0, max_value=2**31 - 1),
    st.floats(min_value=0.1, max_value=30.0),
)
# found by hypothesis (issue 33): rows 5 and 6 differ only in entries below 1e-16, where
# scipy's divergence rounds to -5e-17 and its square root gives NaN; the kernel's 8.7e-9
@example(n=7, k=4, seed=2526, scale=19.5)
def test_native_is_a_metric_in_unit_interval(n, k, seed, scale):
    rng = np.random.default_rng(seed)
    X = _rows(rng, 1, n, k, scale=scale)[0]
    D = row_distances(X)
    assert np.all((D >= 0.0) & (D <= 1.0))
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0.0)
    # triangle inequality (a metric: sqrt of JS)
    assert np.all(D[:, :, None] <= D[:, None, :] + D.T[None, :, :] + 1e-12)
    for i in range(n):
        for j in range(i + 1, n):
            # the accurate NumPy reference tightly; scipy loosely: its formula cancels for
            # near-identical rows (seen: 4e-12 off at a distance of 9e-6, where attntopo
            # agrees with a 50-digit mpmath evaluation to 1e-16 relative)
            assert D[i, j] == pytest.approx(pairwise_distance(X[i], X[j]), rel=1e-9, abs=1e-14)
            # scipy's divergence carries an absolute float64 error of ~k·eps (k <= 12 terms
            # of size <= 1), so compare divergences (squares): near d = 4e-8 the square root
            # turns that into ~1e-9 in the distance itself (seen: 1.02e-9)
            # (scipy's own divergence, before its square root: that rounds to a tiny negative
            # number for near-identical rows, and jensenshannon then returns NaN)
            assert D[i, j] ** 2 == pytest.approx(_scipy_js_divergence(X[i], X[j]), abs=1e-13)


def test_disabled_by_env(monkeypatch):
    monkeypatch.setenv("ATTNTOPO_NATIVE", "off")
    assert _native.disabled_by_env()
    assert not _native.available()
    assert "ATTNTOPO_NATIVE=0" in _native.describe()
    with pytest.raises(RuntimeError):
        _native.log(np.array([1.0]))


@pytest.mark.parametrize("native", [True, False])
def test_distances_inside_inference_mode_on_worker_threads(monkeypatch, native):
    """A model's forward hook runs under torch.inference_mode: the worker threads must run in
    the caller's mode, or their in-place writes into the output fail (pure-torch path)."""
    from scipy.spatial.distance import jensenshannon

    from attntopo.distances import row_distances

    if not native:
        monkeypatch.setenv("ATTNTOPO_NATIVE", "0")
    elif not _native.available():
        pytest.skip("the C kernel is not built here")
    rng = np.random.default_rng(3)
    P = _rows(rng, 3, 40, 40)
    with torch.inference_mode():
        x = torch.from_numpy(P).clone()  # an inference tensor, as in a forward hook
        D = row_distances(x, n_jobs=2, chunk_elements=4096)
    ref = np.array([[[jensenshannon(p, q, base=2) for q in M] for p in M] for M in P])
    np.testing.assert_allclose(D, ref, atol=1e-7)


# ------------------------------------------------ issue 36: pairs over the overlap of two rows


def _js_fast_bound(k: int) -> float:
    """Derived bound on the absolute error (nats) of the kernel's fast divergence of one pair
    over ``k`` keys (tests/README.md, "The Jensen–Shannon kernel in float64"): each of the three
    sums runs in 8 fixed lanes of at most ``k/8`` terms (``γ = (k/8 + 4) ε``, Higham §3.1) over
    terms whose absolute values add to at most ``ln k + 1`` (``p ln p``, ``q ln q``) and
    ``2 ln k + 2`` (``u ln u``, ``Σ u = 2``); a prefix-sum difference adds ``2 ε`` of each
    compensated prefix (``≤ ln k``), and the halving and the ``ln 2`` term a few ``ε``."""
    eps = 2.0**-53
    terms = 4 * math.log(max(k, 2)) + 4
    return 0.5 * ((k / 8 + 4) * eps * terms + 8 * eps * math.log(max(k, 2))) + 8 * eps


def _within_derived_bound(D: np.ndarray, X: np.ndarray) -> None:
    """Every distance of ``D`` (rows of ``X``) against the cancellation-free NumPy reference: the
    fast pairs within the bound on the divergence carried through the square root
    (``|√(x+δ) − √x| ≤ δ / (√(x+δ) + √x)``, base 2), and within JS_EVAL_ATOL; the pairs under
    the cutoff (recomputed) within 1e-9 relative, as before."""
    from _tolerances import JS_EVAL_ATOL

    k = X.shape[-1]
    delta = _js_fast_bound(k) / math.log(2.0)
    for i in range(X.shape[0]):
        for j in range(i + 1, X.shape[0]):
            ref = pairwise_distance(X[i], X[j])
            got = D[i, j]
            if ref * ref * math.log(2.0) > 2e-6:  # clearly above the cutoff: the fast sums
                assert abs(got - ref) <= delta / (got + ref) + 4e-16 * ref, (i, j, got, ref)
                assert abs(got - ref) <= JS_EVAL_ATOL
            else:
                assert got == pytest.approx(ref, rel=1e-9, abs=1e-15), (i, j)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("n", [9, 64, 200])
def test_causal_pairs_over_their_overlap_within_the_derived_bound(monkeypatch, n, native):
    """Causal rows: the pair sum runs over the earlier row's keys and the later row's part there
    comes from its prefix sums (C kernel; the torch path sums a tile over its group's keys, with
    the per-row sums over the same keys); the distances against the accurate reference, also for
    pairs just above the cutoff (a later row that is an earlier one plus a little mass beyond
    it)."""
    if not native:
        monkeypatch.setenv("ATTNTOPO_NATIVE", "0")
    elif not _native.available():
        pytest.skip("the C kernel is not built here")
    rng = np.random.default_rng(n)
    X = _rows(rng, 1, n, n, causal=True)[0]
    for i, j, eps in [(2, 5, 3e-6), (n // 2, n - 1, 1e-5), (1, n // 3, 1e-4), (n - 3, n - 2, 3e-7)]:
        row = X[i] * (1 - eps)
        row[i + 1 : j + 1] = eps / (j - i)  # JS ≈ ½ ln 2 · eps · …: around the cutoff
        X[j] = row
    D = row_distances(X)
    _within_derived_bound(D, X)
    assert D[2, 5] > 0


@needs_kernel
@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=2, max_value=14),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=0, max_value=2**31 - 1),
)
# two rows that may share no key
@example(m=2, k=4, seed=0)
def test_rows_with_zeros_anywhere_are_within_the_derived_bound(m, k, seed):
    """Rows nonzero on a random interval with random interior zeros (leading and trailing
    zeros: a row whose nonzero keys all lie in the overlap keeps its whole sum, the other its
    prefix sums on the overlap), against the accurate reference."""
    rng = np.random.default_rng(seed)
    X = np.zeros((m, k))
    for i in range(m):
        lo = int(rng.integers(0, k))
        hi = int(rng.integers(lo + 1, k + 1))
        w = rng.dirichlet(np.full(hi - lo, 0.7))
        w[rng.random(hi - lo) < 0.2] = 0.0
        w[0] += 1e-3  # the row's first key stays nonzero
        X[i, lo:hi] = w / w.sum()
    if seed % 3 == 0 and m > 2:
        X[1] = X[0]  # identical rows: exactly 0
    D = row_distances(X)
    _within_derived_bound(D, X)
    if seed % 3 == 0 and m > 2:
        assert D[0, 1] == 0.0
    disjoint = np.array([[not np.any((X[i] > 0) & (X[j] > 0)) for j in range(m)] for i in range(m)])
    # the maximum (½ ln 2 (M_p + M_q) with masses 1 within round-off)
    np.testing.assert_allclose(D[disjoint & ~np.eye(m, dtype=bool)], 1.0, rtol=0, atol=1e-15)


@needs_kernel
@pytest.mark.parametrize("eps", [1e-13, 1e-10, 1e-7, 1e-4])
def test_nearly_identical_causal_rows_are_recomputed_accurately(eps):
    """A later causal row that nearly equals an earlier one (a little mass beyond it): under
    the cutoff the cancellation-free form gives the 50-digit value to 1e-10 relative."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    rng = np.random.default_rng(13)
    X = _rows(rng, 1, 48, 48, causal=True)[0]
    row = X[20] * (1 - eps)
    row[21:30] = eps / 9
    X[40] = row
    p, q = X[20], X[40]
    s = mpmath.mpf(0)
    for x, y in zip(p, q):
        x, y = mpmath.mpf(float(x)), mpmath.mpf(float(y))
        mid = (x + y) / 2
        s += (x * mpmath.log(x / mid) if x > 0 else 0) + (y * mpmath.log(y / mid) if y > 0 else 0)
    ref = float(mpmath.sqrt(s / 2 / mpmath.log(2)))
    D = row_distances(X)
    assert D[20, 40] == pytest.approx(ref, rel=1e-10, abs=0)
