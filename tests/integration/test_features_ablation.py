"""ablate_heads on MiniLM with fortunes: the chosen heads attend uniformly in the forward pass,
later layers see it, and the pipeline's predictions are compared with and without."""

from __future__ import annotations

import os

import numpy as np
import pytest

from attntopo.datasets import FORTUNES_DIR, fortunes
from attntopo.errors import InvalidInputError
from attntopo.features import features
from attntopo.features._ablation import ablated_heads
from attntopo.sklearn import AttentionFeatures, SelectHeads, ablate_heads

pytestmark = pytest.mark.slow
TEXT = "The cat sat on the mat, and then it slept."


def test_ablated_heads_attend_uniformly_and_later_layers_change(minilm):
    before = minilm.attention([TEXT, "A shorter one."])
    with ablated_heads(minilm, [(1, 3), (-1, 0)]) as pairs:
        after = minilm.attention([TEXT, "A shorter one."])  # a padded batch: padding stays out
    assert pairs == [(1, 3), (5, 0)]
    for b, a in zip(before, after):
        n = a.n_tokens
        np.testing.assert_allclose(a.weights[1, 3], np.full((n, n), 1.0 / n), rtol=1e-6)
        np.testing.assert_allclose(a.weights[5, 0], np.full((n, n), 1.0 / n), rtol=1e-6)
        np.testing.assert_array_equal(a.weights[:2, :3], b.weights[:2, :3])  # before the ablation
        np.testing.assert_array_equal(a.weights[1, 4:], b.weights[1, 4:])  # same layer, other heads
        assert np.abs(a.weights[2:] - b.weights[2:]).max() > 1e-3  # later layers see the mean
    again = minilm.attention([TEXT, "A shorter one."])  # the model's own attention is back
    for b, a in zip(before, again):
        np.testing.assert_array_equal(a.weights, b.weights)
    assert minilm.hf_model.config._attn_implementation == "eager"


@pytest.mark.skipif(not os.path.isdir(FORTUNES_DIR), reason="Debian's fortunes are not installed")
def test_ablating_the_chosen_heads_moves_the_pipeline_and_controls_do_not(minilm, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    texts, labels = fortunes(
        categories=["computers", "food"], n_per_category=12, max_words=25, seed=0
    )
    topo = AttentionFeatures(sets=("template", "js"), layers=[0], n_jobs=1, memory=tmp_path)
    pipe = Pipeline(
        [
            ("topo", topo),
            ("heads", SelectHeads(k=3, criterion="anova")),
            ("scale", StandardScaler()),
            ("clf", LogisticRegression(max_iter=2000)),
        ]
    )
    pipe.set_output(transform="pandas").fit(texts, labels)
    chosen = pipe.named_steps["heads"].heads_
    result = ablate_heads(pipe, texts, labels, n_controls=2, random_state=0)
    assert result.heads == sorted(chosen)
    # independent: the features of the ablated pass, through the fitted steps after "topo"
    with ablated_heads(minilm, chosen):
        X = features(texts, minilm, sets=("template", "js"), layers=[0], n_jobs=1).to_pandas()
    X.index = range(len(texts))
    expected = pipe[1:].predict(X)
    np.testing.assert_array_equal(result.predictions_ablated, expected)
    np.testing.assert_array_equal(result.predictions, pipe.predict(texts))
    assert result.changed == np.mean(expected != result.predictions) > 0
    assert result.accuracy_ablated == np.mean(expected == np.asarray(labels))
    assert 0 < result.proba_shift <= 1
    # controls: other heads of layer 0 leave the chosen heads' attention, so the prediction, alone
    assert len(result.controls) == 2
    for c in result.controls:
        assert len(c["heads"]) == 3 and not set(c["heads"]) & set(chosen)
        assert c["changed"] == 0 and c["proba_shift"] < 1e-9
    assert "ablating L0H" in str(result) and "of predictions change" in str(result)
    # the cache was neither read nor written by the ablated passes
    np.testing.assert_array_equal(
        pipe.named_steps["topo"].transform(texts),
        features(texts, minilm, sets=("template", "js"), layers=[0], n_jobs=1).values,
    )
    assert pipe.named_steps["topo"].memory == tmp_path


def test_ablate_heads_refuses_what_it_cannot_do(minilm):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    pipe = Pipeline(
        [("topo", AttentionFeatures(sets=("template",), layers=[0])), ("clf", LogisticRegression())]
    ).fit([TEXT, "Another one.", "Third", "Fourth."], [0, 1, 0, 1])
    with pytest.raises(
        InvalidInputError, match="give heads=, or a pipeline with a fitted SelectHeads"
    ):
        ablate_heads(pipe, [TEXT])
    with pytest.raises(InvalidInputError, match="outside the model's 6 layers x 12 heads"):
        ablate_heads(pipe, [TEXT], heads=[(6, 0)])
    with pytest.raises(InvalidInputError, match="AttentionFeatures step"):
        ablate_heads(Pipeline([("clf", LogisticRegression())]), [TEXT], heads=[(0, 0)])
