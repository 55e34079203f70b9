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

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._validation import check_bool, check_positive_int
from .errors import InvalidInputError, MissingDependencyError
from .io import json_safe

try:
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.utils.validation import check_is_fitted
except ImportError as exc:  # pragma: no cover - exercised only without scikit-learn
    raise MissingDependencyError(
        "attntopo.sklearn needs scikit-learn: pip install 'attntopo[features]'"
    ) from exc

from .features import SETTING_NAMES, FeatureSettings, feature_names, features
from .features.pipeline import (
    HEAD_CRITERIA,
    best_heads,
    cached_rows,
    check_labels,
    check_memory,
    head_scores,
    model_fingerprint,
    parse_column,
    settings_digest,
)

__all__ = ["AttentionFeatures", "HeadAblation", "SelectHeads", "ablate_heads"]


def _texts(X: Any) -> list[Any]:
    """Texts or (prompt, answer) pairs as a list: a 1-D collection of strings (list, tuple,
    ndarray, pandas Series) or of pairs of strings, or a 2-D table of two columns (an ``(n, 2)``
    array, a DataFrame of a prompt and an answer column), whose rows are pairs."""
    if isinstance(X, str):
        raise InvalidInputError("X must be a list of texts, not one string: wrap it as [text]")
    ndim = getattr(X, "ndim", None)
    if ndim == 2 and getattr(X, "shape", (0, 0))[1] == 2:
        rows = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=object)
        texts: list[Any] = [tuple(r) for r in rows]
    elif ndim is not None and ndim != 1:
        raise InvalidInputError(
            "X must be a 1-D list of texts or (prompt, answer) pairs, or a table of two columns "
            f"(prompt, answer), got an array of shape {getattr(X, 'shape', '?')}"
        )
    else:
        try:
            texts = list(X)
        except TypeError:
            raise InvalidInputError(f"X must be a list of texts, got {type(X).__name__}") from None
    for k, t in enumerate(texts):
        if isinstance(t, (tuple, list)) and len(t) == 2 and all(isinstance(x, str) for x in t):
            texts[k] = (t[0], t[1])
        elif not isinstance(t, str):
            raise InvalidInputError(
                f"X[{k}] is a {type(t).__name__}: every item must be a string or a "
                "(prompt, answer) pair of strings"
            )
    if not texts:
        raise InvalidInputError("X holds no texts")
    return texts


def _progress(verbose: Any) -> bool:
    """``progress=`` for scikit-learn's ``verbose``: a bar from 1 on, nothing at 0."""
    if not isinstance(verbose, (int, np.integer)) or verbose < 0:  # True/False count as 1/0
        raise InvalidInputError(f"verbose must be an integer >= 0, got {verbose!r}")
    return bool(verbose > 0)


