"""features() on attention given directly (no model), the FeatureTable result, head selection
and the bad-input rules."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attntopo as at
from _feature_refs import texts_attention
from attntopo.errors import EmptyTextError, InvalidInputError
from attntopo.features import (
    DEFAULT_SETS,
    FEATURE_SETS,
    FeatureTable,
    barcode_features,
    features,
    graph_features,
    parse_column,
    select_heads,
    template_features,
)
from attntopo.features._select import head_scores
from attntopo.features._template import punctuation_mask

_atts = texts_attention


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    atts = _atts(rng, [7, 9, 5])
    return atts, features(atts, sets=tuple(FEATURE_SETS)[:4], n_jobs=1)


def test_columns_rows_and_per_set_values(table):
    atts, t = table
    assert t.values.shape == (3, len(t.columns))
    assert len(set(t.columns)) == len(t.columns)
    assert {parse_column(c)[2] for c in t.columns} == set(DEFAULT_SETS)
    assert t.heads() == [(layer, head) for layer in range(2) for head in range(3)]
    # the set functions on the same matrices give the same numbers, head by head: by default
    # the attention as given (special tokens kept), with drop_special=True the real tokens'
    a = atts[1]
    full = a.weights.reshape(6, 9, 9)
    np.testing.assert_array_equal(t.select(sets="graph").values[1], graph_features(full).ravel())
    np.testing.assert_allclose(
        t.select(sets="barcode").values[1], barcode_features(full, n_jobs=1).ravel(), rtol=0, atol=0
    )
    real = a.drop_special().weights.reshape(6, 7, 7)
    dropped = features([a], sets=("graph", "barcode"), drop_special=True, n_jobs=1)
    np.testing.assert_array_equal(
        dropped.select(sets="graph").values[0], graph_features(real).ravel()
    )
    np.testing.assert_array_equal(
        dropped.select(sets="barcode").values[0], barcode_features(real, n_jobs=1).ravel()
    )
    punct = punctuation_mask(a.text, a.offsets, a.special)
    assert punct.any()
    np.testing.assert_array_equal(
        t.select(sets="template").values[1],
        template_features(a.weights.reshape(6, 9, 9), punct).ravel(),
    )
    assert np.all(np.isfinite(t.values))


def test_result_protocol(table, tmp_path):
    _, t = table
    cols = t.summary()
    assert len({len(v) for v in cols.values()}) == 1 and list(cols)[0] == "text_index"
    df = t.to_pandas()
    assert list(df.columns) == list(t.columns) and list(df.index) == [0, 1, 2]
    json.dumps(t.to_dict())
    t.save(tmp_path / "t")
    back = at.load_result(tmp_path / "t")
    assert isinstance(back, FeatureTable) and back == t
    assert back != t.select(sets="js")


def test_table_holds_no_matrices(table):
    # memory: once a row is computed nothing n x n stays (only the 2-D values table)
    _, t = table
    arrays = [v for v in vars(t).values() if isinstance(v, np.ndarray)]
    assert all(a.ndim <= 2 and a.shape[0] == 3 for a in arrays)


def test_rows_do_not_depend_on_the_chunking():
    rng = np.random.default_rng(5)
    atts = _atts(rng, [6, 8, 6, 7, 5])
    whole = features(atts, sets=("js", "template"), batch_size=16, n_jobs=1)
    chunked = features(atts, sets=("js", "template"), batch_size=2, n_jobs=1)
    assert whole == chunked


def test_layer_and_head_selection_names_model_indices():
    rng = np.random.default_rng(1)
    t = features(_atts(rng, [6]), sets=("template",), layers=[1], heads=[0, 2])
    assert t.columns[0] == "L1H0.template.identity" and t.columns[-1] == "L1H2.template.punct"


def test_unknown_set_lists_the_valid_ones():
    with pytest.raises(
        InvalidInputError, match="unknown feature set 'nope'; allowed: 'js', 'graph'"
    ):
        features(["a text"], sets=("nope",))


def test_empty_text_is_named_by_index_before_any_model_runs():
    with pytest.raises(EmptyTextError, match=r"texts\[2\] is empty .*on_empty='skip'"):
        features(["one", "two", "  ", ""], model="no-such-model-is-loaded")
    with pytest.raises(EmptyTextError, match="all 2 texts are empty"):
        features(["", " "], on_empty="skip")


@pytest.mark.parametrize(
    "pair, words",
    [
        (
            ("Why?", "  "),
            "texts[1]'s answer is empty or only whitespace (1 empty in all): remove the "
            "pair or pass on_empty='skip'",
        ),
        (["", "Because."], "texts[1]'s prompt is empty or only whitespace"),
        (("", "\t"), "texts[1]'s prompt and answer are empty or only whitespace"),
    ],
)
def test_an_empty_answer_is_named_as_the_answer(pair, words):
    # issue 33: an empty answer was reported as "texts[1] is empty" (an empty text); a pair
    # given as a list (as json.load gives it) is a pair, so its empty part is named too
    with pytest.raises(EmptyTextError) as e:
        features([("Fine?", "Yes."), pair], model="no-such-model-is-loaded")
    assert str(e.value).startswith(words)


def test_a_list_that_is_not_a_pair_says_what_an_item_may_be():
    with pytest.raises(InvalidInputError) as e:
        features([["a", "b", "c"]], model="no-such-model-is-loaded")
    assert str(e.value) == (
        "texts[0] is a list of 3 items: each item must be a string, a (prompt, response) pair of "
        "strings (a tuple or a 2-item list), an Attention or an Analysis"
    )


def test_on_empty_skip_reports_the_skipped():
    rng = np.random.default_rng(2)
    a, b = _atts(rng, [5, 6])
    t = features([a, "", b], sets=("template",), on_empty="skip")
    assert t.skipped == (1,) and list(t.index) == [0, 2] and len(t) == 2


def test_prompt_set_needs_pairs():
    with pytest.raises(
        InvalidInputError,
        match=r"prompt set needs \(prompt, response\) pairs of strings; texts\[0\] is a str",
    ):
        features(["just a text"], sets=("prompt",))


def test_bad_settings():
    for kwargs, msg in [
        ({"sets": ()}, "sets is empty"),
        ({"sets": ("js", "js")}, "distinct"),
        ({"thresholds": (0.1, 2.0)}, "thresholds must be"),
        ({"on_empty": "drop"}, "unknown on_empty"),
        ({"batch_size": 0}, "batch_size"),
    ]:
        with pytest.raises(InvalidInputError, match=msg):
            features(["text"], **kwargs)
    with pytest.raises(InvalidInputError, match="texts\\[1\\] is a int"):
        features(["ok", 3])


def _labelled_table(rng, informative):
    n, cols = 60, []
    y = np.repeat([0, 1], n // 2)
    values = rng.standard_normal((n, 12))
    for k, (layer, head) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        for q in range(3):
            cols.append(f"L{layer}H{head}.js.q{q}")
        if (layer, head) == informative:
            values[:, 3 * k] += 3.0 * y
    return FeatureTable(values, cols, np.arange(n), [""] * n), y


@pytest.mark.parametrize("criterion", ["cv_accuracy", "anova", "difference"])
def test_select_heads_finds_the_informative_head(criterion):
    t, y = _labelled_table(np.random.default_rng(3), (1, 0))
    assert select_heads(t, y, 1, criterion=criterion) == [(1, 0)]
    scores = head_scores(t.to_pandas(), y, criterion=criterion)
    assert max(scores, key=scores.get) == (1, 0) and len(scores) == 4


def test_difference_criterion_is_the_signed_difference_of_the_class_means():
    t, y = _labelled_table(np.random.default_rng(8), (0, 1))
    v = t.values.copy()
    v[:, 9] -= 5.0 * y  # L1H1's first column falls with the positive class
    t = FeatureTable(v, t.columns, t.index, t.texts)
    scores = head_scores(t, y, criterion="difference")
    for (layer, head), got in scores.items():
        cols = [k for k, c in enumerate(t.columns) if c.startswith(f"L{layer}H{head}.")]
        want = np.mean(v[y == 1][:, cols].mean(0) - v[y == 0][:, cols].mean(0))
        assert got == pytest.approx(want, abs=1e-12)
    assert max(scores, key=scores.get) == (0, 1) and min(scores, key=scores.get) == (1, 1)
    with pytest.raises(InvalidInputError, match="compares two classes; y has 3"):
        head_scores(t, np.arange(len(y)) % 3, criterion="difference")


def test_select_heads_refuses_one_class_and_too_many_heads():
    t, y = _labelled_table(np.random.default_rng(4), (0, 0))
    with pytest.raises(InvalidInputError, match="single class"):
        select_heads(t, np.zeros(len(y)), 1)
    with pytest.raises(InvalidInputError, match="only 4 heads"):
        select_heads(t, y, 5)
    with pytest.raises(InvalidInputError, match="columns="):
        select_heads(t.values, y, 1)


@pytest.mark.parametrize(
    "y, criterion, cv, words",
    [
        ([0, 1], "cv_accuracy", 3, "class 0 has 1 sample of 2, and every class needs at least 2"),
        (
            ["a", "b", "b", "b"],
            "cv_accuracy",
            3,
            "class 'a' has 1 sample of 4, and every class needs at least 2",
        ),
        (
            [0, 0, 1, 1],
            "cv_accuracy",
            3,
            "the largest class has 2 of 4 samples, and 3 folds need a class with at least 3",
        ),
        ([0, 0, 1, 1], "cv_accuracy", 1, "cv=1: cross-validation needs at least 2 folds"),
        (
            [0, 1],
            "anova",
            3,
            "it needs more samples than classes (at least 3 for 2 classes), got 2",
        ),
    ],
)
def test_select_heads_on_too_few_samples_says_how_many_it_needs(y, criterion, cv, words):
    # issue 33: these were scikit-learn's own ValueErrors (StratifiedKFold's, or none at all
    # for anova, whose F statistic was then NaN and every head scored 0)
    t, _ = _labelled_table(np.random.default_rng(5), (0, 0))
    t = FeatureTable(t.values[: len(y)], t.columns, np.arange(len(y)), [""] * len(y))
    for call in (select_heads, head_scores):
        args = (t, y, 1) if call is select_heads else (t, y)
        with pytest.raises(InvalidInputError) as e:
            call(*args, criterion=criterion, cv=cv)
        assert words in str(e.value) and "\n" not in str(e.value)
    if criterion == "cv_accuracy" and cv > 1:
        assert str(e.value).startswith(
            f"too few samples to score heads by cv_accuracy with cv={cv}: "
        )
        assert str(e.value).endswith(
            "give more labelled texts, a smaller cv (at least 2) or criterion='anova'"
        )


def test_enough_samples_for_the_folds_are_scored():
    t, _ = _labelled_table(np.random.default_rng(6), (0, 0))
    y = [0, 0, 0, 1, 1, 1]  # 3 of each: every fold tests every class
    t = FeatureTable(t.values[:6], t.columns, np.arange(6), [""] * 6)
    assert len(select_heads(t, y, 4, cv=3)) == 4
    three = FeatureTable(t.values[:3], t.columns, np.arange(3), [""] * 3)
    assert len(head_scores(three, [0, 1, 1], criterion="anova")) == 4  # 3 samples, 2 classes


def test_a_saved_table_loads_in_a_fresh_process(tmp_path):
    """load_result finds the feature_table kind without attntopo.features imported first."""
    import subprocess
    import sys

    table = FeatureTable(
        np.array([[1.0, 2.0]]), ("L0H0.js.h0.n_bars", "L0H1.js.h0.n_bars"), np.arange(1), ["a text"]
    )
    table.save(tmp_path / "t")
    code = (
        "import attntopo as at, sys; t = at.load_result(sys.argv[1]); "
        "assert 'attntopo.features' in sys.modules; print(t.kind, t.values.tolist())"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "t")], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "feature_table"
