"""Detectors evaluated the honest way: grouped cross-validation, heads chosen inside each
training fold, AUCs with bootstrap intervals, alone and over covariates such as length.

A *detector* is a block of feature columns (a :class:`FeatureTable`, a DataFrame or an array)
that a standardized logistic regression turns into a score per pair.  The evaluation asks how
well the out-of-fold scores rank the positives (ROC-AUC) and find them (PR-AUC, average
precision), and what each detector adds over covariates that know nothing of the answer (the
prompt's length): the same regression on the detector's columns and the covariates, against
the covariates alone, with the gain's interval from a paired bootstrap.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Mapping

import numpy as np

from .._progress import ProgressOption, Reporter, check_progress, make_reporter
from .._validation import check_choice, check_int, check_nonneg_int, check_number
from ..analyses import KINDS
from ..analyses.building import Columns, Result, package_versions, read_array
from ..errors import InvalidInputError, MissingDependencyError, ResultFormatError
from ..io import json_safe
from ._evaluate_inputs import (
    _binary,
    _check_some_values,
    _codes,
    _covariates,
    _head_counts,
    _named_blocks,
    _rows,
)
from ._select import HEAD_CRITERIA, _check_enough, best_heads, head_scores
from ._table import parse_column

__all__ = [
    "DetectorEvaluation",
    "evaluate_detectors",
    "balanced_subsample",
    "weighted_auc",
    "weighted_average_precision",
    "RESAMPLING",
    "COMBINE",
]

KIND = "detector_evaluation"
#: How the bootstrap draws a replicate: ``"groups"`` (whole groups with replacement, so that
#: pairs about one entity stay together: the default) or ``"rows"`` (pairs with replacement).
RESAMPLING: tuple[str, ...] = ("groups", "rows")
#: How a detector's (chosen) columns become a score: ``"logistic"`` (a standardized logistic
#: regression fitted on the training folds) or ``"mean"`` (their plain mean, each column
#: signed by its training folds' difference of class means: TOHA's average of its heads).
COMBINE: tuple[str, ...] = ("logistic", "mean")
#: The name of the covariates-only model and of the stratum of all rows.
COVARIATES = "covariates"
ALL = "all"
#: The value of a stratum's row that compares pairs within each of its values, all at once.
WITHIN = "(within)"
_TEXT_COLUMNS = ("model", "detector", "stratum", "value")
_INT_COLUMNS = ("with_covariates", "n", "n_positive")
_METRICS = ("roc_auc", "pr_auc")


# ------------------------------------------------------------------ weighted metrics
def _runs(scores: np.ndarray, y: np.ndarray, weights: np.ndarray, cells: np.ndarray):
    """Positive and negative weight of each run of equal scores within a cell, cells in turn
    and scores ascending within each: two (B, runs) arrays and each run's cell segment."""
    order = np.lexsort((scores, cells))
    s, c, pos = scores[order], cells[order], y[order].astype(bool)
    w = weights[:, order].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, (s[1:] != s[:-1]) | (c[1:] != c[:-1])])
    wp = np.add.reduceat(np.where(pos, w, 0.0), starts, axis=1)
    wn = np.add.reduceat(np.where(pos, 0.0, w), starts, axis=1)
    rc = c[starts]
    segment = np.cumsum(np.r_[True, rc[1:] != rc[:-1]]) - 1
    return wp, wn, segment


def _within(a: np.ndarray, segment: np.ndarray, *, reverse: bool = False) -> np.ndarray:
    """Cumulative sums along runs that restart in each cell (from the end: ``reverse``)."""
    if reverse:
        return _within(a[:, ::-1], segment[::-1].max() - segment[::-1])[:, ::-1]
    cs = np.cumsum(a, axis=1)
    first = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    before = cs[:, first] - a[:, first]
    return cs - before[:, segment]


def _prepare(scores: Any, y: Any, weights: Any, cells: Any):
    s, yy = np.asarray(scores, dtype=np.float64), np.asarray(y)
    w = np.ones((1, s.size)) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w.reshape(1, -1) if w.ndim == 1 else w
    c = np.zeros(s.size, dtype=np.int64) if cells is None else np.asarray(cells)
    return _runs(s, yy, w, c)


def _scalar(values: np.ndarray, weights: Any) -> np.ndarray | float:
    return float(values[0]) if np.ndim(weights) < 2 else values