class AttentionFeatures(TransformerMixin, BaseEstimator):
    """Texts → topological features of a transformer's
    attention (stateless unless ``drop_constant``).

    ``X`` is a list of texts, or of (prompt, answer) pairs (the ``prompt`` and ``lookback``
    sets need them), or a table of two columns, prompt and answer (an ``(n, 2)`` array, a
    DataFrame): each row a pair.

    Parameters
    ----------
    model : str
        Model alias, hub id or folder (``"minilm"``, ``"smollm2"``, …).  Loaded when features
        are computed; the estimator never holds the weights.
    settings : FeatureSettings, optional
        Every feature setting in one record (:class:`attntopo.features.FeatureSettings`).
    **setting_values
        One parameter per field of :class:`~attntopo.features.FeatureSettings` (``sets``,
        ``layers``, ``metric``, ``thresholds``, …: the one list
        :data:`attntopo.features.SETTING_NAMES`), so that ``GridSearchCV`` can search them
        (``param_grid={"topo__thresholds": [(0.05,), (0.1, 0.5)]}``); a parameter left at
        None takes the value of ``settings`` (or the setting's default), one given as well
        must agree with ``settings``; another name is a TypeError.
    truncate, batch_size, n_jobs
        As in :func:`attntopo.features.features` (how the work runs, not what it computes).
    memory : None, str, path or joblib.Memory
        Where to cache each text's row (scikit-learn's convention, as ``Pipeline(memory=)``):
        ``None`` caches nothing; a folder or a :class:`joblib.Memory` keeps one row per text,
        keyed by the model (name, path, revision), the settings, attntopo's version and the
        text's SHA-256, so cross-validation and grid searches compute each text once.  The
        features learn nothing from the data, so a cached row is the row.
    verbose : int, default 0
        0: quiet (scikit-learn's default); 1 or more: a progress bar on stderr while features
        are computed (``progress=True`` of :func:`~attntopo.features.features`).
    drop_constant : bool, default False
        Drop the columns that take one value on every text given to ``fit`` (``fit`` then
        computes the features of its texts; ``fit_transform`` computes them once).  Which
        columns these are is learned from the training texts only, as any selector does.

    Attributes
    ----------
    feature_names_out_ : ndarray of str, shape (n_features,)
        Column names ``L{layer}H{head}.{set}.{quantity}``, set by ``fit``.
    n_features_out_ : int
        Number of columns ``transform`` returns.
    support_ : ndarray of bool, shape (n_features_all,)
        Which of all the columns of the settings are kept (all without ``drop_constant``).
    constant_features_ : ndarray of str
        The names of the columns dropped as constant (empty without ``drop_constant``).
    """

    def __init__(
        self,
        model: str = "minilm",
        *,
        settings: FeatureSettings | None = None,
        truncate: bool = False,
        batch_size: int = 16,
        n_jobs: int | None = None,
        memory: Any = None,
        verbose: int = 0,
        drop_constant: bool = False,
        **setting_values: Any,
    ) -> None:
        unknown = [k for k in setting_values if k not in SETTING_NAMES]
        if unknown:
            raise TypeError(
                f"AttentionFeatures() got an unexpected keyword argument "
                f"{unknown[0]!r} (the feature settings are {', '.join(SETTING_NAMES)})"
            )
        self.model = model
        self.settings = settings
        for name in SETTING_NAMES:  # one parameter per feature setting, stored as given
            setattr(self, name, setting_values.get(name))
        self.truncate = truncate
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.memory = memory
        self.verbose = verbose
        self.drop_constant = drop_constant

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """scikit-learn's parameters: ``__init__``'s own and one per feature setting."""
        return sorted(set(super()._get_param_names()) | set(SETTING_NAMES))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.target_tags.required = False
        return tags

    def feature_settings(self) -> FeatureSettings:
        """The :class:`~attntopo.features.FeatureSettings` of the parameters (checked: a bad
        value, or a parameter that disagrees with ``settings``, is an InvalidInputError)."""
        return FeatureSettings.resolve(
            self.settings, **{name: getattr(self, name, None) for name in SETTING_NAMES}
        )

    def _check_model(self) -> str:
        if not isinstance(self.model, str) or not self.model:
            raise InvalidInputError(
                "model must be a model name (alias, hub id or folder), got "
                f"{type(self.model).__name__}: the estimator keeps names only, so that it clones "
                "and pickles without weights"
            )
        return self.model

    def fit(self, X: Any, y: Any = None) -> "AttentionFeatures":
        """Check the inputs and settings and fix the column names.

        ``y`` is optional; when given it must hold at least two classes (checked before any
        model runs).  Without ``drop_constant`` nothing is computed; with it, the features of
        ``X`` are (to find the constant columns).
        """
        self._fit(X, y)
        return self

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """``fit(X, y).transform(X)``, computing the features of ``X`` once."""
        values = self._fit(X, y)
        return self.transform(X) if values is None else values[:, self.support_]

    def _fit(self, X: Any, y: Any) -> np.ndarray | None:
        """Fit; the full feature values of ``X`` when ``drop_constant`` computed them."""
        texts = _texts(X)
        if y is not None:
            check_labels(y, n=len(texts))
        check_memory(self.memory)
        _progress(self.verbose)
        drop = check_bool(self.drop_constant, "drop_constant")
        names = feature_names(self._check_model(), settings=self.feature_settings())
        self.support_ = np.ones(len(names), dtype=bool)
        values = None
        if drop:
            values = self._values(texts, names)
            self.support_ = ~np.all(values == values[:1], axis=0)
        self.constant_features_ = np.asarray(
            [n for n, k in zip(names, self.support_) if not k], dtype=object
        )
        self.feature_names_out_ = np.asarray(
            [n for n, k in zip(names, self.support_) if k], dtype=object
        )
        self.n_features_out_ = len(self.feature_names_out_)
        return values

    def transform(self, X: Any) -> np.ndarray:
        """Features of each text, ndarray of shape (n_texts, n_features_out_), float64.

        With ``memory``, texts seen before (same model and settings) come from the cache and
        only the others go through the model, in one :func:`~attntopo.features.features` call.
        """
        check_is_fitted(self, "feature_names_out_")
        names = feature_names(self._check_model(), settings=self.feature_settings())
        if len(names) != self.support_.size:
            raise InvalidInputError(
                "the model now gives other columns than at fit time; fit the estimator again"
            )
        return self._values(_texts(X), names)[:, self.support_]

    def _values(self, texts: list[str], names: list[str]) -> np.ndarray:
        """Every column of ``names`` for ``texts``, through ``memory`` when it has a location."""
        memory = check_memory(self.memory)
        fs = self.feature_settings()

        def compute(todo: list[str]) -> np.ndarray:
            table = features(
                todo,
                self._check_model(),
                settings=fs,
                truncate=self.truncate,
                batch_size=self.batch_size,
                n_jobs=self.n_jobs,
                progress=_progress(self.verbose),
            )
            if list(table.columns) != names:
                raise InvalidInputError(
                    "the model now gives other columns than at fit time; fit the estimator again"
                )
            return table.values

        if getattr(memory, "location", True) is None:
            return compute(texts)
        from .models import load_model

        # every feature setting (the columns name most, not cycle_cap, drop_special, …)
        options = {**fs.to_dict(), "truncate": bool(self.truncate)}
        digest = settings_digest(model_fingerprint(load_model(self._check_model())), names, options)
        values, _ = cached_rows(texts, memory, digest, len(names), compute)
        return values

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Column names of :meth:`transform` (``input_features`` is ignored: inputs are texts;
        positional, as scikit-learn's pipelines pass it)."""
        check_is_fitted(self, "feature_names_out_")
        return self.feature_names_out_.copy()


def _with_settings(init: Any) -> None:
    """Show the feature settings in ``init``'s signature (help, IDEs, scikit-learn's repr):
    ``**setting_values`` becomes one keyword-only parameter per setting, default None."""
    sig = inspect.signature(init)
    params = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None)
        for name in SETTING_NAMES
    ]
    init.__signature__ = sig.replace(parameters=params)


