"""attntopo.sklearn without a model: the estimator rules scikit-learn states (``__init__`` stores,
``get_params``/``set_params``/``clone`` round-trip, nothing validated or learned before ``fit``),
checked with scikit-learn's own checks where they need no fit; the checks ``fit`` makes before any
model runs; and :class:`SelectHeads` on feature tables built here, its ANOVA scores against
SciPy's one-way ANOVA.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

pytest.importorskip("sklearn")

from scipy.stats import f_oneway  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError, SkipTestWarning  # noqa: E402
from sklearn.utils import estimator_checks as checks  # noqa: E402

from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.sklearn import AttentionFeatures, SelectHeads, ablate_heads  # noqa: E402

ESTIMATORS = [AttentionFeatures, SelectHeads]


def _init_params(cls) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


# ------------------------------------------------------------ estimator rules
@pytest.mark.parametrize("cls", ESTIMATORS)
@pytest.mark.parametrize(
    "check",
    [
        checks.check_parameters_default_constructible,
        checks.check_no_attributes_set_in_init,
        checks.check_get_params_invariance,
        checks.check_set_params,
        checks.check_estimator_cloneable,
        checks.check_estimator_repr,
        checks.check_do_not_raise_errors_in_init_or_set_params,
        checks.check_estimator_tags_renamed,
    ],
)
def test_scikit_learn_rules_that_need_no_fit(cls, check):
    check(cls.__name__, cls())


def test_check_estimator_runs_what_applies_to_text_input():
    """scikit-learn's own check_estimator: for an estimator of strings (its tags) it runs the
    checks that apply and skips the numeric ones, saying so."""
    with pytest.warns(SkipTestWarning, match="requires input"):
        checks.check_estimator(AttentionFeatures())


def test_every_feature_setting_is_searchable():
    """GridSearchCV sets feature settings through set_params: each one reaches FeatureSettings."""
    from attntopo.features import FeatureSettings

    est = AttentionFeatures()
    grid = {
        "thresholds": (0.1, 0.3),
        "scales": (0.2,),
        "quantiles": (0.5, 0.9),
        "cycle_cap": 7,
        "sets": ("graph",),
        "min_persistence": 0.01,
        "engine": "ripser",
        "drop_special": True,
    }
    twin = clone(est).set_params(**grid)
    assert twin.feature_settings() == FeatureSettings(**grid)
    assert clone(twin).get_params() == twin.get_params()
    assert est.feature_settings() == FeatureSettings()


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_get_params_are_the_init_arguments_and_clone_keeps_them(cls):
    est = cls()
    assert sorted(est.get_params()) == sorted(_init_params(cls))
    # every parameter set to a distinct, unvalidated value: stored as given, cloned as given
    odd = {name: ("odd", k) for k, name in enumerate(_init_params(cls))}
    est.set_params(**odd)
    assert est.get_params() == odd
    twin = clone(est)
    assert twin is not est and twin.get_params() == odd
    assert pickle.loads(pickle.dumps(est)).get_params() == odd
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(no_such_parameter=1)


def test_attention_features_holds_a_name_never_weights():
    est = AttentionFeatures(model="minilm", sets=("js",), layers=[0], heads=[1, 2])
    assert len(pickle.dumps(est)) < 2_000  # clones and pickles carry no model
    with pytest.raises(NotFittedError):
        est.transform(["a text"])
    with pytest.raises(NotFittedError):
        est.get_feature_names_out()


@pytest.mark.parametrize(
    "X, y, kwargs, fragment",
    [
        ("one text", None, {}, "not one string"),
        (np.array([["a", "b", "c"]]), None, {}, "1-D list of texts or"),
        ([("a", 3)], None, {}, r"X\[0\] is a tuple: every item must be a string or a \(prompt"),
        (["a", 3], None, {}, r"X\[1\] is a int"),
        ([], None, {}, "X holds no texts"),
        (5, None, {}, "X must be a list of texts, got int"),
        (["a", "b"], ["x", "x"], {}, "class"),  # one class
        (["a", "b"], None, {"verbose": -1}, "verbose must be an integer >= 0"),
        (["a", "b"], None, {"model": 3}, "model must be a model name"),
        (["a", "b"], None, {"model": ""}, "model must be a model name"),
    ],
)
def test_fit_checks_before_any_model_runs(X, y, kwargs, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        AttentionFeatures(**kwargs).fit(X, y)


def test_pairs_come_as_tuples_from_lists_arrays_and_tables():
    """(prompt, answer) pairs for the prompt and lookback sets: a list of pairs, an (n, 2)
    array or a DataFrame of two columns; the cache keys a pair by both parts."""
    import pandas as pd

    from attntopo.features._cache import row_key
    from attntopo.sklearn import _texts

    want = [("Where?", "Paris."), ("Who?", "Me.")]
    assert _texts([["Where?", "Paris."], ("Who?", "Me.")]) == want
    assert _texts(np.array(want)) == want
    assert _texts(pd.DataFrame(want, columns=["prompt", "answer"])) == want
    assert _texts(["a text", ("a", "pair")]) == ["a text", ("a", "pair")]
    assert len({row_key("d", ("a b", "c")), row_key("d", ("a", "b c")), row_key("d", "a b c")}) == 3


# ---------------------------------------------------------------- SelectHeads
def _table(n: int = 60, seed: int = 0):
    """Features of 3 layers x 2 heads (2 columns each) where head (1, 0) carries the label."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    cols = {}
    for layer in range(3):
        for head in range(2):
            for q in ("a", "b"):
                v = rng.normal(size=n)
                if (layer, head) == (1, 0):
                    v = v + 2.5 * y
                elif (layer, head) == (2, 1) and q == "a":
                    v = v + 0.8 * y  # a weaker signal in one column
                cols[f"L{layer}H{head}.js.{q}"] = v
    return pd.DataFrame(cols), y