def weighted_auc(scores: Any, y: Any, weights: Any = None, cells: Any = None) -> np.ndarray | float:
    """ROC-AUC of ``scores`` for the positives ``y == 1``, ties counted one half.

    ``weights`` of shape (n,) or (B, n) (e.g. bootstrap counts: a pair drawn twice weighs 2)
    gives one AUC per row of weights, all at once.  ``cells`` (shape (n,)) compares only the
    positives and negatives of one cell (one test fold): the AUC of each cell, averaged with
    weights positives x negatives.  NaN where no cell holds both classes.  Without cells:
    :func:`sklearn.metrics.roc_auc_score` with ``sample_weight`` (tested).
    """
    wp, wn, seg = _prepare(scores, y, weights, cells)
    below = _within(wn, seg) - wn
    first = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])  # cells are runs of runs
    P, N = np.add.reduceat(wp, first, axis=1), np.add.reduceat(wn, first, axis=1)
    den = (P * N).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = np.where(
            den > 0, (wp * (below + 0.5 * wn)).sum(1) / np.where(den > 0, den, 1), np.nan
        )
    return _scalar(auc, weights)


def weighted_average_precision(
    scores: Any, y: Any, weights: Any = None, cells: Any = None
) -> np.ndarray | float:
    """PR-AUC as average precision: the sum over decreasing thresholds of the recall gained
    times the precision there (scikit-learn's definition; tied scores form one threshold).

    ``weights`` as in :func:`weighted_auc`; with ``cells``, precision is counted within the
    positive's cell: each cell's average precision, averaged with weights its positives.  NaN
    where the positives have no weight.  Without cells:
    :func:`sklearn.metrics.average_precision_score` with ``sample_weight`` (tested).
    """
    wp, wn, seg = _prepare(scores, y, weights, cells)
    tp, fp = _within(wp, seg, reverse=True), _within(wn, seg, reverse=True)
    P = wp.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1.0), 0.0)
        ap = np.where(P > 0, (wp * precision).sum(1) / np.where(P > 0, P, 1), np.nan)
    return _scalar(ap, weights)


_METRIC_FN = {"roc_auc": weighted_auc, "pr_auc": weighted_average_precision}


