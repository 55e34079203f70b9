"""Real packaged models: attention matches a direct transformers forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attntopo as at
from _tolerances import TINY, U, for_model
from attntopo.errors import (
    EmptyTextError,
    InvalidInputError,
    ModelNotFoundError,
    OutOfRangeError,
    TextTooLongError,
    UnsafeWeightsError,
)
from attntopo.models import resolve_spec

pytestmark = pytest.mark.slow


def test_minilm_shape_and_rows(minilm, sample_text):
    att = minilm.attention(sample_text)
    assert minilm.n_layers == 6 and minilm.n_heads == 12
    assert not minilm.causal and not att.causal
    n = len(att.tokens)
    assert att.weights.shape == (6, 12, n, n)
    assert att.weights.dtype == np.float32
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    assert att.tokens[0] == "[CLS]" and att.tokens[-1] == "[SEP]"
    assert att.special.tolist() == [True] + [False] * (n - 2) + [True]
    # offsets point into the text
    for tok, (a, b), sp in zip(att.tokens, att.offsets, att.special):
        if not sp:
            assert sample_text[a:b].lower() == tok.replace("##", "")
    assert att.labels[1] == "Quantum"


@pytest.mark.forward_compare
def test_minilm_equals_direct_transformers_forward(minilm, sample_text):
    """Our attention is exactly what transformers returns for the same input."""
    from transformers import AutoModel, AutoTokenizer

    folder = resolve_spec("minilm").path
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tok(sample_text, return_tensors="pt")
    with torch.no_grad():
        ref = torch.stack(model(**enc, output_attentions=True).attentions, 1)[0].numpy()
    att = minilm.attention(sample_text)
    assert att.token_ids.tolist() == enc["input_ids"][0].tolist()
    np.testing.assert_allclose(att.weights, ref, atol=for_model(minilm).weights_atol, rtol=0)


@pytest.mark.forward_compare
def test_batched_equals_single(minilm):
    texts = [
        "Short one.",
        "A much longer sentence about information theory and attention.",
        "Mid size text here.",
    ]
    atol = for_model(minilm).weights_atol
    batch = minilm.attention(texts)
    for t, b in zip(texts, batch):
        single = minilm.attention(t)
        assert b.tokens == single.tokens
        np.testing.assert_allclose(b.weights, single.weights, atol=atol, rtol=0)
        np.testing.assert_allclose(b.weights.sum(-1), 1.0, atol=1e-5)  # no mass on padding
    # explicit small batch size gives the same
    batch2 = minilm.attention(texts, batch_size=1)
    for a, b in zip(batch, batch2):
        np.testing.assert_allclose(a.weights, b.weights, atol=atol, rtol=0)


def test_drop_special_renormalizes(minilm, sample_text):
    full = minilm.attention(sample_text)
    dropped = minilm.attention(sample_text, drop_special=True)
    keep = ~full.special
    assert dropped.tokens == [t for t, k in zip(full.tokens, keep) if k]
    assert not dropped.special.any() and dropped.special_dropped
    np.testing.assert_allclose(dropped.weights.sum(-1), 1.0, atol=1e-5)
    sub = full.weights[:, :, keep][:, :, :, keep].astype(np.float64)
    # the same single-text pass as `full`, renormalized in float64:
    # only the rounding to float32 differs
    np.testing.assert_allclose(
        dropped.weights, sub / sub.sum(-1, keepdims=True), rtol=U, atol=TINY * U
    )


def test_layer_head_selection_and_errors(minilm, sample_text):
    att = minilm.attention(sample_text, layers=[1, -1], heads=2)
    assert att.layers == (1, 5) and att.heads == (2,)
    full = minilm.attention(sample_text)
    np.testing.assert_array_equal(att.weights[0, 0], full[1, 2])
    np.testing.assert_array_equal(full[-1, -1], full.weights[5, 11])
    with pytest.raises(OutOfRangeError, match=r"0\.\.5"):
        minilm.attention(sample_text, layers=6)
    with pytest.raises(OutOfRangeError, match=r"0\.\.11"):
        full[0, 12]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(drop_special=1), r"^drop_special must be True or False, got 1$"),
        (dict(truncate="yes"), r"^truncate must be True or False"),
        (dict(batch_size=0), r"^batch_size must be None or an int >= 1"),
        (dict(batch_size=2.0), r"^batch_size must be None or an int >= 1"),
    ],
)
def test_attention_settings_are_checked(minilm, sample_text, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        minilm.attention(sample_text, **kwargs)


def test_load_model_settings_are_checked():
    with pytest.raises(
        InvalidInputError, match=r"^unknown dtype 'float64'; allowed: float32, float16, bfloat16$"
    ):
        at.load_model("minilm", dtype="float64")
    with pytest.raises(InvalidInputError, match=r"^allow_pickle must be True or False"):
        at.load_model("minilm", allow_pickle="no")


def test_too_long_and_truncate(minilm):
    text = "word " * 600
    with pytest.raises(TextTooLongError) as e:
        minilm.attention(text)
    assert e.value.n_tokens == 602 and e.value.limit == 512 and "512" in str(e.value)
    att = minilm.attention(text, truncate=True)
    assert att.n_tokens == 512 and att.truncated
    assert att.tokens[-1] == "[SEP]"
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("bad", ["", "   \n\t"])
def test_empty_text(minilm, bad):
    with pytest.raises(EmptyTextError):
        minilm.attention(bad)
    with pytest.raises(EmptyTextError):
        minilm.attention(["fine", bad])


@pytest.mark.parametrize("bad", [None, 5, {"a": 1}])
def test_text_of_wrong_type(minilm, bad):
    from attntopo.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="string or a list of strings"):
        minilm.attention(bad)
    with pytest.raises(InvalidInputError):
        at.analyze(bad, model=minilm)


def test_model_is_cached(minilm):
    assert at.load_model("minilm") is minilm
    assert at.load_model("MiniLM") is minilm


def test_local_folder_loads_like_alias(minilm, sample_text):
    folder = resolve_spec("minilm").path
    m = at.load_model(folder)
    assert m is not minilm and m.spec.kind == "folder"
    np.testing.assert_array_equal(
        m.attention(sample_text).weights, minilm.attention(sample_text).weights
    )


def test_unknown_alias_and_hub_offline(monkeypatch, tmp_path):
    with pytest.raises(ModelNotFoundError, match="no such model file or folder"):
        at.load_model("./does-not-exist")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError) as e:
        at.load_model("some-org/some-model-that-is-not-cached")
    msg = str(e.value)
    assert "minilm" in msg and "offline" in msg and "\n" not in msg
    with pytest.raises(ModelNotFoundError, match="neither a packaged alias"):
        at.load_model("not a/valid/id")


def test_pickle_weights_refused(tmp_path, minilm):
    """A folder with only pytorch_model.bin is refused unless allow_pickle=True."""
    import shutil

    src = resolve_spec("minilm").path
    dst = tmp_path / "pickled"
    dst.mkdir()
    for f in (
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "special_tokens_map.json",
    ):
        shutil.copy(f"{src}/{f}", dst / f)
    torch.save(minilm.hf_model.state_dict(), dst / "pytorch_model.bin")
    with pytest.raises(UnsafeWeightsError, match="allow_pickle=True"):
        at.load_model(dst)
    m = at.load_model(dst, allow_pickle=True)
    assert m.n_layers == 6


@pytest.mark.xdist_group("smollm2")
def test_smollm2_causal_rows(smollm2):
    text = "The capital of France is Paris, and information theory is fun."
    att = smollm2.attention(text)
    assert smollm2.n_layers == 30 and smollm2.n_heads == 9 and smollm2.n_kv_heads == 3
    assert smollm2.causal and att.causal
    n = att.n_tokens
    assert att.weights.shape == (30, 9, n, n)  # one distribution per *query* head
    assert np.all(np.triu(att.weights, 1) == 0)
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    # grouped-query heads that share keys/values still differ (different queries)
    assert not np.allclose(att.weights[5, 0], att.weights[5, 1])


@pytest.mark.forward_compare
@pytest.mark.xdist_group("smollm2")
def test_smollm2_prefix_is_top_left_block(smollm2):
    text = "The capital of France is Paris, and information theory is fun."
    full = smollm2.attention(text)
    enc = smollm2.tokenize(text)
    t = 6
    prefix_text = text[: enc.offsets[t - 1][1]]
    pre = smollm2.attention(prefix_text)
    assert pre.tokens == full.tokens[:t]
    np.testing.assert_allclose(
        pre.weights, full.weights[:, :, :t, :t], atol=for_model(smollm2).weights_atol, rtol=0
    )


@pytest.mark.forward_compare
@pytest.mark.xdist_group("smollm2")
def test_smollm2_batch_no_padding_leak(smollm2):
    texts = ["Hi.", "The capital of France is Paris."]
    batch = smollm2.attention(texts)
    for t, b in zip(texts, batch):
        np.testing.assert_allclose(
            b.weights, smollm2.attention(t).weights, atol=for_model(smollm2).weights_atol, rtol=0
        )


@pytest.mark.xdist_group("smollm2")
def test_smollm2_conversion_cached(smollm2):
    from attntopo.models.loading import gguf_converted_folder

    folder = gguf_converted_folder(resolve_spec("smollm2"))
    assert (folder / "model.safetensors").is_file()
    assert (folder / "attntopo-conversion.json").is_file()
