"""Distances from chosen rows to all rows (``token_distances_tensor(x, rows=…)``): the ``r·n``
pairs the prompt score needs, against the full matrix's rows and scipy, on both paths."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from _feature_refs import attention_matrices
from attntopo import _native
from attntopo.distances import token_distances, token_distances_tensor
from attntopo.errors import InvalidInputError, InvalidMatrixError, OutOfRangeError


@pytest.fixture(params=["c-kernel", "pure-torch"])
def js_path(request, monkeypatch):
    """The C kernel (when built) and the pure-torch path (the one a GPU tensor takes)."""
    if request.param == "pure-torch":
        monkeypatch.setenv("ATTNTOPO_NATIVE", "0")
    elif not _native.available():
        pytest.skip("the C kernel is not built here")
    return request.param


def _softmax_rows(rng, b, n, scale=3.0, causal=False):
    logits = rng.normal(size=(b, n, n)) * scale
    if causal:
        logits[:, np.triu(np.ones((n, n), bool), 1)] = -np.inf
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _check_rows(A: np.ndarray, rows: list[int], js_path: str) -> np.ndarray:
    """The rows' distances against the full matrix's rows: the same bits with the C kernel
    (one per-pair routine for both), within the torch path's float64 accuracy otherwise
    (its tiles sum over other key sets: ~1e-16 in a divergence; the documented worst case of a
    distance is ~1e-11 relative, just above the cutoff)."""
    full = token_distances(A)
    got = token_distances_tensor(A, rows=rows)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    got = got.numpy()
    assert got.shape == A.shape[:-2] + (len(rows), A.shape[-1])
    want = full[..., rows, :]
    if js_path == "c-kernel":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-14)
    # exactly 0 from a row to itself, and the pairs of two chosen rows exactly symmetric
    for a, i in enumerate(rows):
        assert np.all(got[..., a, i] == 0.0)
        for b, j in enumerate(rows):
            assert np.array_equal(got[..., a, j], got[..., b, i])
    return got


@pytest.mark.parametrize("causal", [False, True])
def test_rows_match_full_matrix_and_scipy(js_path, causal):
    rng = np.random.default_rng(5)
    n = 45  # more than two row groups of the torch tiles
    A = _softmax_rows(rng, 3, n, causal=causal)
    A[1, 40] = A[1, 7]  # identical rows (one chosen, one not): exactly 0 apart
    A[2, 41] = A[2, 42]  # two chosen identical rows
    rows = [38, 39, 40, 41, 42, 43, 44]  # a response after its prompt
    got = _check_rows(A, rows, js_path)
    assert got[1, 2, 7] == 0.0 and got[2, 3, 42] == 0.0 and got[2, 4, 41] == 0.0
    for b in range(3):
        for a, i in enumerate(rows):
            for j in (0, 3, 17, 38, 44):
                assert got[b, a, j] == pytest.approx(
                    jensenshannon(A[b, i], A[b, j], base=2), abs=1e-12
                )


def test_rows_in_any_order_and_lead_dims(js_path):
    rng = np.random.default_rng(6)
    A = _softmax_rows(rng, 6, 20, causal=True).reshape(2, 3, 20, 20)
    _check_rows(A, [19, 3, 0, 11, 12], js_path)
    _check_rows(A, list(range(20)), js_path)
    got = token_distances_tensor(A, rows=[-1]).numpy()  # negative: from the end
    np.testing.assert_array_equal(got, token_distances_tensor(A, rows=[19]).numpy())
    assert token_distances_tensor(A, rows=[]).shape == (2, 3, 0, 20)


def test_rows_of_a_float32_tensor_and_near_identical_rows(js_path):
    """float32 input (the models' dtype) and pairs under the cutoff (recomputed with the
    cancellation-free form): the same numbers as the full matrix."""
    rng = np.random.default_rng(7)
    A = _softmax_rows(rng, 2, 30)
    for eps in (1e-4, 1e-7, 1e-10):
        i = int(rng.integers(0, 25))
        r = A[:, i] * (1 + eps * rng.normal(size=(2, 30)))
        A[:, 25 + int(rng.integers(0, 5))] = r / r.sum(-1, keepdims=True)
    _check_rows(A, [25, 26, 27, 28, 29], js_path)
    t = torch.from_numpy(A.astype(np.float32))
    full = token_distances_tensor(t).numpy()
    got = token_distances_tensor(t, rows=[25, 26, 27, 28, 29]).numpy()
    tol = {"rtol": 0, "atol": 0} if js_path == "c-kernel" else {"rtol": 1e-11, "atol": 1e-14}
    np.testing.assert_allclose(got, full[:, 25:], **tol)


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=11, max_b=3), st.integers(0, 2**31 - 1))
# a single token (one row, chosen)
@example(A=np.ones((1, 1, 1)), seed=0)
def test_rows_property_both_paths(A, seed):
    """Any stochastic matrices with exact zeros and ties, any choice of distinct rows: the C
    kernel's rows are the full matrix's bits, the torch path's agree within float64 accuracy."""
    n = A.shape[-1]
    rng = np.random.default_rng(seed)
    rows = [int(i) for i in rng.permutation(n)[: int(rng.integers(1, n + 1))]]
    with pytest.MonkeyPatch.context() as mp:
        if _native.available():
            _check_rows(A, rows, "c-kernel")
        mp.setenv("ATTNTOPO_NATIVE", "0")
        _check_rows(A, rows, "pure-torch")


