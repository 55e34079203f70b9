"""Choosing heads on a validation split (la-tda picks heads before the final classifier;
the criteria here are attntopo's own, not la-tda's).

The criterion is explicit and documented; the function only ever sees the data it is given,
so pass it the training or validation part, never the test part (inside a scikit-learn
pipeline, :class:`attntopo.sklearn.SelectHeads` does this per fold by construction).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._progress import ProgressOption, check_progress, make_reporter
from .._validation import check_choice, check_positive_int
from ..errors import InvalidInputError, MissingDependencyError
from ._table import FeatureTable, parse_column

__all__ = ["HEAD_CRITERIA", "best_heads", "head_scores", "select_heads", "check_labels"]

#: ``"cv_accuracy"``: mean accuracy of a standardized logistic regression on the head's columns
#: alone, stratified ``cv``-fold cross-validation inside the given data; ``"anova"``: mean
#: ANOVA F statistic (:func:`sklearn.feature_selection.f_classif`) of the head's columns;
#: ``"difference"`` (two classes): mean over the head's columns of the mean in the larger
#: class label minus the mean in the smaller, signed, so the heads whose values rise most with
#: the positive class come first (TOHA's choice of hallucination-aware heads).
HEAD_CRITERIA: tuple[str, ...] = ("cv_accuracy", "anova", "difference")


def check_labels(y: Any, *, n: int | None = None, name: str = "y") -> np.ndarray:
    """Labels as an array; at least two classes, each with at least ``2`` members.

    Raises :class:`~attntopo.errors.InvalidInputError` before any model runs.
    """
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be one label per text (1-D), got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InvalidInputError(f"{name} has {arr.shape[0]} labels for {n} texts")
    classes, counts = np.unique(arr, return_counts=True)
    if classes.size < 2:
        only = repr(classes[0].item()) if classes.size else "none"
        raise InvalidInputError(
            f"{name} holds a single class ({only}): a classifier needs at least two labels"
        )
    return arr


def _check_enough(y: np.ndarray, criterion: str, cv: int) -> None:
    """Enough labelled samples for ``criterion``, else one line saying how many are needed.

    ``"cv_accuracy"``: stratified ``cv``-fold cross-validation (``cv >= 2``) needs a class
    with at least ``cv`` samples to make the folds, and every class needs at least 2, so that
    every training set holds it (``cv`` of each puts every class in every test fold too;
    fewer gives scikit-learn's warning about the least populated class).  ``"anova"``: the F
    statistic needs a within-class variance: more samples than classes.
    """
    classes, counts = np.unique(y, return_counts=True)
    n = int(y.shape[0])
    if criterion == "cv_accuracy":
        if cv < 2:
            raise InvalidInputError(
                f"cv={cv}: cross-validation needs at least 2 folds (cv=2 or more)"
            )
        least = int(np.argmin(counts))
        why = (
            f"class {classes[least].item()!r} has {int(counts[least])} sample of {n}, and "
            "every class needs at least 2"
            if counts[least] < 2
            else f"the largest class has {int(counts.max())} of {n} samples, and {cv} folds need "
            f"a class with at least {cv}"
            if counts.max() < cv
            else None
        )
        if why is not None:
            raise InvalidInputError(
                f"too few samples to score heads by cv_accuracy with cv={cv}: {why} ({cv} of "
                "each tests every class in every fold); give more labelled texts, a smaller cv "
                "(at least 2) or criterion='anova'"
            )
    elif criterion == "difference":
        if classes.size != 2:
            raise InvalidInputError(
                f"criterion='difference' compares two classes; y has {classes.size}"
            )
    elif n <= classes.size:
        raise InvalidInputError(
            f"too few samples to score heads by anova: it needs more samples than classes (at "
            f"least {classes.size + 1} for {classes.size} "
            f"classes), got {n}; give more labelled texts"
        )


def _columns_of(X: Any, columns: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    if isinstance(X, FeatureTable):
        return X.values, list(X.columns)
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):  # pandas DataFrame
        return np.asarray(X.to_numpy(), dtype=np.float64), [str(c) for c in X.columns]
    arr = np.asarray(X, dtype=np.float64)
    if columns is None:
        raise InvalidInputError(
            "X is a plain array: pass columns= (the feature names) or a FeatureTable/DataFrame"
        )
    if arr.ndim != 2 or arr.shape[1] != len(columns):
        raise InvalidInputError(f"X has shape {arr.shape} but {len(columns)} column names")
    return arr, list(columns)


def head_scores(
    X: Any,
    y: Any,
    *,
    criterion: str = "cv_accuracy",
    columns: Sequence[str] | None = None,
    cv: int = 3,
    random_state: int = 0,
    progress: ProgressOption = False,
) -> dict[tuple[int, int], float]:
    """Score every head by how well its features alone predict ``y``.

    Parameters
    ----------
    X : FeatureTable, DataFrame or ndarray of shape (n_texts, n_features)
        Features whose columns are named ``L{layer}H{head}.{set}.{quantity}`` (``L*H*``
        columns, of no single head, are not scored).
    y : array-like of shape (n_texts,)
        Labels (at least two classes).
    criterion : {"cv_accuracy", "anova", "difference"}
        See :data:`HEAD_CRITERIA`.
    columns : sequence of str, optional
        Column names when ``X`` is a plain array.
    cv : int
        Folds of the ``"cv_accuracy"`` criterion.
    random_state : int
        Seed of the fold shuffling.
    progress : bool, callable or None, default False
        A bar (or ``callback(done, total, stage)``, see :mod:`attntopo._progress`) over the
        heads, stage ``"scoring heads"``.

    Returns
    -------
    dict of (layer, head) to float
        Higher is better.
    """
    try:
        from sklearn.feature_selection import f_classif
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold, cross_val_score
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        raise MissingDependencyError(
            "head selection needs scikit-learn: pip install 'attntopo[features]'"
        ) from None
    criterion = check_choice(criterion, "criterion", HEAD_CRITERIA, what="head criterion")
    progress = check_progress(progress)
    cv = check_positive_int(cv, "cv", allow_none=False)
    values, names = _columns_of(X, columns)
    y = check_labels(y, n=values.shape[0])
    _check_enough(y, criterion, cv)
    groups: dict[tuple[int, int], list[int]] = {}
    for k, c in enumerate(names):
        layer, head, _, _ = parse_column(c)
        if layer is not None and head is not None:  # L*H* columns belong to no head
            groups.setdefault((layer, head), []).append(k)
    values = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    out: dict[tuple[int, int], float] = {}
    if criterion == "difference":
        classes = np.unique(y)
        diff = values[y == classes[1]].mean(0) - values[y == classes[0]].mean(0)
        for key, cols in groups.items():
            out[key] = float(np.mean(diff[cols]))
        return out
    if criterion == "anova":
        # a column constant on these texts separates nothing: F = 0, computed without
        # scikit-learn's "Features [...] are constant" warning for every such column
        varies = np.ptp(values, axis=0) > 0
        F = np.zeros(values.shape[1])
        if varies.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                F[varies], _ = f_classif(values[:, varies], y)
        F = np.nan_to_num(F, nan=0.0, posinf=0.0)
        for key, cols in groups.items():
            out[key] = float(np.mean(F[cols]))
        return out
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=random_state)
    with make_reporter(progress, description="head scores") as reporter:
        reporter.stage("scoring heads")
        reporter.add_total(len(groups))
        for key, cols in groups.items():
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            out[key] = float(np.mean(cross_val_score(model, values[:, cols], y, cv=folds)))
            reporter.advance()
    return out


def select_heads(
    X: Any,
    y: Any,
    k: int,
    *,
    criterion: str = "cv_accuracy",
    columns: Sequence[str] | None = None,
    cv: int = 3,
    random_state: int = 0,
    progress: ProgressOption = False,
) -> list[tuple[int, int]]:
    """The ``k`` best heads by :func:`head_scores`, best first (ties: lower layer, head first).

    Use the training or validation split only: choosing heads on the test split leaks it.
    """
    k = check_positive_int(k, "k", allow_none=False)
    scores = head_scores(
        X,
        y,
        criterion=criterion,
        columns=columns,
        cv=cv,
        random_state=random_state,
        progress=progress,
    )
    return best_heads(scores, k)


def best_heads(scores: dict[tuple[int, int], float], k: int) -> list[tuple[int, int]]:
    """The ``k`` heads of highest score, best first (ties: lower layer, head first)."""
    if k > len(scores):
        raise InvalidInputError(f"k={k} but the features hold only {len(scores)} heads")
    return sorted(scores, key=lambda h: (-scores[h], h))[:k]