def test_select_heads_anova_is_scipys_one_way_anova_per_column_averaged_per_head():
    X, y = _table()
    sel = SelectHeads(k=2, criterion="anova").fit(X, y)
    for (layer, head), score in sel.scores_.items():
        cols = [c for c in X.columns if c.startswith(f"L{layer}H{head}.")]
        F = [f_oneway(X[c][y == 0], X[c][y == 1]).statistic for c in cols]
        assert score == pytest.approx(np.mean(F), rel=1e-10)
    assert sel.heads_ == [(1, 0), (2, 1)]
    kept = [c for c in X.columns if c.startswith(("L1H0.", "L2H1."))]
    assert list(sel.get_feature_names_out()) == kept
    assert list(sel.transform(X).columns) == kept
    np.testing.assert_array_equal(sel.transform(X.to_numpy()), X[kept].to_numpy())
    assert sel.n_features_in_ == X.shape[1] and sel.support_.sum() == 4


def test_select_heads_names_its_columns_inside_a_pipeline():
    """scikit-learn calls get_feature_names_out(input_features) positionally (Pipeline,
    FeatureUnion): a keyword-only parameter was a TypeError there."""
    from sklearn.pipeline import FeatureUnion, Pipeline

    X, y = _table()
    kept = [c for c in X.columns if c.startswith(("L1H0.", "L2H1."))]
    pipe = Pipeline([("sel", SelectHeads(k=2, criterion="anova"))]).fit(X, y)
    assert list(pipe.get_feature_names_out()) == kept
    assert list(pipe.named_steps["sel"].get_feature_names_out(list(X.columns))) == kept
    union = FeatureUnion([("sel", SelectHeads(k=2, criterion="anova"))]).fit(X, y)
    assert list(union.get_feature_names_out()) == [f"sel__{c}" for c in kept]


def test_select_heads_with_plain_arrays_and_its_errors():
    X, y = _table()
    arr, names = X.to_numpy(), list(X.columns)
    sel = SelectHeads(k=1, criterion="anova", feature_names=names).fit(arr, y)
    assert sel.heads_ == [(1, 0)]
    with pytest.raises(InvalidInputError, match="needs column names"):
        SelectHeads(k=1, criterion="anova").fit(arr, y)
    with pytest.raises(InvalidInputError, match="unknown head criterion 'best'"):
        SelectHeads(criterion="best").fit(X, y)
    with pytest.raises(InvalidInputError, match="k=7 but the features hold only 6 heads"):
        SelectHeads(k=7, criterion="anova").fit(X, y)
    with pytest.raises(InvalidInputError, match="12 columns as at fit time"):
        sel.transform(arr[:, :5])
    with pytest.raises(NotFittedError):
        SelectHeads().transform(X)


def test_select_heads_cv_accuracy_finds_the_informative_head():
    X, y = _table(n=80, seed=3)
    sel = SelectHeads(k=1, criterion="cv_accuracy", cv=4).fit(X, y)
    assert sel.heads_ == [(1, 0)] and sel.scores_[(1, 0)] > 0.85
    assert clone(sel).get_params() == sel.get_params() and not hasattr(clone(sel), "heads_")


def test_ablate_heads_needs_a_fitted_attention_features_step():
    from sklearn.pipeline import Pipeline

    with pytest.raises(InvalidInputError, match="AttentionFeatures step"):
        ablate_heads(Pipeline([("select", SelectHeads())]), ["a"])
    with pytest.raises(NotFittedError):
        ablate_heads(Pipeline([("topo", AttentionFeatures())]), ["a"])
