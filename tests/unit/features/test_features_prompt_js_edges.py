"""The JS prompt score (``prompt.js``, computed from the answer rows' distances alone, issue 36)
on edge cases, against an exact reference: 40-digit Jensen–Shannon distances of all pairs
(``_js_edges.exact_js``) and networkx's minimum spanning tree of the graph with the prompt
contracted to one vertex, per answer token, on the C kernel and on the torch path.

Tolerance: the forest is the sum of ``r`` edges, each within ``JS_EVAL_ATOL`` of its exact
length (tests/README.md, "The Jensen–Shannon kernel in float64"), and a minimum spanning
forest's length moves by at most ``r`` times the largest change of a distance: per answer
token, ``JS_EVAL_ATOL``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _js_edges import contracted_forest, edge_stacks, exact_js, on_each_path
from _tolerances import JS_EVAL_ATOL
from attntopo.errors import InvalidInputError
from attntopo.features._prompt import prompt_features


def _prompt_mask(rng: np.random.Generator, m: int, prefix: bool) -> np.ndarray:
    """A prompt of at least one token and an answer of at least one (often exactly one): the
    first tokens (a pair read as one text), or any tokens (a prompt that is not a prefix)."""
    if prefix:
        return np.arange(m) < (m - 1 if rng.random() < 0.3 else int(rng.integers(1, m)))
    mask = rng.random(m) < 0.5
    i, j = rng.choice(m, size=2, replace=False)
    mask[i], mask[j] = True, False
    return mask


def _close(got: np.ndarray, want: np.ndarray, path: str) -> None:
    np.testing.assert_allclose(got[:, 0], want, rtol=0, atol=JS_EVAL_ATOL, err_msg=path)


def _kept_rows(W: np.ndarray, keep: np.ndarray) -> np.ndarray | None:
    """drop_special's rows, by its documented formula: the kept rows and columns of the float32
    weights, each row divided by its sum in float64, rounded once to float32 (None when a kept
    row has no weight left)."""
    sub = W[:, keep][:, :, keep].astype(np.float64)
    s = sub.sum(-1, keepdims=True)
    return None if np.any(s <= 0) else (sub / s).astype(np.float32)


@settings(max_examples=50, deadline=None)
@given(edge_stacks(max_n=9, max_b=3, min_n=2), st.integers(0, 2**31 - 1), st.booleans())
def test_prompt_js_equals_exact_distances_and_networkx_forest(A, seed, prefix):
    """Heads of different patterns in one call (causal, exact zeros, one-hot rows, identical
    and nearly identical rows, rows off a sum of 1, float16/bfloat16 weights converted), a
    prompt that is a prefix or not, one answer token or several."""
    rng = np.random.default_rng(seed)
    prompt = _prompt_mask(rng, A.shape[-1], prefix)
    r = int(np.count_nonzero(~prompt))
    want = np.array([contracted_forest(exact_js(M.astype(np.float64)), prompt) / r for M in A])
    on_each_path(lambda path: _close(prompt_features(A, None, prompt, ("js",)), want, path))


@settings(max_examples=50, deadline=None)
@given(edge_stacks(max_n=9, max_b=3, min_n=3), st.integers(0, 2**31 - 1), st.booleans())
def test_prompt_js_of_kept_tokens_equals_the_exact_score_of_renormalized_rows(A, seed, ends):
    """``keep=`` (drop_special: each head's kept tokens, rows renormalized) against the exact
    score of drop_special's rows (float64 quotient rounded once to float32): special tokens at
    both ends or anywhere, a prompt that is a prefix of the kept tokens or not; a kept row left
    without weight (a causal row whose weight was all on dropped tokens) refused in one line."""
    rng = np.random.default_rng(seed)
    n = A.shape[-1]
    W = A.astype(np.float32)
    if ends:  # [CLS] ... [SEP]
        keep = np.arange(1, n - 1) if n > 3 else np.arange(1, n)
    else:
        keep = np.sort(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False))
    prompt = _prompt_mask(rng, keep.size, bool(rng.random() < 0.5))
    rows = _kept_rows(W, keep)
    if rows is None:
        with pytest.raises(InvalidInputError, match="cannot be renormalized") as e:
            prompt_features(W, None, prompt, ("js",), keep=keep)
        assert "\n" not in str(e.value)
        return
    r = int(np.count_nonzero(~prompt))
    want = np.array([contracted_forest(exact_js(M.astype(np.float64)), prompt) / r for M in rows])
    on_each_path(
        lambda path: _close(prompt_features(W, None, prompt, ("js",), keep=keep), want, path)
    )


# ------------------------------------------------------- a prompt that kept no token to score


@pytest.mark.parametrize("quantities", [("attention",), ("js",), ("js", "attention")])
def test_a_prompt_without_tokens_is_one_line_for_both_quantities(quantities):
    """No prompt token among the scored ones: both quantities refuse it in the same one line
    (the attention score raised torch's IndexError from an empty maximum)."""
    A = np.full((2, 4, 4), 0.25)
    with pytest.raises(InvalidInputError, match="needs at least one prompt token") as e:
        prompt_features(A, None, np.zeros(4, dtype=bool), quantities)
    assert "\n" not in str(e.value)


def test_a_pair_whose_prompt_kept_no_token_is_one_line_naming_it():
    """A pair whose prompt gave the tokenizer no token but special ones (a zero-width space:
    BERT's tokenizer drops it) has nothing to attach the answer to: ``answer_check`` refuses it
    for the prompt set, naming the text, as it refuses an answer without tokens; the other pair
    sets (lookback with its [CLS] as context) still take it."""
    from _feature_refs import synthetic_attention
    from attntopo.features.pipeline import answer_check

    n = 5
    W = np.full((1, 1, n, n), 1.0 / n)
    special = np.array([True, False, False, False, True])  # [CLS] the answer [SEP]
    att = synthetic_attention(W, special=special)
    boundary = att.offsets[1][0]  # the prompt's characters end before the first content token
    answer_check([boundary])(0, att)  # no set asked for: taken
    answer_check([boundary], sets=("lookback", "js"))(0, att)  # sets that score it: taken
    check = answer_check([boundary], label=lambda k: f"texts[{k}]: ", sets=("js", "prompt"))
    with pytest.raises(InvalidInputError) as e:
        check(0, att)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("texts[0]: the prompt kept no token")
    check(0, synthetic_attention(W))  # a prompt of one token (w0): taken