def test_rows_never_compute_the_full_matrix(distance_shapes):
    """The chosen rows' pairs only: the driver is asked for (B, r, n), no n × n output."""
    A = _softmax_rows(np.random.default_rng(8), 2, 16)
    token_distances_tensor(A, rows=[14, 15])
    assert distance_shapes == [(2, 2, 16)]


@pytest.mark.parametrize(
    ("rows", "exc", "words"),
    [
        ([3, 3], InvalidInputError, "row indices must be distinct"),
        ([16], OutOfRangeError, "rows 16 is out of range: the matrix has 16 rows"),
        (["a"], OutOfRangeError, "rows must be a row index"),
    ],
)
def test_bad_rows_are_one_clear_line(rows, exc, words):
    A = _softmax_rows(np.random.default_rng(9), 1, 16)
    with pytest.raises(exc, match=words):
        token_distances_tensor(A, rows=rows)


def test_rows_check_the_matrix_as_the_full_path_does():
    bad = np.full((1, 4, 4), 0.3)
    with pytest.raises(InvalidMatrixError, match="sums to 1.2"):
        token_distances_tensor(bad, rows=[3])


def _check_nearest(A: np.ndarray, rows: list[int], nearest: int, js_path: str) -> float:
    """``nearest``: each chosen row's minimum over the columns before ``nearest`` that are not
    chosen is the full matrix's minimum (the same bits with the C kernel), every other entry
    is the full matrix's, and a skipped pair reads as the largest distance (1) and is at least
    that minimum.  Returns the share of skipped pairs."""
    full = token_distances(A)[..., rows, :]
    got = token_distances_tensor(A, rows=rows, nearest=nearest).numpy()
    assert got.shape == full.shape
    block = np.setdiff1d(np.arange(min(nearest, A.shape[-1])), rows)
    rest = np.setdiff1d(np.arange(A.shape[-1]), block)
    tol = {"rtol": 0, "atol": 0} if js_path == "c-kernel" else {"rtol": 1e-11, "atol": 1e-14}
    np.testing.assert_allclose(got[..., rest], full[..., rest], **tol)
    if block.size == 0:
        return 0.0
    g, f = got[..., block], full[..., block]
    np.testing.assert_allclose(g.min(-1), f.min(-1), **tol)
    if js_path != "c-kernel":  # no kernel for chosen rows there: every pair computed
        np.testing.assert_allclose(g, f, **tol)
        return 0.0
    skipped = g != f
    assert np.all(g[skipped] == 1.0)
    assert np.all(f[skipped] >= np.broadcast_to(f.min(-1, keepdims=True), f.shape)[skipped])
    return float(skipped.mean())


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=11, max_b=3), st.integers(0, 2**31 - 1))
def test_nearest_keeps_every_minimum_both_paths(A, seed):
    """Any stochastic matrices (exact zeros, ties), chosen rows anywhere, any ``nearest``: the
    minimum the prompt score reads is unchanged, bit for bit with the C kernel."""
    n = A.shape[-1]
    rng = np.random.default_rng(seed)
    rows = [int(i) for i in rng.permutation(n)[: int(rng.integers(1, n + 1))]]
    nearest = int(rng.integers(0, n + 2))
    with pytest.MonkeyPatch.context() as mp:
        if _native.available():
            _check_nearest(A, rows, nearest, "c-kernel")
        mp.setenv("ATTNTOPO_NATIVE", "0")
        assert _check_nearest(A, rows, nearest, "pure-torch") == 0.0  # computes every pair


