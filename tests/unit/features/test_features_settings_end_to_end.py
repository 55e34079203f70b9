"""One settings record end to end: each field of FeatureSettings declares, in one ``setting(...)``,
its default, its check and its command-line option, and reaches features, feature_names'
resolution, AttentionFeatures, a corpus store's settings and manifest and the command line with
no code naming it there.  A new setting is those three (docs/architecture.md); this test then
needs only its sample value below.  ``spectral_k`` was added so (docs: CHANGELOG)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from _synthetic import text_attention
from attntopo.corpus import CorpusSettings, first_difference, make_settings
from attntopo.errors import InvalidInputError
from attntopo.features import SETTING_NAMES, FeatureSettings, features

#: A valid value other than the default, per setting, and the command-line words that say it.
SAMPLE = {
    "sets": (("js", "graph"), ["--sets", "js,graph"]),
    "layers": ((1, 0), ["--layer", "1", "--layer", "0"]),
    "heads": ((2,), ["--head", "2"]),
    "metric": ("hellinger", ["--metric", "hellinger"]),
    "thresholds": ((0.2, 0.6), ["--thresholds", "0.2,0.6"]),
    "scales": ((0.3,), ["--scales", "0.3"]),
    "quantiles": ((0.4, 0.8), ["--quantiles", "0.4", "--quantiles", "0.8"]),
    "cycle_cap": (7, ["--cycle-cap", "7"]),
    "prompt_quantities": (("attention",), ["--prompt-quantities", "attention"]),
    "spectral_k": (3, ["--spectral-k", "3"]),
    "drop_special": (True, ["--drop-special"]),
    "min_persistence": (0.01, ["--min-persistence", "0.01"]),
    "engine": ("ripser", ["--engine", "ripser"]),
}
DOCS = Path(__file__).resolve().parents[3] / "docs"
TOY = SimpleNamespace(name="toy", n_layers=2, n_heads=3, dtype="float32", spec=None)


def test_every_setting_has_a_sample_other_than_its_default():
    assert list(SAMPLE) == list(SETTING_NAMES)
    for f in dataclasses.fields(FeatureSettings):
        assert SAMPLE[f.name][0] != f.default, f.name
        assert f.metadata["cli"] is not None, f"{f.name} has no command-line option"


def _paragraph(page: str, heading: str) -> str:
    """The first paragraph under ``heading`` in docs/``page``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(heading + "\n\n") + len(heading) + 2
    return text[start : text.index("\n\n", start)]


def test_every_setting_is_documented():
    """A new setting's words: its entry in FeatureSettings' docstring (numpydoc), its name in
    docs/features.md's list of the record's fields and, where ``attntopo corpus`` takes it, its
    option among docs/corpus.md's (which names no option the command lacks)."""
    import typer.main

    from attntopo.cli import app

    corpus = typer.main.get_command(app).commands["corpus"]
    takes = {o for p in corpus.params for o in (*p.opts, *p.secondary_opts)}
    doc = FeatureSettings.__doc__
    fields = _paragraph("features.md", "### One settings record: `FeatureSettings`")
    options = _paragraph("corpus.md", "### Options that decide the numbers")
    for f in dataclasses.fields(FeatureSettings):
        entry = rf"^    (\w+, )*{f.name}(, \w+)* : "
        assert re.search(entry, doc, flags=re.M), f"{f.name}: not in FeatureSettings' docstring"
        assert f"`{f.name}`" in fields, f"{f.name}: not in docs/features.md's list of settings"
        flag = f.metadata["cli"].flags[0]
        if flag in takes:
            assert f"`{flag}" in options, f"{flag}: not among docs/corpus.md's options"
    written = set(re.findall(r"`(--[a-z-]+)", options))
    assert written and written <= takes, f"not options of attntopo corpus: {written - takes}"


@pytest.fixture(scope="module")
def atts():
    return [
        text_attention("the cat sat on the mat.", 2, 3, seed=1),
        text_attention("dogs bark at night, loudly.", 2, 3, seed=2),
    ]


def _probe_command():
    """A throwaway command of the command-line scaffold that takes the feature settings."""
    import typer

    from attntopo.cli._options import command

    app, got = typer.Typer(), {}

    @command("probe", group=app)
    def probe(feature_settings=None) -> None:
        got.update(feature_settings)

    return app, got


@pytest.mark.parametrize("name", SETTING_NAMES)
def test_a_setting_reaches_every_entry_point(name, atts):
    from sklearn.base import clone
    from typer.testing import CliRunner

    from attntopo.sklearn import AttentionFeatures

    value, words = SAMPLE[name]
    fs = FeatureSettings(**{name: value})
    assert getattr(fs, name) == value
    assert fs.st()[name] == (list(value) if isinstance(value, tuple) else value)
    # features: the keyword is the record's field; the table records it
    by_kw = features(atts, n_jobs=1, **{name: value})
    by_record = features(atts, settings=fs, n_jobs=1)
    np.testing.assert_array_equal(by_kw.values, by_record.values)
    assert by_kw.columns == by_record.columns
    # the estimator: one parameter, cloned, into its record
    est = clone(AttentionFeatures(**{name: value}))
    assert est.get_params()[name] == value and est.feature_settings() == fs
    # a corpus store's settings hold it, its manifest keeps it, a change of it is named
    if name == "min_persistence":
        with pytest.raises(InvalidInputError, match="a corpus store keeps every bar"):
            make_settings(TOY, _model_hash="sha256:0", **{name: value})
    else:
        st = make_settings(TOY, _model_hash="sha256:0", **{name: value})
        assert getattr(st.features, name) == value
        assert CorpusSettings.from_manifest(json.loads(json.dumps(st.to_manifest()))) == st
        assert first_difference(make_settings(TOY, _model_hash="sha256:0"), st)[0] == name
    # the command line: its option, parsed into the keyword
    app, got = _probe_command()
    result = CliRunner().invoke(app, words)
    assert result.exit_code == 0, result.output
    assert FeatureSettings(**{k: v for k, v in got.items() if v is not None}) == fs


def test_the_spectral_k_setting_keeps_that_many_eigenvalues(atts):
    """The setting added by the three declarations: the spectral set's columns and values."""
    ten = features(atts, sets=("spectral",), layers=[0], heads=[0], n_jobs=1)
    three = features(atts, sets=("spectral",), layers=[0], heads=[0], spectral_k=3, n_jobs=1)
    assert three.columns == ("L0H0.spectral.eig_1", "L0H0.spectral.eig_2", "L0H0.spectral.eig_3")
    np.testing.assert_array_equal(three.values, ten.values[:, :3])
    with pytest.raises(InvalidInputError, match="spectral_k must be an int >= 1"):
        FeatureSettings(spectral_k=0)


def test_a_bad_option_value_is_one_line():
    from typer.testing import CliRunner

    app, _ = _probe_command()
    result = CliRunner().invoke(app, ["--thresholds", "0.1,x"])
    assert isinstance(result.exception, InvalidInputError)
    assert (
        str(result.exception) == "--thresholds expects numbers such as 0.1 or 0.1,0.5; got '0.1,x'"
    )
