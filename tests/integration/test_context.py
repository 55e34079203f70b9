"""attntopo.theory.context on the real models: equivariance without positions holds to the float32
tolerance on both models, margins and similarities against scipy, the word study against scipy's JS,
the typed refusals and the result round trip (the command: tests/cli/test_cli_context.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import cdist, cosine, jensenshannon, pdist

from _tolerances import for_model
from attntopo.errors import InvalidInputError
from attntopo.io import load_payload
from attntopo.models._hidden import forward_capture
from attntopo.theory import Context, context
from attntopo.theory._context import CONTEXT_SENTENCES

TEXTS = list(CONTEXT_SENTENCES["bank"][:3]) + ["The river bank was muddy and the river was high."]


def hidden_rtol(model) -> float:
    """Relative Frobenius tolerance between hidden states of two float32 passes (tests/README.md's
    error model): each pass carries the attention weights' relative error ρ (the logit error through
    the softmax) and the inner products' L·√d·u < ρ; two passes differ by 2ρ/(1 − ρ) =
    weights_rtol."""
    return for_model(model).weights_rtol


@pytest.fixture(scope="module")
def mini(minilm):
    return context(
        TEXTS, minilm, word="bank", n_permutations=2, equivariance_texts=2, progress=False
    )


@pytest.mark.forward_compare
def test_minilm_equivariance(minilm, mini):
    tol = hidden_rtol(minilm)
    assert mini.conditions == ["positions", "no_positions"] and mini.layer_error.shape == (
        2,
        2,
        2,
        6,
    )
    off = mini.conditions.index("no_positions")
    assert mini.layer_error[off].max() <= tol and mini.encoder_error[off].max() <= tol
    on = mini.conditions.index("positions")
    # the embeddings add positions: the encoder is position-dependent from depth 0 on …
    assert mini.encoder_error[on].min() > 100 * tol
    # … while BERT's layers themselves see no positions: each one alone is equivariant
    assert mini.layer_error[on].max() <= tol
    # special tokens stayed in place
    for e, perms in enumerate(mini.permutations):
        for p in perms:
            assert (
                p[0] == 0
                and p[-1] == mini.n_tokens[e] - 1
                and sorted(p) == list(range(mini.n_tokens[e]))
            )


def test_margins_and_similarity_against_scipy(minilm, mini):
    caps = forward_capture(minilm, TEXTS)  # the same computation again: the same hidden states
    content = [np.flatnonzero(~np.asarray(c.encoding.special)) for c in caps]
    for depth in (0, 3, 6):
        Hs = [c.hidden[depth][idx].astype(np.float64) for c, idx in zip(caps, content)]
        for t, H in enumerate(Hs):
            d = pdist(H)
            assert mini.margin_within[t, depth] == pytest.approx(d.min(), rel=1e-9)
            assert mini.margin_within_rel[t, depth] == pytest.approx(d.min() / d.mean(), rel=1e-6)
        cross = [cdist(Hs[a], Hs[b]) for a in range(4) for b in range(a + 1, 4)]
        assert mini.n_cross_pairs == 6
        assert mini.margin_cross[depth] == pytest.approx(min(D.min() for D in cross), rel=1e-9)
        a, i, b, j = mini.cross_argmin[depth]
        assert np.linalg.norm(caps[a].hidden[depth][i] - caps[b].hidden[depth][j]) == pytest.approx(
            mini.margin_cross[depth], rel=1e-6
        )
        # where 'bank' is in each text ([CLS] first)
        X = np.stack([c.hidden[depth][tok] for c, tok in zip(caps, [5, 2, 5, 3])]).astype(
            np.float64
        )
        assert [caps[t].encoding.tokens[k] for t, k in enumerate([5, 2, 5, 3])] == ["bank"] * 4
        ref = np.mean([1 - cosine(X[p], X[q]) for p in range(4) for q in range(p + 1, 4)])
        w = mini.similarity_words.index("bank")
        assert mini.self_similarity_words[w, depth] == pytest.approx(ref, abs=1e-9)
        U = [H / np.linalg.norm(H, axis=1, keepdims=True) for H in Hs]
        pairs = np.concatenate(
            [(U[p] @ U[q].T).ravel() for p in range(4) for q in range(4) if p != q]
        )
        assert mini.anisotropy[depth] == pytest.approx(pairs.mean(), abs=1e-9)


def test_word_study_against_scipy_js(minilm, mini):
    assert mini.word == "bank" and mini.word_texts.tolist() == [0, 1, 2, 3]
    assert mini.word_tokens.tolist() == [5, 2, 5, 3]
    caps = forward_capture(minilm, TEXTS, attention=True)
    layer, head = 2, 5
    rows = [
        c.attention[layer, head, tok].astype(np.float64) for c, tok in zip(caps, mini.word_tokens)
    ]
    width = max(len(r) for r in rows)
    rel = np.zeros((4, 2 * width - 1))
    for c, (r, tok) in enumerate(zip(rows, mini.word_tokens)):
        rel[c, width - 1 - tok : width - 1 - tok + len(r)] = r
    js = [jensenshannon(rel[p], rel[q], base=2) for p in range(4) for q in range(p + 1, 4)]
    assert mini.word_js[0, layer, head] == pytest.approx(np.mean(js), abs=1e-6)
    assert mini.word_js_max[0, layer, head] == pytest.approx(np.max(js), abs=1e-6)
    types = sorted({i for c in caps for i in c.encoding.ids})
    voc = np.zeros((4, len(types)))
    for c, (r, cap) in enumerate(zip(rows, caps)):
        for w, i in zip(r, cap.encoding.ids):
            voc[c, types.index(i)] += w
    js = [jensenshannon(voc[p], voc[q], base=2) for p in range(4) for q in range(p + 1, 4)]
    assert mini.word_js[1, layer, head] == pytest.approx(np.mean(js), abs=1e-6)
    assert np.all((mini.word_entropy >= 0) & (mini.word_entropy <= 1 + 1e-9))


def test_round_trip_and_table(mini, tmp_path):
    import attntopo as at

    mini.save(tmp_path / "c")
    assert Context._from_payload(*load_payload(tmp_path / "c")) == mini
    assert at.load_result(tmp_path / "c") == mini
    cols = mini.summary()
    assert cols.n_rows == 7 and cols["depth"].tolist() == list(range(7))
    json.dumps(mini.to_dict())


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.forward_compare
def test_smollm2_equivariance_and_causality(smollm2):
    r = context(
        "The cat sat on the mat because it was tired.", smollm2, n_permutations=1, progress=False
    )
    tol = hidden_rtol(smollm2)
    assert r.conditions == ["positions", "no_positions", "no_rotary_causal"]
    off, on, mask = (
        r.conditions.index(c) for c in ("no_positions", "positions", "no_rotary_causal")
    )
    # rotary off and the causal mask removed: a bidirectional map, equivariant to round-off
    assert r.layer_error[off].max() <= tol and r.encoder_error[off].max() <= tol
    # every layer rotates by position; and the mask alone already breaks equivariance
    assert r.layer_error[on].min() > tol and r.layer_error[mask].max() > 100 * tol
    assert (
        np.isnan(r.margin_cross).all() and r.n_cross_pairs == 0
    )  # one text: no cross-text measures


def test_bad_input(minilm):
    with pytest.raises(InvalidInputError, match="at least 3 texts, got 2"):
        context(TEXTS[:2], minilm, cross=True, progress=False)
    with pytest.raises(InvalidInputError, match="at least 2 non-special tokens"):
        context("Hi", minilm, progress=False)
    with pytest.raises(InvalidInputError, match="'river' occurs in 2 of the texts"):
        context(TEXTS, minilm, word="river", equivariance_texts=0, progress=False)
    with pytest.raises(InvalidInputError, match="n_permutations"):
        context(TEXTS, minilm, n_permutations=0, progress=False)


def test_model_whose_positions_cannot_be_removed(minilm):
    import transformers

    import attntopo as at
    from attntopo.models._positions import PositionsNotRemovableError

    cfg = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=8, vocab_size=minilm.tokenizer.vocab_size
    )
    hf = transformers.GPT2Model(cfg).eval()
    m = at.load_model(hf, tokenizer=minilm.tokenizer)
    with pytest.raises(PositionsNotRemovableError, match="model type 'gpt2'"):
        context(TEXTS, m, progress=False)


def _tiny(config):
    from transformers import AutoModel

    return AutoModel.from_config(config, attn_implementation="eager").eval()


@pytest.mark.parametrize(
    "make,mtype",
    [
        (
            lambda t: t.DebertaV2Config(
                num_hidden_layers=1,
                num_attention_heads=2,
                hidden_size=8,
                intermediate_size=8,
                vocab_size=50,
            ),
            "deberta-v2",
        ),
        (
            lambda t: t.BertConfig(
                num_hidden_layers=1,
                num_attention_heads=2,
                hidden_size=8,
                intermediate_size=8,
                vocab_size=50,
                position_embedding_type="relative_key",
            ),
            "bert",
        ),
        (
            lambda t: t.MistralConfig(
                num_hidden_layers=1,
                num_attention_heads=2,
                num_key_value_heads=1,
                hidden_size=8,
                intermediate_size=8,
                vocab_size=50,
                sliding_window=4,
            ),
            "mistral",
        ),
    ],
)
def test_other_mechanisms_are_refused(make, mtype):
    import transformers

    from attntopo.models._positions import (
        PositionsNotRemovableError,
        positional_mechanism,
        positions_off,
    )

    model = _tiny(make(transformers))
    with pytest.raises(PositionsNotRemovableError, match=f"model type '{mtype}'"):
        positional_mechanism(model)
    with pytest.raises(PositionsNotRemovableError):
        with positions_off(model):
            pass


def test_the_patches_do_what_they_say():
    import torch
    import transformers

    from attntopo.models._positions import (
        causal_mask_off,
        positional_mechanism,
        positions_off,
        transformer_layers,
    )

    bert = _tiny(
        transformers.BertConfig(
            num_hidden_layers=2,
            num_attention_heads=2,
            hidden_size=8,
            intermediate_size=8,
            vocab_size=50,
        )
    )
    llama = _tiny(
        transformers.LlamaConfig(
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            hidden_size=8,
            intermediate_size=8,
            vocab_size=50,
        )
    )
    assert positional_mechanism(bert).kind == "absolute" and len(transformer_layers(bert)) == 2
    assert positional_mechanism(llama).kind == "rotary" and len(transformer_layers(llama)) == 2
    ids = torch.tensor([[3, 4, 5, 6]])
    with torch.inference_mode():
        with positions_off(bert):
            out = bert.embeddings(input_ids=ids)
        plain = bert.embeddings.LayerNorm(
            bert.embeddings.word_embeddings(ids)
            + bert.embeddings.token_type_embeddings(torch.zeros_like(ids))
        )
        torch.testing.assert_close(out, plain, rtol=0, atol=0)
        with positions_off(llama):
            cos, sin = llama.rotary_emb(torch.zeros(1, 4, 8), torch.arange(4)[None])
        assert torch.all(cos == 1) and torch.all(sin == 0)
        cos, _ = llama.rotary_emb(torch.zeros(1, 4, 8), torch.arange(4)[None])
        assert not torch.all(cos == 1)  # the hook is gone
        # without the mask the first token sees the others: its output changes
        first = llama(input_ids=ids).last_hidden_state[0, 0]
        with causal_mask_off(llama):
            assert not torch.allclose(llama(input_ids=ids).last_hidden_state[0, 0], first)
        torch.testing.assert_close(
            llama(input_ids=ids).last_hidden_state[0, 0], first, rtol=0, atol=0
        )
    with pytest.raises(InvalidInputError, match="rotary"):
        with causal_mask_off(bert):
            pass