_with_settings(AttentionFeatures.__init__)


class SelectHeads(TransformerMixin, BaseEstimator):
    """Keep the columns of the ``k`` best heads, chosen in ``fit`` (la-tda's idea: heads
    chosen on data the classifier is not tested on; the criteria are attntopo's).

    Parameters
    ----------
    k : int
        Heads to keep.
    criterion : {"cv_accuracy", "anova", "difference"}
        See :func:`attntopo.features.head_scores`.
    cv, random_state
        Folds and seed of the ``"cv_accuracy"`` criterion.
    feature_names : sequence of str, optional
        Column names when the input is a plain array (a DataFrame brings its own; so does a
        pipeline with ``set_output(transform="pandas")``).
    verbose : int, default 0
        0: quiet; 1 or more: a progress bar over the heads while they are scored.

    Attributes
    ----------
    heads_ : list of (int, int)
        The chosen (layer, head) pairs, best first.
    scores_ : dict of (int, int) to float
        Every head's score (:func:`attntopo.features.head_scores`, higher is better): what
        :func:`attntopo.plots.plot_head_importance` draws as a layer x head grid.
    support_ : ndarray of bool, shape (n_features_in_,)
        Which input columns are kept: the chosen heads' and those of no single head
        (``L*H*``, e.g. the ``zigzag`` set's), which are not chosen among.
    """

    def __init__(
        self,
        *,
        k: int = 10,
        criterion: str = "cv_accuracy",
        cv: int = 3,
        random_state: int = 0,
        feature_names=None,
        verbose: int = 0,
    ) -> None:
        self.k = k
        self.criterion = criterion
        self.cv = cv
        self.random_state = random_state
        self.feature_names = feature_names
        self.verbose = verbose

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
        k = check_positive_int(self.k, "k", allow_none=False)
        self.scores_ = head_scores(
            values,
            y,
            criterion=self.criterion,
            columns=names,
            cv=self.cv,
            random_state=self.random_state,
            progress=_progress(self.verbose),
        )
        self.heads_ = best_heads(self.scores_, k)
        chosen = set(self.heads_)
        # columns of no single head (L*H*, e.g. the zigzag set) are not chosen among: kept
        self.support_ = np.array(
            [parse_column(c)[0] is None or parse_column(c)[:2] in chosen for c in names]
        )
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
        """The kept columns' names (``input_features``, positional as scikit-learn's pipelines
        pass it, is ignored: the names seen by ``fit`` decide)."""
        check_is_fitted(self, "support_")
        return self.feature_names_in_[self.support_]


