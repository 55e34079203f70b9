"""AttentionFeatures(memory=): cross-validation computes each text's features once.

Counted, not timed: every text that goes through the model's forward pass is counted (a
wrapper around ``AttentionModel.attention``), and so is every ``features()`` call."""

from __future__ import annotations

import os

import numpy as np
import pytest

import attntopo.sklearn as at_sklearn
from attntopo.datasets import FORTUNES_DIR, fortunes
from attntopo.errors import InvalidInputError
from attntopo.features import features
from attntopo.models.model import AttentionModel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.isdir(FORTUNES_DIR), reason="Debian's fortunes are not installed"
    ),
]
SETTINGS = dict(sets=("template", "js"), layers=[0, 1], n_jobs=1)


@pytest.fixture
def counted(monkeypatch):
    """Texts through the forward pass, and features() calls, during the test."""
    seen = {"forward_texts": 0, "features_calls": 0}
    forward = AttentionModel.attention
    compute = at_sklearn.features

    def counting_forward(self, texts, *a, **kw):
        seen["forward_texts"] += 1 if isinstance(texts, str) else len(texts)
        return forward(self, texts, *a, **kw)

    def counting_features(*a, **kw):
        seen["features_calls"] += 1
        return compute(*a, **kw)

    stream = AttentionModel.stream

    def counting_stream(self, texts, *a, **kw):  # features() runs the model layer by layer
        seen["forward_texts"] += 1 if isinstance(texts, str) else len(texts)
        return stream(self, texts, *a, **kw)

    monkeypatch.setattr(AttentionModel, "attention", counting_forward)
    monkeypatch.setattr(AttentionModel, "stream", counting_stream)
    monkeypatch.setattr(at_sklearn, "features", counting_features)
    return seen


def _pipe(memory):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    return Pipeline(
        [
            ("topo", at_sklearn.AttentionFeatures(**SETTINGS, memory=memory)),
            ("scale", StandardScaler()),
            ("clf", LogisticRegression(max_iter=2000)),
        ]
    )


def test_five_fold_cross_validation_runs_each_text_through_the_model_once(
    minilm, tmp_path, counted
):
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    texts, labels = fortunes(
        categories=["computers", "food"], n_per_category=10, max_words=20, seed=1
    )
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    scores = cross_val_score(_pipe(str(tmp_path / "cache")), texts, labels, cv=folds)
    assert scores.shape == (5,)
    # one pass over the 20 texts in all (fold 1 computes them; folds 2-5 read them back),
    # in two features() calls (fold 1's training part, then its test part)
    assert counted == {"forward_texts": len(texts), "features_calls": 2}
    # a grid search over the classifier reuses the same rows: no forward pass at all
    from sklearn.model_selection import GridSearchCV

    GridSearchCV(_pipe(str(tmp_path / "cache")), {"clf__C": [0.1, 1.0]}, cv=3).fit(texts, labels)
    assert counted["forward_texts"] == len(texts)
    # the cached rows are the rows features() computed: fold 1's two calls (its training part,
    # then its test part), bit for bit. (features() on all 20 texts at once pads other batches,
    # so its float32 forward pass may differ in the last bits: not what the cache promises.)
    train, test = next(folds.split(texts, labels))
    direct = np.empty((len(texts), len(features([texts[0]], minilm, **SETTINGS).columns)))
    for part in (train, test):
        direct[part] = features([texts[i] for i in part], minilm, **SETTINGS).values
    cached = (
        at_sklearn.AttentionFeatures(**SETTINGS, memory=tmp_path / "cache")
        .fit(texts)
        .transform(texts)
    )
    np.testing.assert_array_equal(cached, direct)


def test_without_memory_every_fold_recomputes(minilm, counted):
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    texts, labels = fortunes(
        categories=["computers", "food"], n_per_category=5, max_words=20, seed=1
    )
    cross_val_score(_pipe(None), texts, labels, cv=StratifiedKFold(5, shuffle=True, random_state=0))
    assert counted["forward_texts"] == 5 * len(texts)  # each fold: 4/5 to fit, 1/5 to score


def test_the_key_holds_the_settings_and_the_text(minilm, tmp_path, counted):
    from joblib import Memory

    memory = Memory(tmp_path, verbose=0)
    texts = ["The cat sat on the mat.", "Dogs bark at night."]
    a = at_sklearn.AttentionFeatures(**SETTINGS, memory=memory).fit(texts)
    a.transform(texts)
    assert counted["forward_texts"] == 2
    a.transform(texts[::-1] + ["A new text arrives."])
    assert counted["forward_texts"] == 3  # only the new one
    b = at_sklearn.AttentionFeatures(**{**SETTINGS, "drop_special": True}, memory=memory).fit(texts)
    b.transform(texts)
    assert counted["forward_texts"] == 5  # other settings: other rows
    c = at_sklearn.AttentionFeatures(**{**SETTINGS, "layers": [0]}, memory=memory).fit(texts)
    c.transform(texts)
    assert counted["forward_texts"] == 7  # other heads, other columns
    memory.clear(warn=False)
    a.transform(texts)
    assert counted["forward_texts"] == 9


def test_bad_memory_is_one_clear_error():
    with pytest.raises(
        InvalidInputError, match="memory must be None, a folder path or a joblib.Memory"
    ):
        at_sklearn.AttentionFeatures(memory=3).fit(["a text", "another"])


def test_grid_search_over_thresholds(minilm, tmp_path, counted):
    """GridSearchCV searches a feature setting (the graph set's thresholds): each candidate
    computes each text once (memory), and its columns are those of features() with it."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline

    texts, labels = fortunes(
        categories=["computers", "food"], n_per_category=6, max_words=20, seed=2
    )
    base = dict(sets=("graph",), layers=[0], heads=[0, 1], n_jobs=1)
    pipe = Pipeline(
        [
            ("topo", at_sklearn.AttentionFeatures(**base, memory=tmp_path / "cache")),
            ("clf", LogisticRegression(max_iter=2000)),
        ]
    )
    grid = [(0.05,), (0.1, 0.5)]
    search = GridSearchCV(
        pipe, {"topo__thresholds": grid}, cv=StratifiedKFold(2, shuffle=True, random_state=0)
    )
    search.fit(texts, labels)
    assert [p["topo__thresholds"] for p in search.cv_results_["params"]] == grid
    assert search.best_params_["topo__thresholds"] in grid
    # two settings, each text through the model once per setting (the refit reads the cache)
    assert counted["forward_texts"] == 2 * len(texts)
    for thresholds in grid:
        topo = clone_with(search.best_estimator_, thresholds)
        direct = features(texts, minilm, thresholds=thresholds, **base)
        assert list(topo.get_feature_names_out()) == list(direct.columns)
        assert {c.split(".graph.")[1].rsplit(".", 1)[0] for c in direct.columns} == {
            f"t{t:g}" for t in thresholds
        }
        np.testing.assert_array_equal(topo.transform(texts), direct.values)
    assert counted["forward_texts"] == 2 * len(texts) + 2 * len(texts)  # the direct features()


def clone_with(pipeline, thresholds):
    from sklearn.base import clone

    topo = clone(pipeline.named_steps["topo"]).set_params(thresholds=thresholds)
    return topo.fit(["a text"])
