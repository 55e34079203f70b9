"""The feature-set registry: every list of sets derives from it, the docs' table is equal to it,
and a new set is one record plus its function."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree

import attntopo.features as F
from _feature_refs import texts_attention
from attntopo.distances import token_distances
from attntopo.errors import InvalidInputError
from attntopo.features import _compute, _layers, _registry
from attntopo.features._registry import FEATURE_SETS, FeatureSet, sets_table

DOCS = Path(__file__).resolve().parents[3] / "docs"
ST = F.FeatureSettings(sets=tuple(FEATURE_SETS)).st()
SETTINGS = tuple(f.name for f in dataclasses.fields(F.FeatureSettings))


def test_docs_table_is_the_registry():
    assert sets_table() in (DOCS / "features.md").read_text(encoding="utf-8")


def test_docs_name_the_sets_that_drop_special_tokens():
    text = (DOCS / "features.md").read_text(encoding="utf-8")
    said = re.search(r"With `drop_special=True` \(opt-in\) the sets (.*?)\ssee\s", text, re.S)
    assert said, "docs/features.md no longer says which sets drop_special=True changes"
    named = re.findall(r"`(\w+)`", said.group(1))
    assert named == [n for n, s in FEATURE_SETS.items() if s.drops_special]


def test_every_record_is_complete():
    for name, s in FEATURE_SETS.items():
        assert s.name == name and s.summary and s.source
        q = s.quantities(ST)
        assert q and len(set(q)) == len(q) and all(isinstance(x, str) for x in q)
        assert s.input in ("text", "pair")
        # a set reads the heads, the token distances' diagrams, its own matrices' diagrams,
        # or whole layers (one block per text)
        assert (s.head is not None) + s.persistence + s.per_text == 1
        assert s.on_distances == (s.persistence and s.matrices is None)


def test_lists_derive_from_the_registry():
    sets = FEATURE_SETS
    assert F.DEFAULT_SETS == tuple(n for n, s in sets.items() if s.default)
    assert set(_compute.PERSISTENCE_SETS) == {n for n, s in sets.items() if s.persistence}
    assert set(_compute.PAIR_SETS) == {n for n, s in sets.items() if s.input == "pair"}
    assert set(_layers.JS_SETS) == {n for n, s in sets.items() if s.on_distances}
    assert set(_layers.MODEL_SETS) == {n for n, s in sets.items() if s.per_text}
    from attntopo.cli._corpus import _sets_help

    drop_help = (
        dataclasses.fields(F.FeatureSettings)[SETTINGS.index("drop_special")].metadata["cli"].text()
    )
    for name in sets:
        assert f"``{name}``" in F.__doc__
        assert name in _sets_help()
        assert (name in drop_help) == sets[name].drops_special
    # the settings accept exactly the registry's names
    for name in sets:
        F.FeatureSettings(sets=(name,))
    with pytest.raises(InvalidInputError, match="unknown feature set 'nope'; allowed: 'js'"):
        F.FeatureSettings(sets=("nope",))


def test_a_record_must_say_how_it_is_computed():
    q = _registry._graph_quantities
    with pytest.raises(TypeError, match="exactly one of head=, diagrams= and layer="):
        FeatureSet("x", "x", "x", q)
    with pytest.raises(TypeError, match="matrices= goes with diagrams="):
        FeatureSet("x", "x", "x", q, head=_registry._graph, matrices=_registry._barcode_matrices)
    with pytest.raises(TypeError, match="layer= and text= go together"):
        FeatureSet("x", "x", "x", q, layer=_registry._zigzag_layer)


def test_reading_the_registry_imports_no_torch():
    code = (
        "import sys, attntopo.features as F; F.FEATURE_SETS['js'].summary; "
        "import attntopo.cli._corpus as c; c._sets_help(); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ a new set: one record
_atts = texts_attention


def test_a_new_set_is_one_record(monkeypatch):
    """Two toy sets registered for the test only (the three steps of docs/architecture.md):
    one computed from the heads, one from the token distances' diagrams; features() and
    feature_names() take them with no other change, and their numbers are checked against
    independent computations."""
    monkeypatch.setitem(
        _registry._SETS,
        "row_max",
        FeatureSet(
            "row_max",
            "mean of each row's largest weight",
            "test",
            lambda st: ["mean"],
            head=lambda g: g.Wr.max(-1).mean(-1)[:, None],
            drops_special=True,
        ),
    )
    monkeypatch.setitem(
        _registry._SETS,
        "js_h0_total",
        FeatureSet(
            "js_h0_total",
            "total H0 persistence",
            "test",
            lambda st: ["total"],
            diagrams=lambda dgms, sizes, st: np.array(
                [[float(np.sum(np.diff(g.finite(0), axis=1)))] for g in dgms]
            ),
        ),
    )
    atts = _atts(np.random.default_rng(3), [6, 8])
    table = F.features(atts, sets=("row_max", "js_h0_total"), drop_special=True, n_jobs=1)
    assert list(table.columns[:2]) == ["L0H0.row_max.mean", "L0H1.row_max.mean"]
    assert table.columns[6] == "L0H0.js_h0_total.total"
    for k, a in enumerate(atts):
        real = a.drop_special()
        n = real.n_tokens
        assert n == a.n_tokens - 2
        W = real.weights.reshape(6, n, n)
        np.testing.assert_allclose(table.values[k, :6], W.max(-1).mean(-1), rtol=1e-12)
        # H0's finite bars are the minimum spanning tree's edges (scipy's, independent)
        mst = [minimum_spanning_tree(D).sum() for D in token_distances(W.astype(np.float64))]
        np.testing.assert_allclose(table.values[k, 6:], mst, rtol=1e-9, atol=1e-12)