# ------------------------------------------------------------------ ablation
@dataclass(eq=False)
class HeadAblation:
    """What ablating heads in the forward pass does to a fitted pipeline (:func:`ablate_heads`).

    Attributes
    ----------
    heads : list of (int, int)
        The ablated (layer, head) pairs.
    predictions, predictions_ablated : ndarray of shape (n_texts,)
        The pipeline's predictions without and with the ablation.
    changed : float
        Fraction of the texts whose prediction changes.
    proba_shift : float or None
        Mean over texts of the total-variation distance ½ Σ |p − p̃| between the predicted class
        probabilities without and with the ablation (None: the pipeline has no
        ``predict_proba``).
    accuracy, accuracy_ablated : float or None
        Accuracy against ``y`` (None without ``y``).
    controls : list of dict
        The same for random sets of as many other heads (``heads``, ``changed``,
        ``proba_shift``, ``accuracy_ablated``): the chosen heads drive the prediction when
        their effect stands out from these.
    """

    heads: list
    predictions: np.ndarray
    predictions_ablated: np.ndarray
    changed: float
    proba_shift: float | None
    accuracy: float | None
    accuracy_ablated: float | None
    controls: list = field(default_factory=list)

    def summary(self) -> dict[str, np.ndarray]:
        """One row per ablated set (the chosen heads first, then the controls)."""
        rows = [
            {
                "set": "chosen",
                "heads": self.heads,
                "changed": self.changed,
                "proba_shift": self.proba_shift,
                "accuracy_ablated": self.accuracy_ablated,
            }
        ]
        rows += [{"set": f"control {k}", **c} for k, c in enumerate(self.controls)]
        return {key: np.array([r[key] for r in rows], dtype=object) for key in rows[0]}

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "heads": self.heads,
                "changed": self.changed,
                "proba_shift": self.proba_shift,
                "accuracy": self.accuracy,
                "accuracy_ablated": self.accuracy_ablated,
                "controls": self.controls,
            }
        )

    def __str__(self) -> str:
        def line(
            name: str, heads: list, changed: float, shift: float | None, acc: float | None
        ) -> str:
            text = (
                f"{name} {', '.join(f'L{a}H{b}' for a, b in heads)}: "
                f"{changed:.0%} of predictions change"
            )
            if shift is not None:
                text += f", probabilities move {shift:.3f} (total variation)"
            if acc is not None:
                text += f", accuracy {self.accuracy:.3f} -> {acc:.3f}"
            return text

        out = [line("ablating", self.heads, self.changed, self.proba_shift, self.accuracy_ablated)]
        out += [
            line("control", c["heads"], c["changed"], c["proba_shift"], c["accuracy_ablated"])
            for c in self.controls
        ]
        return "\n".join(out)


def _steps(pipeline: Any) -> tuple["AttentionFeatures", "SelectHeads | None"]:
    steps = [s for _, s in getattr(pipeline, "steps", [])]
    topo = next((s for s in steps if isinstance(s, AttentionFeatures)), None)
    if topo is None:
        raise InvalidInputError(
            "ablate_heads needs a fitted Pipeline with an AttentionFeatures step"
        )
    return topo, next((s for s in steps if isinstance(s, SelectHeads)), None)


