"""attntopo.theory.Context without a model: the result protocol (summary columns, save/load,
equality, to_dict) and its figure."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attntopo.errors import InvalidInputError, ResultFormatError
from attntopo.io import load_payload
from attntopo.theory._context import SUPPORTS, Context


def synthetic(word: bool = True, causal: bool = False, seed: int = 0) -> Context:
    rng = np.random.default_rng(seed)
    L, H, T, P, k = 3, 2, 3, 2, 3
    conds = ["positions", "no_positions"] + (["no_rotary_causal"] if causal else [])
    C = len(conds)
    w = {
        "word": "bank" if word else None,
        "word_texts": np.arange(k) if word else np.zeros(0, np.int64),
        "word_tokens": np.array([1, 2, 1]) if word else np.zeros(0, np.int64),
        "word_js": rng.random((len(SUPPORTS), L, H)) if word else np.zeros((2, 0, 0)),
        "word_js_max": rng.random((len(SUPPORTS), L, H)) if word else np.zeros((2, 0, 0)),
        "word_h0": rng.random((len(SUPPORTS), L, H)) if word else np.zeros((2, 0, 0)),
        "word_entropy": rng.random((k, L, H)) if word else np.zeros((0, 0, 0)),
        "word_hidden_cosine": rng.random(L + 1) if word else np.zeros(0),
        "word_hidden_spread": rng.random(L + 1) if word else np.zeros(0),
    }
    return Context(
        model="toy",
        model_type="bert",
        causal=causal,
        n_layers=L,
        n_heads=H,
        texts=["a b", "c d e", "f g"],
        tokens=[["a", "b"], ["c", "d", "e"], ["f", "g"]],
        n_tokens=np.array([2, 3, 2]),
        positional="bert: toy",
        conditions=conds,
        n_permutations=P,
        seed=0,
        permutations=[[[1, 0], [1, 0]]] * T,
        equivariance_texts=np.arange(T),
        layer_error=rng.random((C, T, P, L)) * 1e-7,
        encoder_error=rng.random((C, T, P, L + 1)),
        margin_within=rng.random((T, L + 1)),
        margin_within_rel=rng.random((T, L + 1)),
        margin_cross=rng.random(L + 1),
        margin_cross_rel=rng.random(L + 1),
        cross_argmin=rng.integers(0, 2, size=(L + 1, 4)),
        n_cross_pairs=3,
        self_similarity=rng.random(L + 1),
        similarity_words=["x"],
        self_similarity_words=rng.random((1, L + 1)),
        intra_similarity=rng.random((T, L + 1)),
        anisotropy=np.array([np.nan, 0.1, 0.2, 0.3]),
        **w,
        provenance={"created": "now"},
    )


@pytest.mark.parametrize("word,causal", [(True, False), (False, True)])
def test_round_trip_and_equality(tmp_path, word, causal):
    r = synthetic(word, causal)
    r.save(tmp_path / "r")
    meta, arrays = load_payload(tmp_path / "r")
    assert meta["kind"] == "context"
    back = Context._from_payload(meta, arrays)
    assert back == r  # NaN equals NaN; provenance ignored
    other = synthetic(word, causal, seed=1)
    assert other != r
    json.dumps(r.to_dict())  # JSON-safe (NaN written as a string)


def test_summary_columns():
    r = synthetic(causal=True)
    cols = r.summary()
    assert cols["depth"].tolist() == [0, 1, 2, 3]
    for c in r.conditions:
        assert np.isnan(cols[f"layer_error_{c}"][0])
        i = r.conditions.index(c)
        np.testing.assert_allclose(
            cols[f"layer_error_{c}"][1:], r.layer_error[i].reshape(-1, 3).mean(0)
        )
        np.testing.assert_allclose(
            cols[f"encoder_error_{c}_max"], r.encoder_error[i].reshape(-1, 4).max(0)
        )
    np.testing.assert_allclose(cols["margin_within"], r.margin_within.min(0))
    np.testing.assert_allclose(cols["word_js_relative"][1:], r.word_js[0].mean(-1))
    np.testing.assert_allclose(cols["word_entropy_spread"][1:], r.word_entropy.std(0).mean(-1))
    assert "word_js_vocabulary" not in synthetic(word=False).summary()
    assert r.to_pandas().shape[0] == 4


def test_corrupt_payload_is_refused(tmp_path):
    r = synthetic()
    meta, arrays = r._payload()
    bad = dict(arrays, margin_cross=np.zeros(2))
    with pytest.raises(ResultFormatError, match="margin_cross"):
        Context._from_payload(meta, bad)
    with pytest.raises(ResultFormatError, match="conditions"):
        Context._from_payload(dict(meta, conditions=["sideways"]), arrays)
    with pytest.raises(ResultFormatError, match="needs"):
        Context._from_payload({k: v for k, v in meta.items() if k != "texts"}, arrays)


def test_figure():
    from matplotlib.figure import Figure

    from attntopo.plots.theory_context import context_bundle, plot_context, plot_equivariance

    fig = plot_context([synthetic(), synthetic(word=False, causal=True)])
    assert isinstance(fig, Figure) and len(fig.axes) == 8
    assert isinstance(plot_equivariance(synthetic()), Figure)
    files = context_bundle(synthetic()).files(formats=["png", "svg"])
    assert sorted(files) == ["figures/context.png", "figures/context.svg"]
    assert files["figures/context.png"][:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InvalidInputError, match="expected a Context"):
        plot_context(object())
