"""Features on the real MiniLM (and SmolLM2 for generation), and AttentionFeatures under
scikit-learn's conventions, in a pipeline with cross-validation on real fortunes."""

from __future__ import annotations

import os
import pickle
from itertools import islice

import networkx as nx
import numpy as np
import pytest

import attntopo as at
from _feature_refs import graph_reference
from attntopo.datasets import FORTUNES_DIR, fortunes, generated_vs_human
from attntopo.errors import InvalidInputError
from attntopo.features import (
    DEFAULT_SETS,
    DEFAULT_THRESHOLDS,
    TEMPLATES,
    feature_names,
    features,
)

pytestmark = pytest.mark.slow

TEXTS = [
    "The cat sat on the mat, and then it slept.",
    "Quantum information theory allows us to study attention!",
]


@pytest.fixture(scope="module")
def table(minilm):
    return features(TEXTS, model=minilm, sets=DEFAULT_SETS, layers=[0, 5], n_jobs=1)


def test_a_pair_given_as_a_list_is_the_pair(minilm):
    # issue 33: json.load gives pairs as lists; they were refused ("texts[0] is a list")
    kw = dict(sets=("prompt", "graph"), layers=[0], heads=[0, 3], n_jobs=1)
    as_list = features([["Why is the sky blue?", "Scattering."]], minilm, **kw)
    as_tuple = features([("Why is the sky blue?", "Scattering.")], minilm, **kw)
    assert as_list == as_tuple and as_list.texts == ["Why is the sky blue? Scattering."]


def test_columns_and_values(table, minilm):
    assert list(table.columns) == feature_names(minilm, layers=[0, 5])
    assert table.values.shape == (2, len(table.columns))
    assert np.all(np.isfinite(table.values))
    assert table.settings["model"] == minilm.name and table.texts == TEXTS


def test_graph_set_on_real_attention_equals_networkx(table, minilm):
    att = minilm.attention(TEXTS, layers=[5])[0]  # the batch features() ran; special tokens kept
    for head in (0, 7):
        cols = [c for c in table.columns if c.startswith(f"L5H{head}.graph.")]
        got = table.to_pandas().loc[0, cols].to_numpy()
        np.testing.assert_array_equal(
            got, graph_reference(att.weights[0, head].astype(np.float64), DEFAULT_THRESHOLDS)
        )


def test_js_set_equals_the_analysis_of_the_same_text(table, minilm):
    # the same padded batch of both texts: the same float32 forward pass, so strict tolerances
    a = at.analyze(TEXTS, minilm, layers=[0])[1]  # drop_special=False in both
    df = table.to_pandas()
    for head in (2, 11):
        s = a.diagram(0, head).summary()
        for d in (0, 1):
            assert df.loc[1, f"L0H{head}.js.h{d}.n_bars"] == s[d]["n_bars"]
            assert df.loc[1, f"L0H{head}.js.h{d}.total_persistence"] == pytest.approx(
                s[d]["total_persistence"], rel=1e-12, abs=1e-15
            )
            assert df.loc[1, f"L0H{head}.js.h{d}.entropy"] == pytest.approx(
                s[d]["persistence_entropy"], rel=1e-12, abs=1e-15
            )


def test_template_set_on_real_attention(table, minilm):
    att = minilm.attention(TEXTS, layers=[0])[0]
    A = att.weights[0, 3].astype(np.float64)
    n = A.shape[0]
    comma = [k for k, t in enumerate(att.tokens) if t == ","]
    assert comma, "the tokenizer should give the comma a token of its own"
    T = {
        "identity": np.eye(n),
        "prev": np.eye(n, k=-1),
        "next": np.eye(n, k=1),
        "first": np.zeros((n, n)),
        "last": np.zeros((n, n)),
        "punct": np.zeros((n, n)),
    }
    T["first"][:, 0] = 1
    T["last"][:, -1] = 1
    punct = [k for k, t in enumerate(att.tokens) if t in (",", ".")]
    T["punct"][:, punct] = 1 / len(punct)
    df = table.to_pandas()
    for name in TEMPLATES:
        ref = np.linalg.norm(A - T[name]) / np.sqrt(np.sum(A * A) + np.sum(T[name] ** 2))
        assert df.loc[0, f"L0H3.template.{name}"] == pytest.approx(ref, rel=1e-12)


def test_prompt_set_on_pairs(minilm):
    pairs = [("What is the capital of France?", "Paris is the capital of France.")]
    t = features(pairs, model=minilm, sets=("prompt",), layers=[2], heads=[4])
    assert t.columns == ("L2H4.prompt.js", "L2H4.prompt.attention")
    att = minilm.attention(t.texts[0], layers=[2], heads=[4])
    n_prompt = len(minilm.tokenize(pairs[0][0]).ids) - 2  # without [CLS] and [SEP]
    real = att.drop_special()
    prompt = np.arange(real.n_tokens) < n_prompt
    D = at.token_distances(real)[0, 0]
    Z = D.copy()
    Z[np.ix_(prompt, prompt)] = 0  # TOHA: the prompt is one point
    g = nx.Graph()
    g.add_weighted_edges_from((i, j, Z[i, j]) for i in range(len(Z)) for j in range(i + 1, len(Z)))
    mst = nx.minimum_spanning_tree(g).size(weight="weight")
    assert t.values[0, 0] == pytest.approx(mst / (~prompt).sum(), rel=1e-12)