def ablate_heads(
    pipeline: Any,
    X: Any,
    y: Any = None,
    *,
    heads=None,
    n_controls: int = 3,
    random_state: int = 0,
) -> HeadAblation:
    """Do the chosen heads drive the prediction?  Ablate them in the forward pass and see.

    Each ablated head attends uniformly to the keys it may see (its attention matrix, which the
    features read, becomes the uniform one, and its output, which later layers read, the mean
    of the values: :func:`attntopo.features.ablated_heads`).  The pipeline predicts
    ``X`` without and with the ablation, and with ``n_controls`` random sets of as many other
    heads (drawn from the heads its features cover) ablated instead.

    Parameters
    ----------
    pipeline : fitted sklearn Pipeline
        With an :class:`AttentionFeatures` step (and usually a :class:`SelectHeads` step).
    X : list of str
        Texts to predict (held-out texts say more than training texts).
    y : array-like of shape (n_texts,), optional
        Labels, for the accuracy without and with the ablation.
    heads : list of (int, int), optional
        Heads to ablate; by default the pipeline's ``SelectHeads.heads_``.
    n_controls : int
        Random control sets of ``len(heads)`` other heads (0 for none).
    random_state : int
        Seed of the control draws.

    Returns
    -------
    HeadAblation
        Predictions, the fraction that changes, the shift of the class probabilities and the
        accuracies; ``str()`` of it reads "ablating L0H3, L1H7: 40% of predictions change …".

    Cost: ``1 + (1 + n_controls)`` feature computations of ``X`` (the first one from the
    transformer's ``memory`` when it has one; ablated passes never use or fill the cache).
    """
    from .attention import resolve_indices
    from .features.pipeline import ablated_heads, check_heads
    from .models import load_model

    topo, select = _steps(pipeline)
    check_is_fitted(topo, "feature_names_out_")
    texts = _texts(X)
    labels = None if y is None else np.asarray(y)
    if labels is not None and labels.shape != (len(texts),):
        raise InvalidInputError(f"y has shape {labels.shape} for {len(texts)} texts")
    if heads is None:
        if select is None or not hasattr(select, "heads_"):
            raise InvalidInputError("give heads=, or a pipeline with a fitted SelectHeads step")
        heads = select.heads_
    if (
        isinstance(n_controls, bool)
        or not isinstance(n_controls, (int, np.integer))
        or n_controls < 0
    ):
        raise InvalidInputError(f"n_controls must be an integer >= 0, got {n_controls!r}")
    model = load_model(topo._check_model())
    chosen = check_heads(heads, model.n_layers, model.n_heads)
    proba = (
        getattr(pipeline, "predict_proba", None) if hasattr(pipeline[-1], "predict_proba") else None
    )

    def run() -> tuple[np.ndarray, np.ndarray | None]:
        return np.asarray(pipeline.predict(texts)), (np.asarray(proba(texts)) if proba else None)

    base, base_p = run()
    memory = topo.memory
    topo.memory = None  # an ablated row is not the text's row: never read or write the cache

    def effect(pairs: list) -> dict[str, Any]:
        with ablated_heads(model, pairs):
            pred, p = run()
        return {
            "heads": pairs,
            "predictions": pred,
            "changed": float(np.mean(pred != base)),
            "proba_shift": None
            if p is None
            else float(np.mean(0.5 * np.abs(p - base_p).sum(axis=1))),
            "accuracy_ablated": None if labels is None else float(np.mean(pred == labels)),
        }

    try:
        main = effect(chosen)
        fs = topo.feature_settings()
        pool = [
            (a, b)
            for a in resolve_indices(fs.layers, model.n_layers, "layer")
            for b in resolve_indices(fs.heads, model.n_heads, "head")
            if (a, b) not in chosen
        ]
        rng = np.random.default_rng(random_state)
        controls = []
        for _ in range(n_controls if len(pool) >= len(chosen) else 0):
            pick = rng.choice(len(pool), size=len(chosen), replace=False)
            c = effect(sorted(pool[i] for i in pick))
            c.pop("predictions")
            controls.append(c)
    finally:
        topo.memory = memory
    return HeadAblation(
        heads=chosen,
        predictions=base,
        predictions_ablated=main["predictions"],
        changed=main["changed"],
        proba_shift=main["proba_shift"],
        accuracy=None if labels is None else float(np.mean(base == labels)),
        accuracy_ablated=main["accuracy_ablated"],
        controls=controls,
    )
