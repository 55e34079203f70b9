""":class:`FeatureSettings`: every setting that decides a feature table's columns and values,
with its default and its check, in one place.

:func:`~attntopo.features.features`, :func:`~attntopo.features.feature_names`,
:func:`attntopo.corpus.run` and :class:`attntopo.sklearn.AttentionFeatures` all take
``settings=FeatureSettings(...)``; their keyword arguments of the same names build one
(:func:`resolve_settings`).  What decides only how the work runs (``n_jobs``, ``batch_size``,
``progress``, ``memory``, ``truncate``) is not a feature setting.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Sequence

from .._validation import check_bool, check_choice, check_number, check_positive_int, is_int
from ..errors import InvalidInputError
from ._graph import CYCLE_CAP, DEFAULT_THRESHOLDS
from ._js import DEFAULT_QUANTILES, DEFAULT_SCALES
from ._prompt import PROMPT_QUANTITIES
from ._registry import DEFAULT_SETS, FEATURE_SETS

__all__ = ["FeatureSettings", "FEATURE_SETS", "DEFAULT_SETS", "check_settings", "resolve_settings"]

def _check_sets(sets: Any) -> tuple[str, ...]:
    if isinstance(sets, str):
        sets = (sets,)
    try:
        sets = tuple(sets)
    except TypeError:
        raise InvalidInputError(
            f"sets must be a set name or a sequence of them; valid: {', '.join(FEATURE_SETS)}"
        ) from None
    if not sets:
        raise InvalidInputError(f"sets is empty: name at least one of {', '.join(FEATURE_SETS)}")
    for s in sets:
        check_choice(s, "sets", FEATURE_SETS, what="feature set")
    if len(set(sets)) != len(sets):
        raise InvalidInputError(f"sets must be distinct, got {list(sets)}")
    return sets


def _check_grid(values: Any, name: str, lo: float, hi: float) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)):
        raise InvalidInputError(f"{name} must be a sequence of numbers in [{lo:g}, {hi:g}], got {values!r}")
    try:
        out = tuple(float(check_number(v, name, lo=lo)) for v in values)
    except TypeError:
        raise InvalidInputError(f"{name} must be a sequence of numbers in [{lo:g}, {hi:g}]") from None
    if not out or any(v > hi for v in out) or len(set(out)) != len(out):
        raise InvalidInputError(
            f"{name} must be a non-empty sequence of distinct numbers in [{lo:g}, {hi:g}], got {values!r}"
        )
    return out


def _check_prompt_quantities(q: Any) -> tuple[str, ...]:
    if isinstance(q, str):
        q = (q,)
    try:
        q = tuple(q)
    except TypeError:
        raise InvalidInputError(
            f"prompt_quantities must be a sequence of {', '.join(PROMPT_QUANTITIES)}"
        ) from None
    if not q or len(set(q)) != len(q):
        raise InvalidInputError(
            f"prompt_quantities must name distinct quantities among {', '.join(PROMPT_QUANTITIES)}, "
            f"got {list(q)}"
        )
    for x in q:
        check_choice(x, "prompt_quantities", PROMPT_QUANTITIES, what="prompt quantity")
    return q


def _check_indices(value: Any, name: str) -> int | tuple[int, ...] | None:
    """``layers``/``heads`` as given (resolved against a model later): None, an int or ints."""
    if value is None:
        return None
    if is_int(value):
        return int(value)
    if isinstance(value, (str, bytes)):
        raise InvalidInputError(f"{name} must be None, an int or a sequence of ints, got {value!r}")
    try:
        out = tuple(value)
    except TypeError:
        raise InvalidInputError(
            f"{name} must be None, an int or a sequence of ints, got {type(value).__name__}"
        ) from None
    for v in out:
        if not is_int(v):
            raise InvalidInputError(f"{name} must be None, an int or a sequence of ints, got {value!r}")
    return tuple(int(v) for v in out)


def _check_engine(engine: Any) -> str | None:
    from ..topology.engines import ENGINES

    if engine is None:
        return None
    return check_choice(engine, "engine", tuple(ENGINES), what="persistence engine",
                        hint="or None for the default")


def _check_metric(metric: Any) -> str:
    from ..distances import DISTANCES

    return check_choice(metric, "metric", DISTANCES, what="metric")


def _metric_upper(metric: str) -> float:
    from ..distances import DISTANCES

    return DISTANCES[metric].upper


@dataclass(frozen=True)
class FeatureSettings:
    """The settings of a feature table (frozen, hashable, picklable; checked when built).

    Parameters
    ----------
    sets : str or sequence of str, default :data:`DEFAULT_SETS`
        Feature sets (:data:`FEATURE_SETS`; ``docs/features.md`` has every formula).
    layers, heads : int or sequence of int, optional
        0-based model indices (negatives allowed, resolved against the model); all by default.
    thresholds : sequence of float in [0, 1], default :data:`DEFAULT_THRESHOLDS`
        Attention thresholds τ of the ``graph`` set.
    metric : str, default "jensen_shannon"
        The distance between attention rows of the sets that read the token distances
        (``js``, ``js_image``, ``js_landscape``, ``js_per_token``; the ``prompt`` set's
        ``js`` score): a key of :data:`attntopo.distances.DISTANCES` (Jensen–Shannon with
        log base 2 by default).  Their columns carry the metric's name
        (``DISTANCES[metric].column``): ``L0H0.hellinger.h0.n_bars`` for ``"hellinger"``.
    scales : sequence of float in [0, upper], default :data:`DEFAULT_SCALES`
        Distances at which the ``js`` set's Betti numbers are counted (``upper``: the
        metric's largest value, 1 for Jensen–Shannon).
    quantiles : sequence of float in [0, 1], default :data:`DEFAULT_QUANTILES`
        Quantiles of the ``js`` set's H0 deaths.
    cycle_cap : int, default :data:`CYCLE_CAP` (50)
        Most directed simple cycles counted by the ``graph`` set.
    prompt_quantities : sequence of {"js", "attention"}, default both
        The ``prompt`` set's scores (``("attention",)`` computes no JS distances).
    drop_special : bool, default False
        Remove special tokens and renormalize rows before the sets that see them so
        (:attr:`FeatureSet.drops_special`: ``js``, ``graph``, ``barcode``, …).  False (as
        everywhere in attntopo): the attention
        as the model computed it, which is what la-tda and TOHA compute on.
    min_persistence : float >= 0, default 0
        Bars of length ``death − birth <= min_persistence`` are left out of the diagram
        statistics (gudhi's convention).
    engine : {"auto", "giotto", "ripser", "gudhi", …}, optional
        The persistence engine (:data:`attntopo.topology.engines.ENGINES`); None: the default.

    Sequences are stored as tuples of floats/ints, so two settings that compute the same
    table are equal.  ``dataclasses.replace(s, thresholds=(0.1,))`` gives a checked copy.
    """

    sets: tuple[str, ...] = DEFAULT_SETS
    layers: int | tuple[int, ...] | None = None
    heads: int | tuple[int, ...] | None = None
    metric: str = "jensen_shannon"
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    scales: tuple[float, ...] = DEFAULT_SCALES
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES
    cycle_cap: int = CYCLE_CAP
    prompt_quantities: tuple[str, ...] = PROMPT_QUANTITIES
    drop_special: bool = False
    min_persistence: float = 0.0
    engine: str | None = None

    def __post_init__(self) -> None:
        checked = {
            "sets": _check_sets(self.sets),
            "layers": _check_indices(self.layers, "layers"),
            "heads": _check_indices(self.heads, "heads"),
            "metric": _check_metric(self.metric),
            "thresholds": _check_grid(self.thresholds, "thresholds", 0.0, 1.0),
            "scales": _check_grid(self.scales, "scales", 0.0, _metric_upper(self.metric)),
            "quantiles": _check_grid(self.quantiles, "quantiles", 0.0, 1.0),
            "cycle_cap": check_positive_int(self.cycle_cap, "cycle_cap", allow_none=False),
            "prompt_quantities": _check_prompt_quantities(self.prompt_quantities),
            "drop_special": check_bool(self.drop_special, "drop_special"),
            "min_persistence": float(check_number(self.min_persistence, "min_persistence", lo=0.0)),
            "engine": _check_engine(self.engine),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def resolve(cls, settings: "FeatureSettings | None" = None, **given: Any) -> "FeatureSettings":
        """``settings`` (or the defaults) with the keywords given (those not None).

        What :func:`~attntopo.features.features` and the others do with their ``settings=``
        and keywords: a keyword that disagrees with ``settings`` is one
        :class:`~attntopo.errors.InvalidInputError` naming both values.
        """
        return resolve_settings(settings, **given)

    def st(self) -> dict[str, Any]:
        """The sets and their parameters as the feature pipeline's plain dict (lists)."""
        return {
            "sets": list(self.sets),
            "metric": self.metric,
            "thresholds": list(self.thresholds),
            "scales": list(self.scales),
            "quantiles": list(self.quantiles),
            "cycle_cap": self.cycle_cap,
            "min_persistence": self.min_persistence,
            "prompt_quantities": list(self.prompt_quantities),
        }

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (tuples as lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


#: The names of the settings, in order.
SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(FeatureSettings))


def resolve_settings(settings: Any = None, **given: Any) -> FeatureSettings:
    """``settings`` (or the defaults) with the keyword arguments that were given (not None).

    A keyword that disagrees with ``settings`` is one :class:`~attntopo.errors.InvalidInputError`
    naming both values; one that agrees is fine.  Unknown names are a programming error.
    """
    given = {k: v for k, v in given.items() if v is not None}
    unknown = set(given) - set(SETTING_NAMES)
    if unknown:
        raise TypeError(f"not feature settings: {', '.join(sorted(unknown))}")
    if settings is None:
        return FeatureSettings(**given)
    if not isinstance(settings, FeatureSettings):
        raise InvalidInputError(
            f"settings must be an attntopo.features.FeatureSettings, got {type(settings).__name__}"
        )
    if not given:
        return settings
    asked = replace(settings, **given)  # checked like the settings themselves
    for name in given:
        mine, theirs = getattr(asked, name), getattr(settings, name)
        if mine != theirs:
            raise InvalidInputError(
                f"{name}={_show(mine)} disagrees with settings.{name}={_show(theirs)}: give "
                f"{name} in one place (the keyword or settings=FeatureSettings({name}=...))"
            )
    return settings


def _show(v: Any) -> str:
    return repr(list(v)) if isinstance(v, tuple) else repr(v)


def check_settings(sets: Sequence[str] = DEFAULT_SETS, thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
                   scales: Sequence[float] = DEFAULT_SCALES, quantiles: Sequence[float] = DEFAULT_QUANTILES,
                   cycle_cap: int = CYCLE_CAP, min_persistence: float = 0.0,
                   prompt_quantities: Sequence[str] = PROMPT_QUANTITIES) -> dict:
    """The pipeline's dict of these settings, checked (:meth:`FeatureSettings.st`)."""
    return FeatureSettings(sets=sets, thresholds=thresholds, scales=scales, quantiles=quantiles,
                           cycle_cap=cycle_cap, min_persistence=min_persistence,
                           prompt_quantities=prompt_quantities).st()