# ------------------------------------------------------------------ balanced subsample
def balanced_subsample(
    y: Any, strata: Any, *, share: float | None = None, seed: int = 0
) -> np.ndarray:
    """Rows with the same share of positives in every stratum, so the stratum is no shortcut.

    In each stratum (e.g. each context length) ``a`` positives are kept for every ``b - a``
    negatives, as many whole blocks of ``b`` as the stratum's positives and negatives allow,
    drawn at random (``seed``); a stratum without one of the classes keeps nothing.  So every
    kept stratum has exactly the share ``a / b``: the stratum alone (a length-only score)
    then has a ROC-AUC of exactly 0.5 on the subsample.

    Parameters
    ----------
    y : array-like of shape (n,)
        0/1 labels (1: the positive class, e.g. hallucinated).
    strata : array-like of shape (n,)
        The stratum of each row (any hashable values).
    share : float, optional
        The share of positives, written as the nearest fraction ``a / b`` with ``b <= 10``
        (``Fraction.limit_denominator``; 0.5 keeps one positive for each negative).  Default:
        the whole data's share, so that the subsample's chance level (its PR-AUC without
        skill) is about the full data's.
    seed : int
        Chooses which rows of a stratum are kept.

    Returns
    -------
    ndarray of int
        Row indices, ascending.
    """
    yy = _binary(y, "y")
    st = np.asarray(strata)
    if st.shape != yy.shape:
        raise InvalidInputError(f"strata has shape {st.shape}, y has {yy.shape}: one stratum a row")
    seed = check_nonneg_int(seed, "seed")
    values, inv = _codes(st, "strata")
    P = np.bincount(inv, weights=yy, minlength=values.size).astype(int)
    N = np.bincount(inv, minlength=values.size) - P
    overall = float(yy.mean())
    if share is not None:
        overall = check_number(share, "share", lo=0, lo_open=True)
        if overall >= 1:
            raise InvalidInputError(f"share must be in (0, 1), got {share!r}")
    f = Fraction(overall).limit_denominator(10)
    if not 0 < f < 1:
        raise InvalidInputError(
            f"a share of {overall:g} is too near 0 or 1 for a fraction a/b with b <= 10"
        )
    a, b = f.numerator, f.denominator
    m = np.minimum(P // a, N // (b - a))
    rng = np.random.default_rng(seed)
    keep = []
    for k in range(values.size):
        if m[k] == 0:
            continue
        rows = np.flatnonzero(inv == k)
        pos, neg = rows[yy[rows] == 1], rows[yy[rows] == 0]
        keep.append(rng.choice(pos, size=m[k] * a, replace=False))
        keep.append(rng.choice(neg, size=m[k] * (b - a), replace=False))
    if not keep:
        raise InvalidInputError(
            f"no stratum holds {a} positive(s) and {b - a} negative(s), a whole block of the "
            f"share {a}/{b}: nothing kept"
        )
    return np.sort(np.concatenate(keep))


# ------------------------------------------------------------------ the evaluation
def _sklearn():
    try:
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        raise MissingDependencyError(
            "evaluate_detectors needs scikit-learn: pip install 'attntopo[features]'"
        ) from None
    return (
        SimpleImputer,
        LogisticRegression,
        StratifiedGroupKFold,
        StratifiedKFold,
        make_pipeline,
        StandardScaler,
    )


def _model(C: float):
    SimpleImputer, LogisticRegression, _, _, make_pipeline, StandardScaler = _sklearn()
    return make_pipeline(
        SimpleImputer(strategy="median", keep_empty_features=True),
        StandardScaler(),
        LogisticRegression(C=C, max_iter=1000),
    )


def _support(names: list[str], heads: list[tuple[int, int]]) -> np.ndarray:
    """The columns of ``heads`` and those of no single head (``L*H*``, never chosen among)."""
    chosen = set(heads)
    return np.array([parse_column(c)[0] is None or parse_column(c)[:2] in chosen for c in names])


def _signed_mean(X: np.ndarray, y: np.ndarray, train: np.ndarray) -> np.ndarray:
    """The mean of the columns, each signed by its training rows' difference of class means
    (the positive class's minus the other's; 0 counts as +); a row without values gets the
    training rows' median score."""
    Xt, yt = X[train], y[train]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns or rows
        sign = np.where(np.nanmean(Xt[yt == 1], 0) - np.nanmean(Xt[yt == 0], 0) < 0, -1.0, 1.0)
        score = np.nanmean(X * sign, axis=1)
        fill = np.nanmedian(score[train]) if np.isfinite(score[train]).any() else 0.0
    return np.where(np.isfinite(score), score, fill)


def _fit_score(
    X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, C: float
) -> np.ndarray:
    model = _model(C).fit(X[train], y[train])
    return model.decision_function(X[test])


def _combine_choices(combine: Any, blocks: Mapping[str, Any]) -> dict[str, str]:
    """Each detector's :data:`COMBINE` choice, checked."""
    if isinstance(combine, Mapping):
        unknown = [k for k in combine if k not in blocks]
        if unknown:
            raise InvalidInputError(
                f"combine names {unknown}, which are not detectors ({', '.join(blocks)})"
            )
        return {
            d: check_choice(combine.get(d, "logistic"), f"combine[{d!r}]", COMBINE, what="combine")
            for d in blocks
        }
    return dict.fromkeys(blocks, check_choice(combine, "combine", COMBINE))


def _groups_and_strata(
    groups: Any, strata: Mapping[str, Any] | None, rows: np.ndarray, n_all: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The evaluated rows' group numbers (each row its own group without ``groups``) and
    strata values, their shapes checked."""
    if groups is None:
        g = np.arange(rows.size)
    else:
        graw = np.asarray(groups)
        if graw.shape != (n_all,):
            raise InvalidInputError(f"groups has shape {graw.shape}; expected ({n_all},)")
        g = _codes(graw[rows], "groups")[1]
    if strata is not None and not isinstance(strata, Mapping):
        raise InvalidInputError(
            "strata must be a dict of name to one value per pair (e.g. {'n_entities': ...}), "
            f"got {type(strata).__name__}"
        )
    st = {}
    for name, v in (strata or {}).items():
        arr = np.asarray(v)
        if arr.shape != (n_all,):
            raise InvalidInputError(f"stratum {name!r} has shape {arr.shape}; expected ({n_all},)")
        _codes(arr[rows], f"stratum {str(name)!r}")
        st[str(name)] = arr[rows]
    return g, st


def _folds(
    yy: np.ndarray, g: np.ndarray, grouped: bool, n_splits: int, seed: int
) -> tuple[list, np.ndarray]:
    """The ``(train, test)`` splits (grouped or stratified) and each row's test fold."""
    _, _, StratifiedGroupKFold, StratifiedKFold, _, _ = _sklearn()
    n = yy.size
    n_groups = int(g.max()) + 1 if n else 0
    least = int(min(yy.sum(), n - yy.sum()))
    if n_groups < n_splits or least < n_splits:
        raise InvalidInputError(
            f"{n_splits} folds need at least {n_splits} groups and {n_splits} pairs of each "
            f"class; got {n_groups} groups, {int(yy.sum())} positives, {n - int(yy.sum())} "
            "negatives"
        )
    splitter = (
        StratifiedGroupKFold(n_splits, shuffle=True, random_state=seed)
        if grouped
        else StratifiedKFold(n_splits, shuffle=True, random_state=seed)
    )
    folds = np.full(n, -1, dtype=np.int64)
    splits = list(splitter.split(np.zeros((n, 1)), yy, g))
    for f, (train, _) in enumerate(splits):
        if np.unique(yy[train]).size < 2:
            spread = [np.unique(g[yy == c]).size for c in (1, 0)]
            raise InvalidInputError(
                f"fold {f + 1} of {n_splits} trains on one class only: the positives are in "
                f"{spread[0]} of {n_groups} groups, the negatives in {spread[1]}; each class "
                "must be spread over more groups than one test fold takes (fewer n_splits, or "
                "other groups)"
            )
    for f, (_, test) in enumerate(splits):
        folds[test] = f
    return splits, folds


#: Folds of ``"cv_accuracy"``'s cross-validation inside each training fold.
_INNER_CV = 3


def _check_inner_folds(splits: list, yy: np.ndarray) -> None:
    """Enough pairs in every training fold for ``"cv_accuracy"``'s inner folds (the rule is
    :func:`head_scores`' own, ``_check_enough``), said in evaluate_detectors' terms: it has no
    ``cv`` to lower."""
    for f, (train, _) in enumerate(splits):
        try:
            _check_enough(yy[train], "cv_accuracy", _INNER_CV)
        except InvalidInputError:
            P = int(yy[train].sum())
            raise InvalidInputError(
                f"head_criterion='cv_accuracy' scores heads by {_INNER_CV}-fold cross-validation "
                "inside each training fold, which needs 2 pairs of each class there "
                f"({_INNER_CV} of one); fold {f + 1} trains on {P} positive(s) and "
                f"{train.size - P} negative(s): give more pairs, fewer n_splits, or "
                "head_criterion='anova' or 'difference'"
            ) from None


def _out_of_fold_scores(
    blocks: Mapping[str, Any],
    models: list[str],
    C_rows: np.ndarray | None,
    yy: np.ndarray,
    rows: np.ndarray,
    splits: list,
    reporter: Reporter,
    *,
    head_k: Mapping[str, int | None],
    head_criterion: str,
    how: Mapping[str, str],
    C: float,
    seed: int,
) -> tuple[np.ndarray, dict]:
    """Every model's held-out scores ``(len(models), n)`` and the heads chosen per detector
    and fold."""
    scores = np.full((len(models), yy.size), np.nan)
    chosen: dict[str, list[list[list[int]]]] = {d: [] for d, k in head_k.items() if k}
    reporter.add_total(len(splits) * len(models))
    reporter.stage("cross-validation")
    for f, (train, test) in enumerate(splits):
        if C_rows is not None:
            scores[models.index(COVARIATES), test] = _fit_score(C_rows, yy, train, test, C)
            reporter.advance()
        for d, (values, names) in blocks.items():
            X = values[rows]
            if head_k[d]:
                best = best_heads(
                    head_scores(
                        X[train],
                        yy[train],
                        criterion=head_criterion,
                        columns=names,
                        cv=_INNER_CV,
                        random_state=seed,
                    ),
                    head_k[d],
                )
                X = X[:, _support(names, best)]
                chosen[d].append([[int(a), int(b)] for a, b in best])
            if how[d] == "mean":
                X = _signed_mean(X, yy, train)[:, None]
                scores[models.index(d), test] = X[test, 0]
            else:
                scores[models.index(d), test] = _fit_score(X, yy, train, test, C)
            reporter.advance()
            if C_rows is not None:
                scores[models.index(f"{d} + {COVARIATES}"), test] = _fit_score(
                    np.hstack([X, C_rows]), yy, train, test, C
                )
                reporter.advance()
    return scores, chosen


def evaluate_detectors(
    detectors: Any,
    y: Any,
    *,
    groups: Any = None,
    covariates: Any = None,
    strata: Mapping[str, Any] | None = None,
    heads: int | Mapping[str, int | None] | None = None,
    head_criterion: str = "cv_accuracy",
    combine: str | Mapping[str, str] = "logistic",
    subset: Any = None,
    n_splits: int = 5,
    n_boot: int = 1000,
    resample: str = "groups",
    C: float = 0.1,
    seed: int = 0,
    progress: ProgressOption = False,
) -> "DetectorEvaluation":
    """ROC-AUC and PR-AUC of detectors under grouped cross-validation, alone and over
    covariates, with 95 % bootstrap intervals and per-stratum results.

    Each detector's columns go through a pipeline fitted on the training folds only: (the
    ``heads`` best heads by :func:`select_heads`, chosen on the training rows of that fold),
    median imputation of missing values, standardization, logistic regression (L2, ``C``).
    Its score on the held-out fold is the regression's decision function.  The AUCs compare
    pairs within one test fold only (ROC-AUC: each fold's, weighted by positives x negatives;
    PR-AUC: each fold's average precision, weighted by its positives): the five folds' models
    need not share a scale, and pooled scores would rank pairs by their fold's intercept
    (within one context length, where a length covariate is constant, that alone moved a
    covariates-only AUC from 0.5 to 0.28 in a test).  With ``covariates``, two more models run
    on the same folds: the covariates alone, and each detector's (chosen) columns with the
    covariates; a detector's *gain* is the second's AUC minus the first's, and its interval
    comes from the same bootstrap replicates for both (paired).

    Parameters
    ----------
    detectors : FeatureTable, DataFrame or array, or a dict of name to one of them
        Feature columns, one row per labelled pair (a single table is named ``"detector"``).
        A 1-D array is one column (a score, a length).
    y : array-like of shape (n,)
        0/1 or bool labels; 1 is the event to detect (e.g. hallucinated).
    groups : array-like of shape (n,), optional
        Pairs of one group (the entity asked about) are never split between training and
        test (:class:`sklearn.model_selection.StratifiedGroupKFold`); the bootstrap draws
        whole groups.  Without groups: stratified folds and rows drawn.
    covariates : dict of name to array of shape (n,), DataFrame or array, optional
        What the detector must beat (the prompt's length in tokens).
    strata : dict of name to array of shape (n,), optional
        Also report the AUCs within each value of each (e.g. ``{"n_entities": …,
        "counterfactual": …}``), from the same out-of-fold scores, and one row (value
        ``"(within)"``) comparing only pairs of one value, every value at once (ROC-AUC: the
        values' AUCs weighted by positives x negatives): a detector's worth where the
        stratum cannot help.
    heads : int or dict of name to int, optional
        Heads chosen inside each training fold (TOHA's ~10): an int for every detector whose
        columns name heads (``L<layer>H<head>.…``), a dict per detector.  Columns of no single
        head (``L*H*``) are always kept.  None: every column.
    head_criterion : {"cv_accuracy", "anova", "difference"}
        :func:`head_scores`' criterion (it sees the training rows only; ``"difference"``
        keeps the heads whose values rise most with the positives, as TOHA does).
    combine : {"logistic", "mean"} or dict of name to one of them
        How a detector's (chosen) columns become its score (:data:`COMBINE`): a logistic
        regression, or their mean, each column signed on the training folds (TOHA's
        training-free average of its heads; for columns of one scale).  With covariates,
        a ``"mean"`` score enters the regression with them as one column.
    subset : array of int or bool, optional
        Evaluate on these rows only (e.g. :func:`balanced_subsample`'s); the tables keep all.
    n_splits : int
        Folds (at least 2; needs as many groups).
    n_boot : int
        Bootstrap replicates (0: no intervals).
    resample : {"groups", "rows"}
        What a bootstrap replicate draws with replacement (see :data:`RESAMPLING`).
    C : float
        Inverse L2 strength of the logistic regression.
    seed : int
        Folds, head scoring folds and bootstrap: the same seed gives the same result.
    progress : bool, callable or None, default False
        A bar or ``callback(done, total, stage)`` over the fits (detectors x folds).

    Returns
    -------
    DetectorEvaluation
        ``table()`` one row per detector; ``to_pandas()`` every row (stratum by stratum).

    Raises
    ------
    InvalidInputError
        Labels not 0/1, shapes that do not agree, too few groups for the folds, a fold
        whose training rows hold one class, a column that holds no numbers, groups or strata
        that cannot be sorted, heads asked of a detector whose columns name none (one line
        each).
    """
    _sklearn()  # a missing scikit-learn is said before any check
    y_all = np.asarray(y)
    n_all = y_all.shape[0] if y_all.ndim == 1 else -1
    if n_all < 0:
        raise InvalidInputError(f"y must be one label per pair (1-D), got shape {y_all.shape}")
    blocks = _named_blocks(detectors, "detector", n_all)
    if COVARIATES in blocks:
        raise InvalidInputError(
            f"{COVARIATES!r} names the covariates-only model; rename that detector"
        )
    cov, cov_names = _covariates(covariates, n_all)
    head_k = _head_counts(heads, blocks)
    head_criterion = check_choice(
        head_criterion, "head_criterion", HEAD_CRITERIA, what="head criterion"
    )
    how = _combine_choices(combine, blocks)
    rows = _rows(subset, n_all)
    yy = _binary(y_all[rows], "y")
    g, st = _groups_and_strata(groups, strata, rows, n_all)
    _check_some_values(blocks, cov, cov_names, rows)
    n_splits = check_int(n_splits, "n_splits", lo=2)
    n_boot = check_nonneg_int(n_boot, "n_boot")
    resample = check_choice(resample, "resample", RESAMPLING)
    C = check_number(C, "C", lo=0, lo_open=True)
    seed = check_nonneg_int(seed, "seed")
    progress = check_progress(progress)
    splits, folds = _folds(yy, g, groups is not None, n_splits, seed)
    if head_criterion == "cv_accuracy" and any(head_k.values()):
        _check_inner_folds(splits, yy)
    models: list[str] = [COVARIATES] if cov is not None else []
    for d in blocks:
        models.append(d)
        if cov is not None:
            models.append(f"{d} + {COVARIATES}")
    with make_reporter(progress, description="evaluate_detectors") as reporter:
        scores, chosen = _out_of_fold_scores(
            blocks,
            models,
            None if cov is None else cov[rows],
            yy,
            rows,
            splits,
            reporter,
            head_k=head_k,
            head_criterion=head_criterion,
            how=how,
            C=C,
            seed=seed,
        )
    table = _metrics_table(models, scores, yy, g, folds, st, n_boot, resample, seed)
    settings = {
        "detectors": list(blocks),
        "covariates": cov_names,
        "strata": list(st),
        "heads": {d: k for d, k in head_k.items() if k},
        "head_criterion": head_criterion,
        "combine": how,
        "n_splits": n_splits,
        "n_boot": n_boot,
        "resample": resample,
        "C": C,
        "seed": seed,
        "grouped": groups is not None,
        "columns": {d: (len(b[1]) if b[1] else b[0].shape[1]) for d, b in blocks.items()},
    }
    return DetectorEvaluation(
        models=tuple(models),
        scores=scores,
        y=yy,
        groups=g,
        folds=folds,
        index=rows,
        heads=chosen,
        rows=table,
        settings=settings,
        provenance=package_versions(),
    )


def _replicates(g: np.ndarray, n_boot: int, resample: str, seed: int) -> np.ndarray:
    """(n_boot, n) counts: how often each row is drawn in each replicate."""
    rng = np.random.default_rng([seed, 1])
    n = g.size
    if n_boot == 0:
        return np.zeros((0, n))
    if resample == "rows":
        return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)
    G = int(g.max()) + 1
    per_group = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot)
    return per_group[:, g].astype(np.float64)


