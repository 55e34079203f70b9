"""The partial Jensen–Shannon paths (issue 36) on the edge cases their other tests draw rarely
or never, against an exact reference (``_js_edges.exact_js``: 40-digit arithmetic): the full
matrix, the chosen rows (``token_distances_tensor(rows=)``) and the nearest prompt token
(``nearest=``), with the C kernel and with the torch path (the one a GPU tensor takes).

Tolerance: ``JS_EVAL_ATOL`` per distance, attntopo's float64 evaluation (tests/README.md, "The
Jensen–Shannon kernel in float64"): the fast sums' bound for a pair above the recomputation
cutoff, and far more than the recomputed pairs' relative 1e-15 below it.  Without that
recomputation, nearly identical rows would be off by ~1e-8."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from _js_edges import edge_stacks, exact_js, on_each_path
from _tolerances import JS_EVAL_ATOL
from attntopo.distances import token_distances, token_distances_tensor
from attntopo.errors import InvalidMatrixError


@settings(max_examples=60, deadline=None)
@given(edge_stacks(max_n=9, max_b=3), st.integers(0, 2**31 - 1))
def test_full_rows_and_nearest_equal_the_exact_distances(A, seed):
    """Every entry the three entry points compute is within JS_EVAL_ATOL of the exact distance;
    a row's distance to itself and to an identical row is exactly 0; the nearest prompt token's
    distance is the exact minimum and a skipped pair (the largest distance, 1) is never nearer."""
    B, n = A.shape[0], A.shape[-1]
    ref = np.stack([exact_js(A[h].astype(np.float64)) for h in range(B)])
    rng = np.random.default_rng(seed)
    rows = [int(i) for i in rng.permutation(n)[: int(rng.integers(1, n + 1))]]
    k = int(rng.integers(1, n)) if n > 1 else 0  # a prompt of k tokens, the rest the answer
    same = np.array([[[np.array_equal(a, b) for b in M] for a in M] for M in A])

    def check(path: str) -> None:
        full = token_distances(A)
        np.testing.assert_allclose(full, ref, rtol=0, atol=JS_EVAL_ATOL, err_msg=path)
        assert np.all(full[same] == 0.0), path
        got = token_distances_tensor(torch.from_numpy(A), rows=rows).numpy()
        np.testing.assert_allclose(got, ref[:, rows], rtol=0, atol=JS_EVAL_ATOL, err_msg=path)
        assert np.all(got[same[:, rows]] == 0.0), path
        if k == 0:
            return
        near = token_distances_tensor(A, rows=list(range(k, n)), nearest=k).numpy()
        want = ref[:, k:]
        np.testing.assert_allclose(
            near[..., k:], want[..., k:], rtol=0, atol=JS_EVAL_ATOL, err_msg=path
        )
        lo = want[..., :k].min(-1)
        np.testing.assert_allclose(
            near[..., :k].min(-1), lo, rtol=0, atol=JS_EVAL_ATOL, err_msg=path
        )
        off = np.abs(near[..., :k] - want[..., :k]) > JS_EVAL_ATOL
        assert np.all(near[..., :k][off] == 1.0), path  # skipped: read as the largest
        assert np.all(want[..., :k][off] >= np.broadcast_to(lo[..., None], off.shape)[off])

    on_each_path(check)


@settings(max_examples=25, deadline=None)
@given(edge_stacks(min_n=10, max_n=70, max_b=2, tail=3), st.integers(1, 3))
def test_an_answer_after_a_long_prompt_equals_the_exact_distances(A, r):
    """Rows longer than the kernel's 8 lanes (a pair's sum, the prefix sums, the Pinsker pass:
    full lane blocks and a tail), an answer of ``r`` tokens after a long prompt, its rows nearly
    or exactly equal to a prompt row or a causal prompt row plus a little beyond: the answer
    rows' distances (``rows=``, any order), the nearest prompt token's (``nearest=``) and the
    full matrix's rows, within JS_EVAL_ATOL of the exact ones."""
    B, n = A.shape[0], A.shape[-1]
    k = n - r
    answer = list(range(k, n))
    ref = np.stack([exact_js(A[h].astype(np.float64), rows=answer) for h in range(B)])
    order = answer[::-1]

    def check(path: str) -> None:
        tol = {"rtol": 0, "atol": JS_EVAL_ATOL, "err_msg": path}
        np.testing.assert_allclose(token_distances(A)[:, k:], ref, **tol)
        got = token_distances_tensor(A, rows=order).numpy()
        np.testing.assert_allclose(got, ref[:, ::-1], **tol)
        near = token_distances_tensor(A, rows=answer, nearest=k).numpy()
        np.testing.assert_allclose(near[..., k:], ref[..., k:], **tol)
        np.testing.assert_allclose(near[..., :k].min(-1), ref[..., :k].min(-1), **tol)

    on_each_path(check)


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("sum", "row 2 sums to 1.002, not 1 within 0.001"),
        ("negative", "has a negative entry (-0.01)"),
        ("nan", "contains NaN or inf"),
        ("bfloat16", "sums to 1.00"),
    ],
)
def test_bad_rows_are_refused_in_one_line_by_the_partial_paths(case, words):
    """Rows the full matrix refuses are refused by the chosen rows' and the nearest prompt
    token's paths too, in the same one line, on both paths (a bad row may be a prompt row,
    which only the nearest search reads)."""
    rng = np.random.default_rng(1)
    A = np.tril(np.exp(rng.standard_normal((2, 6, 6))))
    A /= A.sum(-1, keepdims=True)
    if case == "sum":
        A[1, 2] *= 1.002
    elif case == "negative":
        A[1, 2, 0] = -0.01
    elif case == "nan":
        A[1, 2, 1] = np.nan
    x = torch.from_numpy(A)
    if case == "bfloat16":  # a bfloat16 softmax's rows, not normalized: off by up to 2^-8
        x = torch.full((1, 6, 6), 1 / 6, dtype=torch.bfloat16)

    def check(path: str) -> None:
        for kw in ({}, {"rows": [4, 5]}, {"rows": [4, 5], "nearest": 4}):
            with pytest.raises(InvalidMatrixError, match=re.escape(words)) as e:
                token_distances_tensor(x, **kw)
            assert "\n" not in str(e.value), (path, kw)

    on_each_path(check)
