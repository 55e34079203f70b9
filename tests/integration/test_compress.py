"""attntopo.compress on the real models: the hook changes exactly what it says, effects, results."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import attntopo as at
from attntopo.compress import compress, compression_table
from attntopo.errors import InvalidInputError, OutOfRangeError
from attntopo.topology import clusters_at

TEXT = "The cat sat on the mat because it was tired, and the dog slept by the door."


def test_scale_zero_changes_nothing(minilm):
    c = compress(TEXT, minilm, scale=0.0)
    assert c.effect["cosine"] == pytest.approx(1.0, abs=1e-12)
    assert c.compression == 1.0 and len(c.clusters) == 72
    assert minilm.hf_model.config._attn_implementation == "eager"  # put back


def test_layer0_clusters_are_the_analysis_clusters(minilm):
    # layer 0 sees the unmodified input: its clusters are those of attntopo's own JS distances
    eps = 0.35
    c = compress(TEXT, minilm, layers=[0], scale=eps)
    D = at.token_distances(minilm.attention(TEXT))
    expected = [int(clusters_at(D[0, h], eps).max()) + 1 for h in range(12)]
    assert c.heads[:, 0].tolist() == [0] * 12 and c.clusters.tolist() == expected
    assert np.all(c.scales == eps)


def test_only_later_layers_change(minilm):
    import torch

    from attntopo.compress import compressed_attention

    enc = minilm.tokenize(TEXT)
    ids = torch.tensor([enc.ids])
    cfg = {
        "targets": {3: [0, 1, 2]},
        "scale": 0.5,
        "method": "persistence",
        "representative": "barycenter",
        "causal": False,
        "seed": 0,
        "rng": np.random.default_rng(0),
        "record": [],
    }
    with torch.inference_mode():
        base = minilm.hf_model(input_ids=ids, output_hidden_states=True).hidden_states
        with compressed_attention(minilm, cfg):
            comp = minilm.hf_model(input_ids=ids, output_hidden_states=True).hidden_states
    for layer in range(4):  # inputs of layers 0..3 are untouched
        assert torch.equal(base[layer], comp[layer])
    assert not torch.equal(base[4], comp[4])
    assert [r[:2] for r in cfg["record"]] == [(3, 0), (3, 1), (3, 2)]


@pytest.mark.parametrize("method", ["persistence", "random", "kmeans", "tome"])
def test_methods_compress_to_matched_sizes(minilm, method):
    c = compress(TEXT, minilm, layers=[0], scale=0.4, method=method, representative="medoid")
    ref = compress(TEXT, minilm, layers=[0], scale=0.4)
    # layer 0 is the first compressed layer: every method gets the persistence clusters' k
    if method != "kmeans":
        assert c.clusters.tolist() == ref.clusters.tolist()
    else:
        assert np.all(c.clusters <= ref.clusters)
    assert 0.0 < c.effect["cosine"] <= 1.0 + 1e-12


def test_result_round_trip(minilm, tmp_path):
    c = compress(TEXT, minilm, scale="gap", method="tome")
    c.save(tmp_path / "c")
    assert at.load_result(tmp_path / "c") == c
    cols = c.summary()
    assert list(cols) == ["layer", "head", "clusters", "ratio", "scale"] and cols.n_rows == 72
    code = "import attntopo as at, sys; print(type(at.load_result(sys.argv[1])).__name__)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "Compression"


def test_table(minilm):
    t = compression_table([TEXT], minilm, scales=[0.0, 0.4], methods=["persistence", "random"])
    with pytest.raises(
        InvalidInputError, match="texts must be a string or a list of strings, got AttentionModel"
    ):
        compression_table(minilm, [TEXT], scales=[0.4])  # the texts come first
    assert t["method"].tolist() == ["persistence", "random", "persistence", "random"]
    assert t["compression"][0] == 1.0 and t["cosine"][0] == pytest.approx(1.0, abs=1e-12)


def test_bad_input(minilm):
    with pytest.raises(
        InvalidInputError,
        match="unknown method 'nope'; allowed: 'persistence', 'random', 'kmeans', 'tome'",
    ):
        compress(TEXT, minilm, method="nope")
    with pytest.raises(InvalidInputError, match="unknown representative 'mode'; allowed"):
        compress(TEXT, minilm, representative="mode")
    with pytest.raises(InvalidInputError, match="scale must be"):
        compress(TEXT, minilm, scale=-0.1)
    with pytest.raises(OutOfRangeError, match="minilm has 6 layers"):
        compress(TEXT, minilm, layers=[6])
    with pytest.raises(at.EmptyTextError):
        compress("  ", minilm)


@pytest.mark.smollm2
def test_causal_model(smollm2):
    c0 = compress(TEXT, smollm2, layers=[10], scale=0.0)
    assert c0.effect["kl"] == pytest.approx(0.0, abs=1e-12)
    assert c0.effect["perplexity"] == pytest.approx(c0.effect["perplexity_compressed"], rel=1e-12)
    c = compress(TEXT, smollm2, layers=[10, 20], scale="gap")
    assert c.effect["kl"] > 0 and c.clusters.shape == (18,)
    assert 1.0 < c.effect["perplexity"] < 1e4
    assert smollm2.hf_model.config._attn_implementation == "eager"


def test_the_text_comes_first(minilm):
    """compress(text, model), the order of analyze; a model first is one line naming the order."""
    new = compress(TEXT, minilm, layers=[0], scale=0.4)
    with pytest.raises(
        InvalidInputError,
        match=r"^compress\(text, model\): text must be a string, got "
        r"AttentionModel \(the text comes first",
    ):
        compress(minilm, TEXT, layers=[0], scale=0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compress(TEXT, "minilm", layers=[0], scale=0.4) == new
        assert compress(TEXT, model=minilm, layers=[0], scale=0.4) == new


def test_a_model_that_is_none_is_one_typed_error():
    """A model that is neither a name nor a loaded model is refused by load_model's own check."""
    with pytest.raises(InvalidInputError, match="model must be an alias"):
        compress(TEXT, model=3)
