"""scikit-learn estimators: topological features of texts inside pipelines.

>>> from sklearn.pipeline import Pipeline
>>> from sklearn.preprocessing import StandardScaler
>>> from sklearn.linear_model import LogisticRegression
>>> from attntopo.sklearn import AttentionFeatures
>>> clf = Pipeline([("topo", AttentionFeatures(sets=("js", "template"))),
...                 ("scale", StandardScaler()),
...                 ("clf", LogisticRegression(max_iter=1000))])
>>> clf.fit(texts, labels).predict(["another text"])         # doctest: +SKIP

:class:`AttentionFeatures` stores the model *name*, never the model: clones and pickles are
small, and the weights are loaded (once per process, cached) when features are computed.
:class:`SelectHeads` chooses heads inside ``fit``, so in cross-validation it only ever sees the
training folds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InvalidInputError, MissingDependencyError

try:
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.utils.validation import check_is_fitted
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise MissingDependencyError(
        "attntopo.sklearn needs scikit-learn: pip install 'attntopo[features]'"
    ) from exc

from .features import DEFAULT_SETS, feature_names, features
from .features._select import HEAD_CRITERIA, check_labels, select_heads
from .features._table import parse_column

__all__ = ["AttentionFeatures", "SelectHeads"]


def _texts(X: Any) -> list[str]:
    """A 1-D collection of strings (list, tuple, ndarray, pandas Series) as a list."""
    if isinstance(X, str):
        raise InvalidInputError(
            "X must be a list of texts, not one string: wrap it as [text]"
        )
    if hasattr(X, "ndim") and getattr(X, "ndim") != 1:
        raise InvalidInputError(
            f"X must be a 1-D list of texts, got an array of shape {getattr(X, 'shape', '?')}"
        )
    try:
        texts = list(X)
    except TypeError:
        raise InvalidInputError(f"X must be a list of texts, got {type(X).__name__}") from None
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInputError(f"X[{k}] is a {type(t).__name__}: every item must be a string")
    if not texts:
        raise InvalidInputError("X holds no texts")
    return texts


class AttentionFeatures(TransformerMixin, BaseEstimator):
    """Texts → topological features of a transformer's attention (a stateless transformer).

    Parameters
    ----------
    model : str
        Model alias, hub id or folder (``"minilm"``, ``"smollm2"``, …).  Loaded when features
        are computed; the estimator never holds the weights.
    sets : tuple of str
        Feature sets (see :data:`attntopo.features.FEATURE_SETS`).
    layers, heads : int or list of int, optional
        0-based model indices; all by default.
    drop_special, truncate, batch_size, n_jobs
        As in :func:`attntopo.features.features`.

    Attributes
    ----------
    feature_names_out_ : ndarray of str, shape (n_features,)
        Column names ``L{layer}H{head}.{set}.{quantity}``, set by ``fit``.
    n_features_out_ : int
        Number of columns ``transform`` returns.
    """

    def __init__(
        self,
        model: str = "minilm",
        sets: tuple[str, ...] = DEFAULT_SETS,
        layers=None,
        heads=None,
        drop_special: bool = True,
        truncate: bool = False,
        batch_size: int = 16,
        n_jobs: int | None = None,
    ) -> None:
        self.model = model
        self.sets = sets
        self.layers = layers
        self.heads = heads
        self.drop_special = drop_special
        self.truncate = truncate
        self.batch_size = batch_size
        self.n_jobs = n_jobs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = False
        return tags

    def _check_model(self) -> str:
        if not isinstance(self.model, str) or not self.model:
            raise InvalidInputError(
                f"model must be a model name (alias, hub id or folder), got {type(self.model).__name__}:"
                " the estimator keeps names only, so that it clones and pickles without weights"
            )
        return self.model

    def fit(self, X: Any, y: Any = None) -> "AttentionFeatures":
        """Check the inputs and settings and fix the column names (loads no more than needed).

        ``y`` is optional; when given it must hold at least two classes (checked before any
        model runs).
        """
        texts = _texts(X)
        if y is not None:
            check_labels(y, len(texts))
        names = feature_names(
            self._check_model(), sets=self.sets, layers=self.layers, heads=self.heads
        )
        self.feature_names_out_ = np.asarray(names, dtype=object)
        self.n_features_out_ = len(names)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Features of each text, ndarray of shape (n_texts, n_features_out_), float64."""
        check_is_fitted(self, "feature_names_out_")
        table = features(
            _texts(X),
            self._check_model(),
            sets=self.sets,
            layers=self.layers,
            heads=self.heads,
            drop_special=self.drop_special,
            truncate=self.truncate,
            batch_size=self.batch_size,
            n_jobs=self.n_jobs,
        )
        if list(table.columns) != list(self.feature_names_out_):
            raise InvalidInputError(
                "the model now gives other columns than at fit time; fit the estimator again"
            )
        return table.values

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Column names of :meth:`transform` (``input_features`` is ignored: inputs are texts)."""
        check_is_fitted(self, "feature_names_out_")
        return self.feature_names_out_.copy()


class SelectHeads(TransformerMixin, BaseEstimator):
    """Keep the columns of the ``k`` best heads, chosen in ``fit`` (la-tda's idea: heads
    chosen on data the classifier is not tested on; the criteria are attntopo's).

    Parameters
    ----------
    k : int
        Heads to keep.
    criterion : {"cv_accuracy", "anova"}
        See :func:`attntopo.features.head_scores`.
    cv, random_state
        Folds and seed of the ``"cv_accuracy"`` criterion.
    feature_names : sequence of str, optional
        Column names when the input is a plain array (a DataFrame brings its own; so does a
        pipeline with ``set_output(transform="pandas")``).

    Attributes
    ----------
    heads_ : list of (int, int)
        The chosen (layer, head) pairs, best first.
    support_ : ndarray of bool, shape (n_features_in_,)
        Which input columns are kept.
    """

    def __init__(self, k: int = 10, criterion: str = "cv_accuracy", cv: int = 3,
                 random_state: int = 0, feature_names=None) -> None:
        self.k = k
        self.criterion = criterion
        self.cv = cv
        self.random_state = random_state
        self.feature_names = feature_names

    def _names(self, X: Any) -> list[str]:
        if hasattr(X, "columns"):
            return [str(c) for c in X.columns]
        if self.feature_names is None:
            raise InvalidInputError(
                "SelectHeads needs column names: give a DataFrame (set_output(transform='pandas')) "
                "or feature_names="
            )
        return [str(c) for c in self.feature_names]

    def fit(self, X: Any, y: Any) -> "SelectHeads":
        if self.criterion not in HEAD_CRITERIA:
            raise InvalidInputError(
                f"unknown head criterion {self.criterion!r}; allowed: {', '.join(HEAD_CRITERIA)}"
            )
        names = self._names(X)
        values = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=np.float64)
        self.heads_ = select_heads(values, y, self.k, criterion=self.criterion, columns=names,
                                   cv=self.cv, random_state=self.random_state)
        chosen = set(self.heads_)
        self.support_ = np.array([parse_column(c)[:2] in chosen for c in names])
        self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = len(names)
        return self

    def transform(self, X: Any):
        check_is_fitted(self, "support_")
        if hasattr(X, "iloc"):
            return X.iloc[:, np.flatnonzero(self.support_)]
        arr = np.asarray(X)
        if arr.ndim != 2 or arr.shape[1] != self.support_.size:
            raise InvalidInputError(
                f"X must have {self.support_.size} columns as at fit time, got shape {arr.shape}"
            )
        return arr[:, self.support_]

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "support_")
        return self.feature_names_in_[self.support_]
