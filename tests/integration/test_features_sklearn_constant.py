"""AttentionFeatures(drop_constant=True) and SelectHeads(criterion="anova") on real fortunes:
constant columns are found on the training texts (checked against numpy on features()),
computed once in fit_transform, and head selection no longer floods the user with warnings."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import attntopo.sklearn as at_sklearn
from attntopo.datasets import FORTUNES_DIR, fortunes
from attntopo.features import features

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.path.isdir(FORTUNES_DIR), reason="Debian's fortunes are not installed"
    ),
]
SETTINGS = dict(sets=("js", "graph"), layers=[0, 5], n_jobs=1)


def test_drop_constant_in_a_pipeline_with_anova_heads(minilm, monkeypatch):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    texts, labels = fortunes(
        categories=["computers", "food"], n_per_category=8, max_words=20, seed=2
    )
    full = features(texts, minilm, **SETTINGS)
    constant = [c for c, v in zip(full.columns, np.ptp(full.values, axis=0)) if v == 0]
    assert constant  # e.g. graph chordality and b1 at high thresholds, on 16 short texts

    calls = []
    compute = at_sklearn.features
    monkeypatch.setattr(
        at_sklearn, "features", lambda *a, **kw: calls.append(1) or compute(*a, **kw)
    )
    pipe = Pipeline(
        [
            ("topo", at_sklearn.AttentionFeatures(**SETTINGS, drop_constant=True)),
            ("heads", at_sklearn.SelectHeads(k=3, criterion="anova")),
            ("scale", StandardScaler()),
            ("clf", LogisticRegression(max_iter=2000)),
        ]
    ).set_output(transform="pandas")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scikit-learn's "Features [...] are constant." included
        pipe.fit(texts, labels)
    assert len(calls) == 1  # fit_transform: the features of the training texts once
    topo = pipe.named_steps["topo"]
    assert list(topo.constant_features_) == constant
    kept = [c for c in full.columns if c not in constant]
    assert list(topo.get_feature_names_out()) == kept
    # transform computes features() of the texts it is given (another padded batch than
    # `full`, so compare with that call: the float32 forward pass of a batch of 3 may differ
    # from the batch of 16 in the last bits), then keeps the supported columns
    three = features(texts[:3], minilm, **SETTINGS).values
    np.testing.assert_array_equal(topo.transform(texts[:3]), three[:, topo.support_])
    assert len(pipe.named_steps["heads"].heads_) == 3


def test_anova_heads_without_drop_constant_are_quiet_too(minilm):
    texts, labels = fortunes(
        categories=["computers", "food"], n_per_category=6, max_words=20, seed=2
    )
    X = features(texts, minilm, **SETTINGS).to_pandas()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sel = at_sklearn.SelectHeads(k=2, criterion="anova").fit(X, labels)
    for key, score in sel.scores_.items():
        assert np.isfinite(score) and score >= 0
