"""evaluate_detectors: grouped CV, heads chosen inside each training fold, AUCs with bootstrap
intervals, gains over covariates; balanced_subsample.  Checked against scikit-learn computed
directly, on synthetic data (no model)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from attntopo.errors import InvalidInputError
from attntopo.features import (
    DetectorEvaluation,
    FeatureTable,
    balanced_subsample,
    evaluate_detectors,
    select_heads,
)
from attntopo.features._evaluate import (
    _replicates,
    weighted_auc,
    weighted_average_precision,
)


def _data(n=240, seed=0, n_heads=(3, 4), quantities=2, signal=1.0):
    """Labels driven by a length; a table of heads whose first column carries extra signal."""
    rng = np.random.default_rng(seed)
    length = rng.integers(1, 7, n).astype(float)
    y = (rng.random(n) < 1 / (1 + np.exp(-(length - 3.5)))).astype(int)
    groups = rng.integers(0, n // 4, n)
    cols = [
        f"L{li}H{h}.x.q{q}"
        for li in range(n_heads[0])
        for h in range(n_heads[1])
        for q in range(quantities)
    ]
    X = rng.normal(size=(n, len(cols)))
    X[:, 0] += signal * y
    return FeatureTable(X, tuple(cols), np.arange(n), [""] * n), y, groups, length


def _direct(X, y, groups, seed=0, C=0.1):
    """Out-of-fold decision functions by scikit-learn alone."""
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=1000))
    cv = StratifiedGroupKFold(5, shuffle=True, random_state=seed)
    return cross_val_predict(model, X, y, groups=groups, cv=cv, method="decision_function")


def _row(r, model, stratum="all", value="all"):
    rows = r.rows
    k = np.flatnonzero(
        (rows["model"] == model) & (rows["stratum"] == stratum) & (rows["value"] == value)
    )
    assert k.size == 1
    return {c: v[k[0]] for c, v in rows.items()}


# ------------------------------------------------------------------ weighted metrics
def _per_cell(metric, y, s, cells, weight):
    """A metric of each cell that has both classes, averaged with ``weight(y_cell)``."""
    num = den = 0.0
    for c in np.unique(cells):
        k = cells == c
        if 0 < y[k].sum() < k.sum():
            num += weight(y[k]) * metric(y[k], s[k])
            den += weight(y[k])
        elif metric is average_precision_score and y[k].sum():
            num, den = num + y[k].sum(), den + y[k].sum()  # only positives: precision 1
    return num / den if den else np.nan


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 2)), min_size=2, max_size=40
    )
)
def test_metrics_within_cells_are_the_cells_metrics_averaged(rows):
    s = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows], dtype=int)
    cells = np.array([r[2] for r in rows])
    auc = _per_cell(roc_auc_score, y, s, cells, lambda t: t.sum() * (t.size - t.sum()))
    ap = _per_cell(average_precision_score, y, s, cells, lambda t: t.sum())
    got = weighted_auc(s, y, cells=cells)
    assert (np.isnan(got) and np.isnan(auc)) or got == pytest.approx(auc, abs=1e-12)
    got = weighted_average_precision(s, y, cells=cells)
    assert (np.isnan(got) and np.isnan(ap)) or got == pytest.approx(ap, abs=1e-12)
    # a score that only says which cell a row is in ranks nothing within the cells
    assert (
        np.isnan(weighted_auc(cells * 1.0, y, cells=cells))
        or weighted_auc(cells * 1.0, y, cells=cells) == 0.5
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 3)), min_size=2, max_size=30
    )
)
def test_weighted_metrics_equal_sklearn_with_weights_and_with_repeated_rows(rows):
    s = np.array([r[0] for r in rows], dtype=float)  # few values: many ties
    y = np.array([r[1] for r in rows], dtype=int)
    w = np.array([r[2] for r in rows], dtype=float)
    rep = np.repeat(np.arange(len(rows)), w.astype(int))
    has_both = w[y == 1].sum() > 0 and w[y == 0].sum() > 0
    auc = weighted_auc(s, y, w)
    ap = weighted_average_precision(s, y, w)
    if not has_both:
        assert np.isnan(auc)
    else:
        assert auc == pytest.approx(roc_auc_score(y[rep], s[rep]), abs=1e-12)
        assert auc == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    if w[y == 1].sum() == 0:
        assert np.isnan(ap)
    else:
        assert ap == pytest.approx(average_precision_score(y[rep], s[rep]), abs=1e-12)
    # many replicates at once: row by row the same numbers
    W = np.stack([w, np.ones_like(w), w[::-1]])
    many = weighted_auc(s, y, W)
    assert many.shape == (3,) and (np.isnan(many[0]) if not has_both else many[0] == auc)


def test_group_bootstrap_draws_whole_groups():
    g = np.array([0, 0, 1, 2, 2, 2, 3])
    W = _replicates(g, 50, "groups", seed=3)
    assert W.shape == (50, 7)
    for grp in range(4):
        cols = W[:, g == grp]
        assert (cols == cols[:, :1]).all()  # every row of a group drawn as often as the group
    assert (W[:, [0, 2, 3, 6]].sum(1) == 4).all()  # 4 groups drawn per replicate
    R = _replicates(g, 50, "rows", seed=3)
    assert (R.sum(1) == 7).all()


# ------------------------------------------------------------------ against scikit-learn
def _fold_aucs(y, oof, folds):
    """ROC-AUC and PR-AUC within each test fold by scikit-learn, averaged as documented."""
    auc = _per_cell(roc_auc_score, y, oof, folds, lambda t: t.sum() * (t.size - t.sum()))
    ap = _per_cell(average_precision_score, y, oof, folds, lambda t: t.sum())
    return auc, ap


def test_aucs_equal_a_direct_sklearn_cross_validation():
    table, y, groups, length = _data()
    r = evaluate_detectors(
        {"topo": table, "length": length}, y, groups=groups, covariates={"length": length}, n_boot=0
    )
    cv = StratifiedGroupKFold(5, shuffle=True, random_state=0)
    folds = np.zeros(y.size, int)
    for f, (_, test) in enumerate(cv.split(table.values, y, groups)):
        folds[test] = f
    np.testing.assert_array_equal(r.folds, folds)
    aucs = {}
    for model, X in (
        ("topo", table.values),
        ("length", length[:, None]),
        ("covariates", length[:, None]),
        ("topo + covariates", np.hstack([table.values, length[:, None]])),
    ):
        oof = _direct(X, y, groups)
        np.testing.assert_allclose(r.scores[r.models.index(model)], oof, rtol=1e-9, atol=1e-9)
        row = _row(r, model)
        aucs[model] = _fold_aucs(y, oof, folds)
        assert row["roc_auc"] == pytest.approx(aucs[model][0], abs=1e-12)
        assert row["pr_auc"] == pytest.approx(aucs[model][1], abs=1e-12)
    gain = _row(r, "topo + covariates")["gain_roc_auc"]
    assert gain == pytest.approx(aucs["topo + covariates"][0] - aucs["covariates"][0])
    t = r.table()
    assert list(t["detector"]) == ["covariates", "topo", "length"]
    assert t["gain_roc_auc"][1] == pytest.approx(gain)


def test_heads_are_chosen_on_each_training_fold_as_select_heads_does():
    table, y, groups, _ = _data()
    r = evaluate_detectors(
        {"topo": table}, y, groups=groups, heads={"topo": 2}, n_boot=0, head_criterion="anova"
    )
    cv = StratifiedGroupKFold(5, shuffle=True, random_state=0)
    oof = np.zeros(y.size)
    for f, (train, test) in enumerate(cv.split(table.values, y, groups)):
        heads = select_heads(
            table.values[train],
            y[train],
            2,
            criterion="anova",
            columns=table.columns,
            random_state=0,
        )
        assert r.heads["topo"][f] == [list(h) for h in heads]
        X = table.select(heads=heads).to_pandas()[
            [c for c in table.columns if any(c.startswith(f"L{a}H{b}.") for a, b in heads)]
        ]
        model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=1000))
        oof[test] = model.fit(X.to_numpy()[train], y[train]).decision_function(X.to_numpy()[test])
    np.testing.assert_allclose(r.scores[0], oof, atol=1e-9)
    assert (r.folds >= 0).all() and set(r.folds) == set(range(5))


def test_mean_combine_is_toha_s_signed_average_of_the_heads_chosen_by_difference():
    table, y, groups, length = _data(signal=1.0)
    v = table.values.copy()
    v[:, 3] -= 1.5 * y  # a head (L0H1) whose values fall with the positives
    table = FeatureTable(v, table.columns, table.index, table.texts)
    r = evaluate_detectors(
        {"toha": table},
        y,
        groups=groups,
        heads={"toha": 3},
        head_criterion="difference",
        combine="mean",
        n_boot=0,
        covariates={"length": length},
    )
    cv = StratifiedGroupKFold(5, shuffle=True, random_state=0)
    for f, (train, test) in enumerate(cv.split(v, y, groups)):
        heads = select_heads(v[train], y[train], 3, criterion="difference", columns=table.columns)
        assert r.heads["toha"][f] == [list(h) for h in heads]
        cols = [
            k
            for k, c in enumerate(table.columns)
            if any(c.startswith(f"L{a}H{b}.") for a, b in heads)
        ]
        sign = np.sign(
            v[train][y[train] == 1][:, cols].mean(0) - v[train][y[train] == 0][:, cols].mean(0)
        )
        np.testing.assert_allclose(
            r.scores[r.models.index("toha"), test], (v[test][:, cols] * sign).mean(1), atol=1e-12
        )
        assert (0, 1) not in heads  # the falling head is not among the risers
    assert r.settings["combine"] == {"toha": "mean"}


def test_strata_are_the_same_scores_within_each_value():
    table, y, groups, length = _data()
    flag = np.arange(y.size) % 2 == 0
    r = evaluate_detectors(
        {"topo": table},
        y,
        groups=groups,
        covariates={"length": length},
        strata={"n_entities": length, "counterfactual": flag},
        n_boot=100,
    )
    for name, v in (("n_entities", length), ("counterfactual", flag)):
        for value in np.unique(v):
            keep = v == value
            row = _row(r, "topo", name, str(value))
            assert row["n"] == keep.sum() and row["n_positive"] == y[keep].sum()
            auc, ap = _fold_aucs(y[keep], r.scores[r.models.index("topo")][keep], r.folds[keep])
            assert (np.isnan(auc) and np.isnan(row["roc_auc"])) or row["roc_auc"] == pytest.approx(
                auc, abs=1e-12
            )
            assert row["pr_auc"] == pytest.approx(ap, abs=1e-12)
    # within one length the length covariate is constant: the covariates alone rank nothing
    row = _row(r, "covariates", "n_entities", "3.0")
    assert row["roc_auc"] == 0.5
    assert _row(r, "covariates", "n_entities", "(within)")["roc_auc"] == 0.5
    # (within): the AUC of pairs in one value and one fold, every value at once
    topo = r.scores[r.models.index("topo")]
    cells = r.folds * 10 + length.astype(int)
    want = _per_cell(roc_auc_score, y, topo, cells, lambda t: t.sum() * (t.size - t.sum()))
    assert _row(r, "topo", "n_entities", "(within)")["roc_auc"] == pytest.approx(want, abs=1e-12)
    t = r.table(stratum="n_entities")
    assert set(t["value"]) == {str(v) for v in np.unique(length)} | {"(within)"}


# ------------------------------------------------------------------ gains over covariates
def test_a_detector_that_is_a_function_of_the_covariate_gains_nothing():
    _, y, groups, length = _data(n=300, seed=1)
    r = evaluate_detectors(
        {"linear": 3 * length + 1, "monotone": np.exp(length / 3)},
        y,
        groups=groups,
        covariates={"length": length},
        n_boot=300,
    )
    lin = _row(r, "linear + covariates")
    # the same ranking as the length's: gain 0 in the point and in every replicate
    assert lin["gain_roc_auc"] == 0 and lin["gain_roc_auc_low"] == 0 == lin["gain_roc_auc_high"]
    mono = _row(r, "monotone + covariates")
    assert abs(mono["gain_roc_auc"]) < 0.02
    assert mono["gain_roc_auc_low"] <= 0 <= mono["gain_roc_auc_high"]
    assert _row(r, "linear")["roc_auc"] == pytest.approx(_row(r, "covariates")["roc_auc"])


def test_a_detector_with_signal_beyond_the_covariate_gains_with_an_interval_above_zero():
    table, y, groups, length = _data(n=300, seed=2, signal=1.5)
    r = evaluate_detectors(
        {"topo": table}, y, groups=groups, covariates={"length": length}, n_boot=300
    )
    row = _row(r, "topo + covariates")
    assert row["gain_roc_auc"] > 0.03 and row["gain_roc_auc_low"] > 0
    assert row["roc_auc_low"] < row["roc_auc"] < row["roc_auc_high"]


# ------------------------------------------------------------------ no leak
def test_head_selection_sees_only_the_training_rows():
    """Heads of pure noise.  Chosen on all rows (the test rows included), the best of 300
    look informative and the cross-validated AUC is high; chosen inside each training fold,
    as evaluate_detectors does, they are worth nothing on the held-out rows."""
    rng = np.random.default_rng(5)
    n = 80
    y = np.tile([0, 1], n // 2)
    groups = np.arange(n)
    cols = tuple(f"L{li}H{h}.x.q" for li in range(30) for h in range(10))
    table = FeatureTable(rng.normal(size=(n, len(cols))), cols, np.arange(n), [""] * n)
    inside = evaluate_detectors(
        {"noise": table}, y, groups=groups, heads=5, n_boot=0, head_criterion="anova"
    )
    peeked = select_heads(table, y, 5, criterion="anova")
    leaky = evaluate_detectors({"noise": table.select(heads=peeked)}, y, groups=groups, n_boot=0)
    assert _row(leaky, "noise")["roc_auc"] > 0.8  # the test can see a leak
    assert _row(inside, "noise")["roc_auc"] < 0.65
    assert len({tuple(map(tuple, h)) for h in inside.heads["noise"]}) > 1  # chosen per fold


# ------------------------------------------------------------------ determinism, protocol
def test_same_seed_same_result_and_it_round_trips(tmp_path):
    import attntopo as at

    table, y, groups, length = _data(n=120)
    kw = dict(
        groups=groups,
        covariates={"length": length},
        strata={"n": length},
        heads={"topo": 2},
        head_criterion="anova",
        n_boot=50,
    )
    a = evaluate_detectors({"topo": table, "len": length}, y, **kw)
    b = evaluate_detectors({"topo": table, "len": length}, y, **kw)
    assert a == b
    c = evaluate_detectors({"topo": table, "len": length}, y, **{**kw, "seed": 1})
    assert c != a
    a.save(tmp_path / "ev")
    back = at.load_result(tmp_path / "ev")
    assert isinstance(back, DetectorEvaluation) and back == a
    df = a.to_pandas()
    assert len(df) == a.summary().n_rows and "gain_roc_auc_low" in df


def test_subset_evaluates_those_rows_only():
    table, y, groups, length = _data()
    keep = np.flatnonzero(length > 2)
    r = evaluate_detectors({"topo": table}, y, groups=groups, subset=keep, n_boot=0)
    assert (r.index == keep).all() and r.y.size == keep.size
    oof = _direct(table.values[keep], y[keep], np.unique(groups[keep], return_inverse=True)[1])
    np.testing.assert_allclose(r.scores[0], oof, atol=1e-9)


@pytest.mark.parametrize(
    "call, words",
    [
        (
            lambda t, y, g: evaluate_detectors(
                t, np.where(y == 1, "hallucinated", "faithful"), groups=g
            ),
            "must hold 0 and 1",
        ),
        (lambda t, y, g: evaluate_detectors(t, np.zeros_like(y), groups=g), "single class"),
        (  # HallucinationQA.y unfiltered: its ambiguous pairs are -1
            lambda t, y, g: evaluate_detectors(t, np.where(g == 0, -1, y), groups=g),
            "got values -1, 0, 1; -1 marks an ambiguous pair in HallucinationQA.y: its .binary() "
            "leaves them out",
        ),
        (
            lambda t, y, g: evaluate_detectors(t, np.where(g == 0, 2, y), groups=g),
            "must hold 0 and 1 (1: the event to detect, e.g. hallucinated), got values 0, 1, 2",
        ),
        (lambda t, y, g: evaluate_detectors(t, y[:-1], groups=g), "one row per labelled pair"),
        (
            lambda t, y, g: evaluate_detectors({"a": t.values}, y, groups=g, heads={"a": 3}),
            "name no heads",
        ),
        (lambda t, y, g: evaluate_detectors(t, y, groups=g % 3), "need at least 5 groups"),
        (lambda t, y, g: evaluate_detectors(t, y, groups=g, heads={"b": 3}), "not detectors"),
        (lambda t, y, g: evaluate_detectors({"covariates": t}, y, groups=g), "rename"),
        (lambda t, y, g: evaluate_detectors(t, y, groups=g, resample="pairs"), "unknown resample"),
        (lambda t, y, g: evaluate_detectors(t, y, groups=g, combine="max"), "unknown combine"),
        (
            lambda t, y, g: evaluate_detectors(t, y, groups=g, combine={"b": "mean"}),
            "not detectors",
        ),
    ],
)
def test_bad_input_is_one_line(call, words):
    _assert_one_line(call, words)


def _assert_one_line(call, words) -> None:
    """``call(table, y, groups)`` on 60 pairs raises one InvalidInputError line with ``words``."""
    table, y, groups, _ = _data(n=60)
    with pytest.raises(InvalidInputError) as err:
        call(table, y, groups)
    assert words in str(err.value) and "\n" not in str(err.value)


def _named(table, extra):
    """The table as a DataFrame with one more column (a user's table with a text column)."""
    import pandas as pd

    df = pd.DataFrame(table.values, columns=list(table.columns))
    df["entity"] = extra
    return df


def _mixed(groups):
    """Group labels of two types, as a column with missing values gives them."""
    return np.array([None if k % 5 == 0 else f"c{k}" for k in groups], dtype=object)


@pytest.mark.parametrize(
    "call, words",
    [
        # a class held by one group: the fold that tests it trains on the other class only
        (
            lambda t, y, g: evaluate_detectors(t, y, groups=np.where(y == 1, -1, g)),
            "trains on one class only",
        ),
        (
            lambda t, y, g: evaluate_detectors(
                t, y, groups=np.where(y == 1, -1, g), combine="mean", n_boot=0
            ),
            "the positives are in 1 of",
        ),
        # a table with a column of text
        (
            lambda t, y, g: evaluate_detectors({"d": _named(t, "France")}, y, groups=g),
            "detector 'd': column 'entity' holds a value that is not a number ('France')",
        ),
        (
            lambda t, y, g: evaluate_detectors(
                t, y, groups=g, covariates=_named(t, "France")[["L0H0.x.q0", "entity"]]
            ),
            "covariates: column 'entity' holds a value that is not a number",
        ),
        # groups or strata of values that cannot be sorted together
        (lambda t, y, g: evaluate_detectors(t, y, groups=_mixed(g)), "groups mixes NoneType, str"),
        (
            lambda t, y, g: evaluate_detectors(t, y, groups=g, strata={"s": _mixed(g)}),
            "stratum 's' mixes NoneType, str",
        ),
        (lambda t, y, g: balanced_subsample(y, _mixed(g)), "strata mixes NoneType, str"),
        (lambda t, y, g: evaluate_detectors(t, _mixed(g), groups=g), "must hold 0 and 1"),
        # strata given as one array instead of a dict of them
        (
            lambda t, y, g: evaluate_detectors(t, y, groups=g, strata=g % 3),
            "strata must be a dict of name to one value per pair",
        ),
        (
            lambda t, y, g: evaluate_detectors(t, y, groups=g, strata=list(g % 3)),
            "(e.g. {'n_entities': ...}), got list",
        ),
        # nothing to score: every value of a detector or a covariate missing
        (
            lambda t, y, g: evaluate_detectors(
                {"ok": t, "broken": np.full((len(y), 3), np.nan)}, y, groups=g
            ),
            "detector 'broken' has no finite value on the 60 evaluated pairs",
        ),
        (
            lambda t, y, g: evaluate_detectors(
                np.where(np.arange(len(y)) < 30, np.inf, 1.0), y, groups=g, subset=np.arange(30)
            ),
            "detector 'detector' has no finite value on the 30 evaluated pairs",
        ),
        (
            lambda t, y, g: evaluate_detectors(
                t, y, groups=g, covariates={"length": np.full(len(y), np.nan)}
            ),
            "covariate 'length' has no finite value on the 60 evaluated pairs",
        ),
    ],
)
def test_bad_input_that_reached_scikit_learn_or_numpy_is_one_line(call, words):
    _assert_one_line(call, words)


def test_too_few_pairs_to_choose_heads_in_a_training_fold_is_said_in_its_terms():
    """cv_accuracy scores heads by 3-fold CV inside each training fold: with 2 positives in
    2 folds each fold trains on 1.  The message was head_scores' own, which advised 'a smaller
    cv' that evaluate_detectors has no parameter for."""
    table, y, groups, _ = _data(n=60)
    y = np.zeros_like(y)
    y[[3, 40]] = 1
    with pytest.raises(InvalidInputError) as err:
        evaluate_detectors(table, y, groups=groups, heads=2, n_splits=2, n_boot=0)
    msg = str(err.value)
    assert msg.startswith("head_criterion='cv_accuracy' scores heads by 3-fold cross-validation")
    assert "fold 1 trains on 1 positive(s) and" in msg and "head_criterion='anova'" in msg
    assert "smaller cv" not in msg and "\n" not in msg
    # the other criteria need no inner folds
    evaluate_detectors(
        table, y, groups=groups, heads=2, n_splits=2, n_boot=0, head_criterion="anova"
    )


def test_a_column_without_values_scores_as_a_constant_beside_the_others():
    """An all-NaN column among finite ones is imputed (0 after standardization): the same
    out-of-fold scores as without it."""
    table, y, groups, _ = _data(n=80)
    X = np.c_[table.values, np.full(len(y), np.nan)]
    a = evaluate_detectors(table.values, y, groups=groups, n_boot=0)
    b = evaluate_detectors(X, y, groups=groups, n_boot=0)
    np.testing.assert_allclose(a.scores, b.scores, atol=1e-9)


def test_labels_of_object_dtype_are_read_as_numbers():
    """0/1 labels in an object column (a DataFrame column of Python ints) are labels; they
    were refused as 'must hold 0 and 1, got values 0, 1'."""
    table, y, groups, _ = _data(n=60)
    a = evaluate_detectors(table, y, groups=groups, n_boot=20)
    b = evaluate_detectors(table, y.astype(object), groups=groups, n_boot=20)
    c = evaluate_detectors(table, y.astype(bool).astype(object), groups=groups, n_boot=20)
    assert a == b == c
    idx = balanced_subsample(y.astype(object), groups % 3)
    np.testing.assert_array_equal(idx, balanced_subsample(y, groups % 3))


# ------------------------------------------------------------------ balanced subsample
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=4, max_size=80),
    st.sampled_from([None, 0.5, 0.25, 0.6]),
)
def test_balanced_subsample_has_the_same_share_in_every_stratum(rows, share):
    strata = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=int)
    from fractions import Fraction

    if len(set(y.tolist())) < 2:
        with pytest.raises(InvalidInputError, match="single class"):
            balanced_subsample(y, strata, share=share)
        return
    f = Fraction(share if share is not None else y.mean()).limit_denominator(10)
    a, b = f.numerator, f.denominator
    if not 0 < f < 1:
        with pytest.raises(InvalidInputError, match="too near 0 or 1"):
            balanced_subsample(y, strata, share=share)
        return
    blocks = {
        s: min(y[strata == s].sum() // a, (y[strata == s] == 0).sum() // (b - a))
        for s in set(strata)
    }
    if not any(blocks.values()):
        with pytest.raises(InvalidInputError, match="nothing kept"):
            balanced_subsample(y, strata, share=share)
        return
    idx = balanced_subsample(y, strata, share=share, seed=1)
    assert (np.diff(idx) > 0).all()
    shares = {s: y[idx][strata[idx] == s].mean() for s in set(strata[idx])}
    assert len(set(shares.values())) == 1  # exactly one share
    assert set(shares.values()) == {a / b}
    for s in set(strata):  # as many whole blocks as each stratum allows
        assert (strata[idx] == s).sum() == b * blocks[s]
    # the stratum itself, as a score, ranks nothing: AUC exactly 0.5
    assert weighted_auc(strata[idx].astype(float), y[idx]) == 0.5
    np.testing.assert_array_equal(idx, balanced_subsample(y, strata, share=share, seed=1))