# ------------------------------------------------------------------ scikit-learn
def test_estimator_conventions():
    from sklearn.base import clone
    from sklearn.utils.estimator_checks import (
        check_get_params_invariance,
        check_no_attributes_set_in_init,
        check_parameters_default_constructible,
        check_set_params,
    )

    from attntopo.sklearn import AttentionFeatures

    est = AttentionFeatures(sets=("template",), layers=[0])
    for check in (
        check_no_attributes_set_in_init,
        check_parameters_default_constructible,
        check_get_params_invariance,
        check_set_params,
    ):
        check("AttentionFeatures", est)
    c = clone(est)
    assert c.get_params() == est.get_params() and c is not est
    c.set_params(heads=[1, 2])
    assert c.heads == [1, 2] and est.heads is None


def test_one_class_is_refused_before_any_model_runs():
    from attntopo.sklearn import AttentionFeatures

    with pytest.raises(InvalidInputError, match="single class"):
        AttentionFeatures(model="no-such-model").fit(["a b", "c d"], ["x", "x"])
    with pytest.raises(InvalidInputError, match="one string"):
        AttentionFeatures().fit("a single string")


def test_transform_set_output_and_pickle_without_weights(minilm):
    from attntopo.sklearn import AttentionFeatures

    est = AttentionFeatures(sets=("template", "js"), layers=[1], heads=[0, 5]).fit(TEXTS)
    X = est.transform(TEXTS)
    assert X.shape == (2, est.n_features_out_) and X.dtype == np.float64
    blob = pickle.dumps(est)
    assert len(blob) < 20_000  # names and settings, never the model
    again = pickle.loads(blob)
    np.testing.assert_array_equal(again.transform(TEXTS), X)
    df = est.set_output(transform="pandas").transform(TEXTS)
    assert list(df.columns) == list(est.get_feature_names_out()) and df.shape == X.shape
    # scikit-learn's pipelines ask for the names positionally
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = Pipeline([("topo", est), ("scale", StandardScaler())]).fit(TEXTS)
    assert list(pipe.get_feature_names_out()) == list(est.get_feature_names_out(None))


@pytest.mark.skipif(
    not os.path.isdir(FORTUNES_DIR),
    reason=(f"Debian's fortunes are not installed at {FORTUNES_DIR}: run 'make fortunes'"),
)
def test_pipeline_cross_validation_on_fortunes(minilm):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from attntopo.sklearn import AttentionFeatures, SelectHeads

    texts, labels = fortunes(
        categories=["computers", "food", "law"], n_per_category=8, max_words=25, seed=0
    )
    pipe = Pipeline(
        [
            ("topo", AttentionFeatures(sets=("template", "js"), layers=[0, 1], n_jobs=1)),
            ("heads", SelectHeads(k=4, cv=2)),
            ("scale", StandardScaler()),
            ("clf", LogisticRegression(max_iter=2000)),
        ]
    ).set_output(transform="pandas")
    scores = cross_val_score(
        pipe, texts, labels, cv=StratifiedKFold(3, shuffle=True, random_state=0)
    )
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    fitted = pipe.fit(texts, labels)
    assert len(fitted.named_steps["heads"].heads_) == 4
    assert fitted.predict(texts[:2]).shape == (2,)


# ------------------------------------------------------------------ generation
@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
@pytest.mark.skipif(not os.path.isdir(FORTUNES_DIR), reason="Debian's fortunes are not installed")
def test_generated_vs_human_is_cached(tmp_path):
    d = generated_vs_human(n=2, seed=0, memory=tmp_path)
    assert d.labels == ["human", "machine"] and d.groups == [0, 0]
    human, machine = d.texts
    assert machine.split()[:4] == human.split()[:4] and machine != human
    files = list(tmp_path.glob("generated_vs_human-*.jsonl"))
    assert len(files) == 1
    assert generated_vs_human(n=2, seed=0, memory=tmp_path).texts == d.texts  # from the cache
    generated_vs_human(n=2, seed=0, memory=tmp_path, temperature=0.5)
    assert len(list(tmp_path.glob("generated_vs_human-*.jsonl"))) == 2  # settings in the key
    assert list(islice(d, 2))[0] == d.texts


def test_a_pair_whose_answer_was_truncated_away_is_one_line_naming_it(minilm):
    """A prompt filling the whole context leaves its answer no token: a typed one-line error
    naming the text (the same check a corpus of pairs applies, features.pipeline.answer_check)."""
    pairs = [("a b", "c"), ("word " * 600, "the answer")]
    with pytest.raises(InvalidInputError) as e:
        at.features(pairs, minilm, sets=("prompt",), truncate=True, layers=[0], heads=[0])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("texts[1]: the answer has no token after the prompt")


def test_a_pair_whose_prompt_kept_no_token_is_one_line_naming_it(minilm, tmp_path):
    """A prompt of characters MiniLM's tokenizer drops (a zero-width space) leaves the prompt
    score nothing to attach the answer to: one line naming the text for both quantities (the
    attention score raised torch's IndexError), a failed row of a corpus; the lookback set,
    whose context is then [CLS], still scores the pair."""
    import json

    from attntopo import corpus
    from attntopo.corpus import open_store

    pairs = [("a b", "c"), ("\u200b", "the answer")]
    kw = {"layers": [0], "heads": [0]}
    for q in (("attention",), ("js",)):
        with pytest.raises(InvalidInputError) as e:
            at.features(pairs, minilm, sets=("prompt",), prompt_quantities=q, **kw)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith("texts[1]: the prompt kept no token"), msg
    assert at.features(pairs, minilm, sets=("lookback",), **kw).shape == (2, 1)
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps({"p": p, "a": a}) + "\n" for p, a in pairs))
    corpus.run(
        src,
        out=tmp_path / "st",
        model=minilm,
        sets=("prompt",),
        text_column="p",
        answer_column="a",
        **kw,
    )
    df = open_store(tmp_path / "st").to_pandas()
    assert list(df["status"]) == ["ok", "failed"]
    assert df["error"][1].startswith("InvalidInputError: the prompt kept no token"), df["error"][1]
