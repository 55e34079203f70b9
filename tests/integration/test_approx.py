"""attntopo.theory.approximability and models._qk.capture_qk on the real packaged models."""

from __future__ import annotations

import numpy as np
import pytest

import attntopo as at
from _tolerances import for_model
from attntopo.errors import InvalidInputError, OutOfRangeError
from attntopo.models._qk import capture_qk
from attntopo.theory import approximability

TEXT = "The cat sat on the mat because it was tired, and the dog slept by the door."


def _count_forwards(model):
    calls = []
    handle = model.hf_model.register_forward_pre_hook(lambda *_: calls.append(1))
    return calls, handle


@pytest.mark.forward_compare
def test_captured_queries_and_keys_reproduce_minilm_attention(minilm):
    cap = capture_qk(minilm, TEXT)
    att = minilm.attention(TEXT)  # another pass: two-pass tolerance
    tol = for_model(minilm)
    assert cap.queries.shape == (6, 12, att.n_tokens, 32) and cap.keys.shape == cap.queries.shape
    np.testing.assert_allclose(cap.scaling, 32**-0.5)
    W = cap.weights()
    np.testing.assert_allclose(W, att.weights, atol=tol.weights_atol, rtol=0)
    assert cap.self_check < tol.pass_atol
    # the same pass's own weights
    np.testing.assert_allclose(cap.attention, att.weights, atol=tol.weights_atol, rtol=0)


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.forward_compare
def test_captured_queries_and_keys_reproduce_smollm2_attention(smollm2):
    # rotary embedding applied, 3 key heads repeated to 9 query heads, causal mask
    cap = capture_qk(smollm2, TEXT)
    att = smollm2.attention(TEXT)
    tol = for_model(smollm2)
    assert cap.queries.shape == (30, 9, att.n_tokens, 64) and cap.causal
    groups = smollm2.n_heads // smollm2.n_kv_heads
    assert groups == 3
    np.testing.assert_array_equal(cap.keys[:, 0], cap.keys[:, 1])  # heads 0..2 share key head 0
    assert not np.array_equal(cap.keys[:, 2], cap.keys[:, 3])
    W = cap.weights()
    assert np.all(np.triu(W, 1) == 0)
    np.testing.assert_allclose(W, att.weights, atol=tol.weights_atol, rtol=0)
    # without the rotary embedding the logits would be wrong: the check is not vacuous
    q0, k0 = cap.queries[5, 0], cap.keys[5, 0]
    shuffled = np.roll(k0, 1, axis=0)
    from attntopo.models._qk import attention_from_qk

    assert (
        np.abs(
            attention_from_qk(q0, shuffled, float(cap.scaling[5]), True) - att.weights[5, 0]
        ).max()
        > 1e-2
    )


def test_one_forward_pass_for_every_head(minilm):
    calls, handle = _count_forwards(minilm)
    try:
        r = approximability(TEXT, model=minilm, budgets=[4, 8])
        assert len(calls) == 1  # attention, queries and keys of all 72 heads from one pass
        att = minilm.attention(TEXT)
        calls.clear()
        r2 = approximability(att, model=minilm, budgets=[4, 8], families=["kernel", "top_k"])
        assert len(calls) == 1
        calls.clear()
        approximability(att, budgets=[4], families=["top_k", "low_rank"])
        assert len(calls) == 0  # no kernel, no queries needed
    finally:
        handle.remove()
    # the kernel numbers come from the captured queries and keys, seeded: the same either way
    np.testing.assert_allclose(r2.error("kernel", 8), r.error("kernel", 8), rtol=1e-6)


def test_minilm_result(minilm, tmp_path):
    r = approximability(TEXT, model=minilm, budgets=[4, 8, 16])
    n = r.n_tokens
    assert r.model == "minilm" and not r.causal and r.errors.shape == (6, 3, 6, 12)
    assert np.all(np.isfinite(r.errors)) and np.all(r.errors >= 0)
    assert np.all((r.js >= 0) & (r.js <= 1))
    # low rank: the stored singular values give the error exactly (Eckart–Young)
    for j, b in enumerate(r.budgets):
        tail = np.sqrt(
            (r.singular_values[..., b // 2 :] ** 2).sum(-1) / (r.singular_values**2).sum(-1)
        )
        np.testing.assert_allclose(r.error("low_rank", b), tail, atol=1e-9)
    # more budget never hurts the optimal families
    for f in ("top_k", "low_rank", "band_sparse"):
        e = np.stack([r.error(f, b) for b in r.budgets])
        assert np.all(np.diff(e, axis=0) <= 1e-12)
    assert np.all(r.sizes["h0_clusters"] <= np.array(r.budgets)[:, None, None] - 1)
    assert np.all(r.kernel_std[np.isfinite(r.kernel_std)] >= 0)
    assert set(np.unique(r.labels)) <= {
        "sink",
        "self",
        "previous",
        "next",
        "broad",
        "banded",
        "vertical",
        "mixed",
    }
    sb = r.scatterbrain()
    assert set(sb) == set(r.budgets) and set(sb[8]) == {"low_rank", "kernel"}
    r.save(tmp_path / "a")
    assert at.load_result(tmp_path / "a") == r
    assert n == len(minilm.tokenize(TEXT).ids)


def test_bad_input_on_the_model(minilm):
    n = len(minilm.tokenize(TEXT).ids)
    with pytest.raises(OutOfRangeError, match=f"larger than the text's {n} tokens"):
        approximability(TEXT, model=minilm, budgets=[n + 1])
    other = minilm.attention("A different sentence entirely.")
    wrong = type(other)(**{**other.__dict__, "text": TEXT})
    with pytest.raises(InvalidInputError, match="other tokens"):
        approximability(wrong, model=minilm, families=["kernel"], budgets=[4])


def test_special_tokens_dropped(minilm):
    att = minilm.attention(TEXT, drop_special=True)
    r = approximability(att, model=minilm, families=["kernel", "top_k"], budgets=[4])
    assert r.n_tokens == att.n_tokens and np.all(np.isfinite(r.error("kernel", 4)))


@pytest.mark.slow
@pytest.mark.smollm2
def test_smollm2_result(smollm2):
    r = approximability(TEXT, model=smollm2, budgets=[4, 8], layers=[0, 15, 29])
    assert r.causal and r.layers == (0, 15, 29) and r.errors.shape == (6, 2, 3, 9)
    assert np.all(np.isfinite(r.errors)) and np.all((r.js >= 0) & (r.js <= 1))
