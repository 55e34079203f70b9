"""The lookback set (Lookback Lens): the ratio of the mean attention on the context to the sum of
the means on the context and on the answer's own tokens, averaged over the answer's tokens,
against the paper's formula written out by hand (a loop, one query at a time)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _feature_refs import synthetic_attention
from attntopo.attention import renormalized_subset
from attntopo.errors import InvalidInputError
from attntopo.features import FeatureSettings, lookback_features, lookback_ratios
from attntopo.features._compute import chunk_rows
from attntopo.features._lookback import answer_start


def _by_formula(A: np.ndarray, start: int, causal: bool) -> float:
    """Lookback Lens's LR_t = A(context) / (A(context) + A(new)), means, averaged over t."""
    n = A.shape[0]
    ratios = []
    for i in range(start, n):
        ctx = [A[i, j] for j in range(start)]
        new = [A[i, j] for j in range(start, n) if (j <= i or not causal)]
        a_ctx = sum(ctx) / len(ctx)
        a_new = sum(new) / len(new)
        ratios.append(a_ctx / (a_ctx + a_new))
    return sum(ratios) / len(ratios)


def test_lookback_ratio_of_a_hand_built_causal_matrix():
    # 3 context tokens, answer tokens 3 and 4
    A = np.array(
        [
            [1.0, 0.0, 0.0, 0.0, 0.0],
            [0.5, 0.5, 0.0, 0.0, 0.0],
            [0.2, 0.3, 0.5, 0.0, 0.0],
            [0.1, 0.2, 0.3, 0.4, 0.0],  # A_ctx = 0.6/3 = 0.2, A_new = 0.4/1: LR = 1/3
            [0.1, 0.1, 0.1, 0.3, 0.4],  # A_ctx = 0.3/3 = 0.1, A_new = 0.7/2: LR = 2/9
        ]
    )
    lr = lookback_ratios(A, 3, causal=True)
    np.testing.assert_allclose(lr, [[1 / 3, 2 / 9]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(lookback_features(A, 3, causal=True), [[5 / 18]], atol=1e-15)


def test_lookback_ratio_of_a_hand_built_bidirectional_matrix():
    # a bidirectional answer token sees every answer token: 2 context, 2 answer tokens
    A = np.array(
        [
            [0.25, 0.25, 0.25, 0.25],
            [0.25, 0.25, 0.25, 0.25],
            [0.4, 0.2, 0.1, 0.3],  # A_ctx = 0.3, A_new = 0.2: LR = 0.6
            [0.1, 0.1, 0.4, 0.4],  # A_ctx = 0.1, A_new = 0.4: LR = 0.2
        ]
    )
    np.testing.assert_allclose(lookback_ratios(A, 2, causal=False), [[0.6, 0.2]], atol=1e-15)
    # read as causal, token 2 sees only itself (and row 2's weight on key 3 is ignored)
    assert lookback_ratios(A, 2, causal=True)[0, 0] == pytest.approx(0.3 / (0.3 + 0.1))


def _matrix(seed: int, n: int, causal: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.gamma(0.3, size=(n, n)) + (rng.random((n, n)) < 0.2) + 1e-3
    if causal:
        A = np.tril(A)
    return A / A.sum(axis=1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 16), st.data(), st.booleans(), st.integers(0, 2**32 - 1))
def test_lookback_equals_the_formula_and_lies_in_0_1(n, data, causal, seed):
    start = data.draw(st.integers(1, n - 1))
    A = np.stack([_matrix(seed + h, n, causal) for h in range(3)])
    got = lookback_features(A, start, causal)[:, 0]
    want = [_by_formula(A[h], start, causal) for h in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert np.all((got >= 0) & (got <= 1))


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 14), st.data(), st.booleans(), st.integers(0, 2**32 - 1))
def test_lookback_with_keep_equals_the_formula_on_the_renormalized_tokens(n, data, causal, seed):
    """Leaving tokens out (drop_special) is the same as the formula on the kept tokens with the
    rows renormalized: the ratio of means does not see a row's scale."""
    start = data.draw(st.integers(1, n - 1))
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    keep[start - 1] = keep[start] = True  # a context token and an answer token stay
    A = _matrix(seed, n, causal)[None]
    kept = np.flatnonzero(keep)
    sub = renormalized_subset(A.astype(np.float32), kept).astype(np.float64)[0]
    want = _by_formula(sub, int(np.count_nonzero(kept < start)), causal)
    got = lookback_features(A, start, causal, keep=keep)[0, 0]
    assert got == pytest.approx(want, rel=1e-6)  # the float32 rounding of the renormalized rows


def test_lookback_refuses_a_pair_without_context_or_answer_or_weight():
    A = np.tril(np.ones((4, 4)))
    A /= A.sum(axis=1, keepdims=True)
    with pytest.raises(InvalidInputError, match="at least one context"):
        lookback_ratios(A, 0, causal=True)
    with pytest.raises(InvalidInputError, match="at least one answer token"):
        lookback_ratios(A, 4, causal=True)
    C = np.eye(4)
    C[3] = [0.0, 0.0, 1.0, 0.0]  # answer token 3 attends only to token 2, which is left out
    with pytest.raises(InvalidInputError, match="0 / 0"):
        lookback_ratios(C, 2, causal=True, keep=np.array([True, True, False, True]))


def test_answer_start_counts_special_tokens_on_the_side_where_they_stand():
    # [CLS] a b | c d [SEP]: the answer starts at character 4 ("c")
    special = np.array([True, False, False, False, False, True])
    offsets = [(0, 0), (0, 1), (2, 3), (4, 5), (6, 7), (0, 0)]
    assert answer_start(special, offsets, 4) == 3
    assert answer_start(special, offsets, 100) == 6


def test_lookback_columns_through_the_feature_pipeline():
    """chunk_rows (the path of features() and the corpus) gives the formula per head, with the
    special tokens kept (the default) or left out (drop_special)."""
    n = 6
    W = np.stack([_matrix(s, n, True) for s in range(2)])[None]  # (1, 2, n, n)
    special = np.array([True, False, False, False, False, False])
    att = replace(synthetic_attention(W, special=special), causal=True)
    boundary = att.offsets[3][0]  # answer: tokens 3, 4, 5
    st_ = FeatureSettings(sets=("lookback",)).st()
    rows = chunk_rows([att], [boundary], st_, False, None, 1)
    want = [_by_formula(att.weights[0, h].astype(np.float64), 3, True) for h in range(2)]
    np.testing.assert_allclose(rows[0], want, rtol=1e-12)
    rows = chunk_rows([att], [boundary], st_, True, None, 1)
    kept = att.drop_special()
    want = [_by_formula(kept.weights[0, h].astype(np.float64), 2, True) for h in range(2)]
    np.testing.assert_allclose(rows[0], want, rtol=1e-6)
