"""Bring your own model or attention (issue 15, item 9): an already-loaded Hugging Face model
through load_model(model, tokenizer=...),
and weights from elsewhere through Attention.from_weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attntopo as at
from attntopo import Attention
from attntopo.errors import InvalidInputError, ModelLoadError
from attntopo.models import resolve_spec, row_sum_tolerance

pytestmark = pytest.mark.slow

TEXT = "Quantum information theory allows us to study attention"


@pytest.fixture
def minilm_parts():
    from transformers import AutoModel, AutoTokenizer

    folder = resolve_spec("minilm").path
    # transformers' default attention (sdpa) and training mode: what a user often holds
    return AutoModel.from_pretrained(folder).train(), AutoTokenizer.from_pretrained(folder)


def test_loaded_model_is_switched_to_eager_and_matches(minilm, minilm_parts):
    hf, tok = minilm_parts
    assert hf.config._attn_implementation == "sdpa" and hf.training
    m = at.load_model(hf, tokenizer=tok)
    assert hf.config._attn_implementation == "eager" and not hf.training  # said in the docs
    assert m.hf_model is hf and m.tokenizer is tok and m.info()["kind"] == "object"
    assert (m.n_layers, m.n_heads, m.causal, m.max_length) == (6, 12, False, 512)
    att = m.attention(TEXT)
    ref = minilm.attention(TEXT)
    # the same weights, input and eager kernels as the packaged alias: the same computation
    np.testing.assert_array_equal(att.weights, ref.weights)
    assert att.tokens == ref.tokens and att.labels == ref.labels and att.model == m.name
    assert at.load_model(hf, tokenizer=tok) is not m  # not cached: your object, used in place


def test_loaded_model_errors_are_one_line(minilm_parts):
    hf, tok = minilm_parts
    cases = [
        (dict(), r"^an already-loaded model needs its tokenizer: load_model\(model, tokenizer="),
        (dict(tokenizer="bert"), r"^tokenizer must be a transformers tokenizer .*got str$"),
        (dict(tokenizer=tok, device="cuda"), r"^device= is only for a model loaded by name"),
        (dict(tokenizer=tok, dtype="float16", revision="main"), r"^dtype=, revision= are only for"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidInputError, match=message) as e:
            at.load_model(hf, **kwargs)
        assert "\n" not in str(e.value)
    with pytest.raises(
        InvalidInputError, match=r"^tokenizer= is only for a model you have already loaded"
    ):
        at.load_model("minilm", tokenizer=tok)
    for bad in (None, 3, torch.nn.Linear(2, 2)):
        with pytest.raises(
            InvalidInputError,
            match=r"^model must be an alias .* got \w+; for attention "
            r"weights you already have, use Attention\.from_weights",
        ):
            at.load_model(bad)


def test_a_model_without_attention_is_refused(minilm_parts):
    from transformers import MambaConfig, MambaModel

    _, tok = minilm_parts
    mamba = MambaModel(
        MambaConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, state_size=4)
    )
    with pytest.raises(
        ModelLoadError,
        match=r"has no attention heads in its config, so it gives no "
        r"attention weights",
    ) as e:
        at.load_model(mamba, tokenizer=tok)
    assert "\n" not in str(e.value)


def test_from_weights_of_a_transformers_pass_equals_the_model(minilm, minilm_parts):
    """BertViz-style: output_attentions of your own forward pass, stacked, wrapped."""
    hf, tok = minilm_parts
    hf.eval().set_attn_implementation("eager")
    enc = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        out = hf(**enc, output_attentions=True)
    weights = torch.stack(out.attentions, 1)[0]  # (L, H, n, n)
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0])
    # the model divides every row by its float64 sum (attntopo.models.normalize_rows), which
    # renormalize=True does too; as given, the rows differ by float32 rounding only
    as_given = Attention.from_weights(weights, tokens, model="my-minilm")
    att = Attention.from_weights(weights, tokens, model="my-minilm", renormalize=True)
    ref = minilm.attention(TEXT)
    np.testing.assert_array_equal(att.weights, ref.weights)
    # dividing by a sum within row_sum_tolerance of 1, then rounding once more to float32
    rtol = row_sum_tolerance("float32", len(tokens)) + 2.0**-24
    np.testing.assert_allclose(as_given.weights, ref.weights, rtol=rtol, atol=0)
    assert not att.causal and att.tokens == ref.tokens
    # the rest of the pipeline takes it as it takes the model's
    np.testing.assert_array_equal(at.token_distances(att), at.token_distances(ref))
    assert at.persistence(at.token_distances(att)[0, 0]) == at.persistence(
        at.token_distances(ref)[0, 0]
    )