def _interval(values: np.ndarray) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return np.nan, np.nan
    lo, hi = np.percentile(v, [2.5, 97.5])
    return float(lo), float(hi)


def _metrics_table(
    models, scores, y, g, folds, strata, n_boot, resample, seed
) -> dict[str, np.ndarray]:
    W = _replicates(g, n_boot, resample, seed)
    everything = np.arange(y.size)
    cells: list[tuple[str, Any, np.ndarray, np.ndarray]] = [(ALL, ALL, everything, folds)]
    for name, v in strata.items():
        values, inv = np.unique(v, return_inverse=True)
        for k, value in enumerate(values):
            idx = np.flatnonzero(inv == k)
            cells.append((name, value, idx, folds[idx]))
        # every value at once, pairs compared within one value (and one fold)
        cells.append((name, WITHIN, everything, folds * values.size + inv))
    out: dict[str, list] = {c: [] for c in (*_TEXT_COLUMNS, *_INT_COLUMNS)}
    for m in _METRICS:
        for c in (m, f"{m}_low", f"{m}_high", f"gain_{m}", f"gain_{m}_low", f"gain_{m}_high"):
            out[c] = []
    for stratum, value, idx, within in cells:
        yi = y[idx]
        point: dict[tuple[str, str], float] = {}
        boot: dict[tuple[str, str], np.ndarray] = {}
        for k, model in enumerate(models):
            for m in _METRICS:
                fn = _METRIC_FN[m]
                point[model, m] = fn(scores[k, idx], yi, cells=within)
                boot[model, m] = (
                    fn(scores[k, idx], yi, W[:, idx], within) if n_boot else np.zeros(0)
                )
        for model in models:
            detector = (
                model[: -len(f" + {COVARIATES}")] if model.endswith(f" + {COVARIATES}") else model
            )
            plus = model != detector
            out["model"].append(model)
            out["detector"].append(detector)
            out["stratum"].append(stratum)
            out["value"].append(str(value.item() if hasattr(value, "item") else value))
            out["with_covariates"].append(int(plus or model == COVARIATES))
            out["n"].append(idx.size)
            out["n_positive"].append(int(yi.sum()))
            for m in _METRICS:
                out[m].append(point[model, m])
                lo, hi = _interval(boot[model, m])
                out[f"{m}_low"].append(lo)
                out[f"{m}_high"].append(hi)
                if plus:
                    out[f"gain_{m}"].append(point[model, m] - point[COVARIATES, m])
                    lo, hi = _interval(boot[model, m] - boot[COVARIATES, m])
                else:
                    out[f"gain_{m}"].append(np.nan)
                    lo, hi = np.nan, np.nan
                out[f"gain_{m}_low"].append(lo)
                out[f"gain_{m}_high"].append(hi)
    return {
        k: (
            np.asarray(v, dtype=str)
            if k in _TEXT_COLUMNS
            else np.asarray(v, dtype=np.int64)
            if k in _INT_COLUMNS
            else np.asarray(v, dtype=np.float64)
        )
        for k, v in out.items()
    }


