"""Layers and heads out of range are refused before any weight loads (issue 33, item 8).

The models here have a configuration and no weights: a folder with MiniLM's config.json
alone, and a GGUF file that is a header alone.  A selection in range then fails at the load
(no weights: ModelLoadError), one out of range fails before it with one line naming the
model and the allowed range: the check ran first, without the weights.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

import attntopo as at
from attntopo.errors import ModelLoadError, ModelNotFoundError, OutOfRangeError, UnsafeWeightsError
from attntopo.models import check_selection, configured_counts, resolve_spec

RANGE6 = "has 6 layers, valid are 0..5 (or -6..-1)"
HEADS12 = "has 12 heads, valid are 0..11 (or -12..-1)"


@pytest.fixture(scope="module")
def config_only(tmp_path_factory) -> Path:
    """A model folder holding MiniLM's config.json and nothing else."""
    d = tmp_path_factory.mktemp("config_only")
    shutil.copy(Path(resolve_spec("minilm").path) / "config.json", d / "config.json")
    return d


def _gguf_header(path: Path, meta: list[tuple[str, int, object]]) -> Path:
    """A GGUF v3 file with these metadata entries (key, GGUF type, value) and no tensor."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(meta)))

    def string(s: str) -> bytes:
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    for key, kind, value in meta:
        out += string(key) + struct.pack("<I", kind)
        if kind == 8:
            out += string(value)
        elif kind == 9:  # an array of strings (a vocabulary) before the counts
            out += struct.pack("<IQ", 8, len(value)) + b"".join(string(v) for v in value)
        elif kind == 4:
            out += struct.pack("<I", value)
        elif kind == 6:
            out += struct.pack("<f", value)
    path.write_bytes(bytes(out))
    return path


@pytest.fixture(scope="module")
def gguf_header(tmp_path_factory) -> Path:
    return _gguf_header(
        tmp_path_factory.mktemp("gguf") / "tiny.gguf",
        [
            ("general.architecture", 8, "llama"),
            ("tokenizer.ggml.tokens", 9, ["<s>", "a", "b"]),
            ("llama.rope.freq_base", 6, 10000.0),
            ("llama.block_count", 4, 30),
            ("llama.attention.head_count", 4, 9),
        ],
    )


def test_counts_come_from_the_configuration_without_weights(config_only, gguf_header):
    assert configured_counts("minilm") == ("minilm", 6, 12)
    assert configured_counts("smollm2") == ("smollm2", 30, 9)  # the packaged GGUF's header
    assert configured_counts(str(config_only))[1:] == (6, 12)
    assert configured_counts(str(gguf_header))[1:] == (30, 9)
    # what cannot be read this way is left to the load, which says what is wrong
    assert configured_counts("no-such-org/no-such-model") is None
    assert configured_counts(str(gguf_header.parent / "missing.gguf")) is None


def test_the_message_names_the_model_and_the_range(gguf_header):
    with pytest.raises(OutOfRangeError) as e:
        check_selection("minilm", layers=[1, 6], heads=None)
    assert str(e.value) == f"layer 6 is out of range: minilm {RANGE6}"
    with pytest.raises(OutOfRangeError) as e:
        check_selection(str(gguf_header), layers=None, heads=[9], names=("--layer", "--head"))
    assert str(e.value) == (
        f"--head 9 is out of range: {gguf_header} has 9 heads, valid are 0..8 (or -9..-1)"
    )
    check_selection("minilm", layers=[-1, 0], heads=[11])  # in range: nothing to say
    check_selection(
        "no-such-org/no-such-model", layers=[99], heads=[99]
    )  # unknown counts: the load decides


@pytest.mark.parametrize(
    "call",
    [
        "features",
        "feature_names",
        "AttentionFeatures",
        "analyze",
        "compare",
        "timeline",
        "phrase_topology",
        "corpus",
        "compress",
    ],
)
def test_every_api_refuses_before_the_weights_load(call, config_only, tmp_path):
    model = str(config_only)

    def go(layers, heads):
        kw = dict(layers=layers, heads=heads)
        if call == "features":
            at.features("A cat.", model, **kw)
        elif call == "feature_names":
            at.features.feature_names(model, **kw)
        elif call == "AttentionFeatures":
            from attntopo.sklearn import AttentionFeatures

            AttentionFeatures(model=model, **kw).fit(["A cat."])
        elif call == "analyze":
            at.analyze("A cat.", model, progress=False, **kw)
        elif call == "compare":
            at.compare("A cat.", "A dog.", model, progress=False, **kw)
        elif call == "timeline":
            at.timeline("A cat.", model, progress=False, **kw)
        elif call == "phrase_topology":
            at.phrase_topology("cat", ["A cat."], model, layers=layers, heads=heads, progress=False)
        elif call == "corpus":
            from attntopo.corpus import run

            run(["A cat."], tmp_path / "store", model=model, progress=False, **kw)
        elif call == "compress":
            at.compress("A cat.", model, **kw)

    with pytest.raises(OutOfRangeError) as e:
        go([0, 6], [0])
    assert str(e.value) == f"layer 6 is out of range: {model} {RANGE6}"
    with pytest.raises(OutOfRangeError) as e:
        go([0], [12])
    assert str(e.value) == f"head 12 is out of range: {model} {HEADS12}"
    if call == "corpus":
        assert not (tmp_path / "store").exists()  # nothing made
    # in range: the load is reached (and fails: the folder has no weights)
    with pytest.raises((ModelLoadError, ModelNotFoundError, UnsafeWeightsError)):
        go([0], [0])