def test_nearest_skips_pairs_of_flat_causal_rows_and_keeps_close_pairs(js_path):
    """Nearly uniform causal rows (a random-weight model's attention): the answer rows' mass
    beyond a prompt row's keys bounds their divergence, so most prompt pairs are skipped; a
    prompt row nearly identical to an answer row (under the cutoff, recomputed accurately)
    is still the minimum, unchanged."""
    rng = np.random.default_rng(11)
    n, k = 96, 84
    A = np.tril(np.exp(rng.normal(0.0, 0.05, size=(2, n, n))))
    A /= A.sum(-1, keepdims=True)
    A[1, 60] = 0.0
    A[1, 60, :91] = A[1, 90, :91] * (1 + 1e-9 * rng.normal(size=91))  # reaches key 90
    A[1, 60] /= A[1, 60].sum()
    share = _check_nearest(A, list(range(k, n)), k, js_path)
    if js_path == "c-kernel":
        assert share > 0.5
    got = token_distances_tensor(A, rows=list(range(k, n)), nearest=k).numpy()
    assert got[1, 90 - k, :k].argmin() == 60 and got[1, 90 - k, 60] < 1e-4


def _js_nats(p: np.ndarray, q: np.ndarray) -> float:
    """The kernel's divergence of two nonnegative rows of any masses, by its definition:
    ½ Σ p ln(2p / (p + q)) + q ln(2q / (p + q)), 0 ln 0 = 0 (a direct formula)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lm = np.log(p + q) - np.log(2.0)  # apart, so that a subnormal entry stays finite
        a = np.where(p > 0, p * (np.log(p) - lm), 0.0)
        b = np.where(q > 0, q * (np.log(q) - lm), 0.0)
    return 0.5 * float(a.sum() + b.sum())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 10), min_size=1, max_size=12).flatmap(
        lambda p: st.tuples(
            st.just(p), st.lists(st.floats(0, 10), min_size=len(p), max_size=len(p))
        )
    )
)
@example(([0.5 + 1e-3, 0.5 - 1e-3], [0.5 - 1e-3, 0.5 + 1e-3]))
def test_pinsker_bound_of_the_nearest_kernel_holds_for_rows_of_any_mass(pq):
    """The C kernel's second lower bound (jsd.c, pinsker_bound): for nonnegative rows of
    masses a, b > 0, JS(p, q) >= ¼ ab/(a + b) ‖p/a − q/b‖₁² (nats), checked against the
    direct formula; for two-point rows near each other it is nearly an equality, so the
    constant cannot be larger."""
    p, q = (np.asarray(v, dtype=np.float64) for v in pq)
    a, b = p.sum(), q.sum()
    if not (a > 0 and b > 0):
        return
    bound = 0.25 * a * b / (a + b) * np.abs(p / a - q / b).sum() ** 2
    js = _js_nats(p, q)
    assert bound <= js + 1e-13 * (a + b) * p.size  # the direct formula's own rounding
    if p.size == 2 and abs(p[0] - q[1]) < 1e-12 and abs(p[0] - 0.5 - 1e-3) < 1e-12:
        assert bound > 0.999 * js  # nearly tight: the constant is the largest that holds


def test_nearest_keeps_a_minimum_whose_pinsker_bound_is_nearly_tight(js_path):
    """Two-point rows (½ ± ε) make the Pinsker bound nearly an equality.  The prompt rows are
    visited from the last down: the last is close (ε 0.0101), the middle ones farther (ε
    0.0115 to 0.012: divergences 1.3 to 1.4x, skipped by the bound) and the first, visited
    last, the nearest (ε 0.010, 0.98x): a bound with a constant 1.5x too large would skip it."""
    n, k = 12, 10
    eps = np.concatenate([[0.010], np.linspace(0.0115, 0.012, k - 2), [0.0101], [0.0, 0.0005]])
    A = np.zeros((1, n, n))
    A[0, :, 0], A[0, :, 1] = 0.5 + eps, 0.5 - eps
    share = _check_nearest(A, [k, k + 1], k, js_path)
    got = token_distances_tensor(A, rows=[k, k + 1], nearest=k).numpy()
    assert got[0, 0, :k].argmin() == 0
    if js_path == "c-kernel":
        assert share > 0.3  # the bound does skip pairs here