# ------------------------------------------------------------------ the result
@dataclass(eq=False)
class DetectorEvaluation(Result):
    """What :func:`evaluate_detectors` measured: a result like every attntopo result.

    Attributes
    ----------
    models : tuple of str
        The fitted models: ``"covariates"`` (when covariates were given), each detector, and
        ``"<detector> + covariates"``.
    scores : ndarray of shape (n_models, n)
        Out-of-fold scores (the regression's decision function), one row per model.
    y, groups, folds, index : ndarray of shape (n,)
        Labels, group numbers, the fold each row was tested in, and its row in the input.
    heads : dict of str to list
        Per detector with chosen heads: per fold, the ``[layer, head]`` pairs chosen on its
        training rows, best first.
    rows : dict of str to ndarray
        The long table (:meth:`summary`): one row per model and stratum value.
    settings : dict
        The evaluation's parameters.
    provenance : dict
        Package versions (not part of equality).
    """

    models: tuple[str, ...]
    scores: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    folds: np.ndarray
    index: np.ndarray
    heads: dict
    rows: dict
    settings: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    kind: ClassVar[str] = KIND

    def __post_init__(self) -> None:
        self.models = tuple(str(m) for m in self.models)
        self.scores = np.asarray(self.scores, dtype=np.float64)
        n = np.asarray(self.y).shape[0]
        if self.scores.shape != (len(self.models), n):
            raise InvalidInputError(
                f"scores {self.scores.shape} for {len(self.models)} models and {n} labels"
            )
        lengths = {len(np.asarray(v)) for v in self.rows.values()}
        if len(lengths) > 1:
            raise InvalidInputError("the rows' columns differ in length")

    # ----------------------------------------------------------------- access
    def table(self, *, stratum: str = ALL) -> Columns:
        """One row per detector (and the covariates alone) in ``stratum`` (one per value of a
        named stratum): AUCs alone, with covariates, and the gain, each with its interval."""
        strata = sorted(set(self.rows["stratum"].tolist()))
        stratum = check_choice(stratum, "stratum", strata)
        r = self.rows
        sel = r["stratum"] == stratum
        out: dict[str, list] = {"detector": [], "value": [], "n": [], "n_positive": []}
        order = [
            d
            for d in (COVARIATES, *self.settings.get("detectors", ()))
            if d in set(r["model"].tolist())
        ]
        for value in dict.fromkeys(r["value"][sel].tolist()):
            for d in order:
                alone = np.flatnonzero(sel & (r["value"] == value) & (r["model"] == d))
                plus = np.flatnonzero(
                    sel & (r["value"] == value) & (r["model"] == f"{d} + {COVARIATES}")
                )
                k = alone[0]
                out["detector"].append(d)
                out["value"].append(value)
                out["n"].append(r["n"][k])
                out["n_positive"].append(r["n_positive"][k])
                for m in _METRICS:
                    for suffix in ("", "_low", "_high"):
                        out.setdefault(f"{m}{suffix}", []).append(r[f"{m}{suffix}"][k])
                    for suffix in ("", "_low", "_high"):
                        out.setdefault(f"{m}_with_covariates{suffix}", []).append(
                            r[f"{m}{suffix}"][plus[0]] if plus.size else np.nan
                        )
                    for suffix in ("", "_low", "_high"):
                        out.setdefault(f"gain_{m}{suffix}", []).append(
                            r[f"gain_{m}{suffix}"][plus[0]] if plus.size else np.nan
                        )
        return Columns({k: np.asarray(v) for k, v in out.items()})

    # --------------------------------------------------------------- protocol
    def summary(self) -> Columns:
        """The long table: ``model``, ``detector``, ``stratum``, ``value``,
        ``with_covariates``, ``n``, ``n_positive``, then per metric (``roc_auc``,
        ``pr_auc``) the value, ``_low``/``_high`` (95 % interval) and the ``gain_`` over the
        covariates with its interval (NaN where the model has no covariates)."""
        return Columns({k: np.asarray(v) for k, v in self.rows.items()})

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "kind": self.kind,
                "models": list(self.models),
                "rows": Columns(self.rows).rows(),
                "heads": self.heads,
                "settings": self.settings,
                "provenance": self.provenance,
            }
        )

    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            "models": list(self.models),
            "heads": self.heads,
            "settings": self.settings,
            "provenance": self.provenance,
            "text_columns": {k: self.rows[k].tolist() for k in _TEXT_COLUMNS},
            "columns": list(self.rows),
        }
        arrays = {
            "scores": self.scores,
            "y": self.y,
            "groups": self.groups,
            "folds": self.folds,
            "index": self.index,
        }
        arrays.update({f"rows__{k}": v for k, v in self.rows.items() if k not in _TEXT_COLUMNS})
        return json_safe(meta), arrays

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> DetectorEvaluation:
        models = meta["models"]
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise ResultFormatError("'models' must be a list of names")
        y = read_array(arrays, "y", kind="i", ndim=1)
        n = y.shape[0]
        scores = read_array(arrays, "scores", kind="f", shape=(len(models), n))
        ints = {
            k: read_array(arrays, k, kind="i", shape=(n,)) for k in ("groups", "folds", "index")
        }
        cols = meta["columns"]
        texts = meta["text_columns"]
        m = len(texts["model"])
        rows: dict[str, np.ndarray] = {}
        for k in cols:
            if k in _TEXT_COLUMNS:
                if not isinstance(texts.get(k), list) or len(texts[k]) != m:
                    raise ResultFormatError(f"text column {k!r} must be a list of {m} names")
                rows[k] = np.asarray(texts[k], dtype=str)
            else:
                rows[k] = read_array(
                    arrays, f"rows__{k}", kind="i" if k in _INT_COLUMNS else "f", shape=(m,)
                )
        return cls(
            models=tuple(models),
            scores=scores,
            y=y,
            heads=dict(meta["heads"]),
            rows=rows,
            settings=dict(meta.get("settings", {})),
            provenance=dict(meta.get("provenance", {})),
            **ints,
        )

    def __repr__(self) -> str:
        return (
            f"DetectorEvaluation(pairs={self.y.size}, detectors="
            f"{list(self.settings.get('detectors', ()))}, folds="
            f"{self.settings.get('n_splits')}, n_boot={self.settings.get('n_boot')})"
        )


KINDS[KIND] = DetectorEvaluation
