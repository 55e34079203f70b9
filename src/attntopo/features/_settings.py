""":class:`FeatureSettings`: every setting that decides a feature table's columns and values,
declared once: each field carries its default, its check and its command-line option
(:func:`setting`).

:func:`~attntopo.features.features`, :func:`~attntopo.features.feature_names`,
:func:`attntopo.corpus.run` and :class:`attntopo.sklearn.AttentionFeatures` take
``settings=FeatureSettings(...)`` or the settings as keywords, checked against
:data:`SETTING_NAMES` (:func:`resolve_settings`); ``attntopo corpus`` has one option per
setting that declares one (the command-line scaffold reads :data:`CLI_OPTIONS`); a corpus store
keeps the record in its manifest.  A new setting is therefore three lines here: the field, its
check and its option (docs/architecture.md).  What decides only how the work runs (``n_jobs``,
``batch_size``, ``progress``, ``memory``, ``truncate``) is not a feature setting.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping

from .._validation import check_bool, check_choice, check_number, check_positive_int, is_int
from ..errors import InvalidInputError
from ._graph import CYCLE_CAP, DEFAULT_THRESHOLDS
from ._js import DEFAULT_QUANTILES, DEFAULT_SCALES
from ._prompt import PROMPT_QUANTITIES
from ._registry import DEFAULT_SETS, FEATURE_SETS
from ._spectral import SPECTRAL_K

__all__ = [
    "FeatureSettings",
    "FEATURE_SETS",
    "DEFAULT_SETS",
    "SETTING_NAMES",
    "CLI_OPTIONS",
    "CliOption",
    "setting",
    "resolve_settings",
]


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
        raise InvalidInputError(
            f"{name} must be a sequence of numbers in [{lo:g}, {hi:g}], got {values!r}"
        )
    try:
        out = tuple(float(check_number(v, name, lo=lo)) for v in values)
    except TypeError:
        raise InvalidInputError(
            f"{name} must be a sequence of numbers in [{lo:g}, {hi:g}]"
        ) from None
    if not out or any(v > hi for v in out) or len(set(out)) != len(out):
        raise InvalidInputError(
            f"{name} must be a non-empty sequence of distinct "
            f"numbers in [{lo:g}, {hi:g}], got {values!r}"
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
            "prompt_quantities must name distinct quantities among "
            f"{', '.join(PROMPT_QUANTITIES)}, got {list(q)}"
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
            raise InvalidInputError(
                f"{name} must be None, an int or a sequence of ints, got {value!r}"
            )
    return tuple(int(v) for v in out)


def _check_engine(engine: Any) -> str | None:
    from ..topology.engines import ENGINES

    if engine is None:
        return None
    return check_choice(
        engine, "engine", tuple(ENGINES), what="persistence engine", hint="or None for the default"
    )


def _check_metric(metric: Any) -> str:
    from ..distances import DISTANCES

    return check_choice(metric, "metric", DISTANCES, what="metric")


@dataclass(frozen=True)
class CliOption:
    """How the command line spells a setting (``attntopo corpus``).

    ``kind`` says how its text becomes the value: ``"names"`` and ``"numbers"`` (repeatable
    or comma-separated strings, numbers), ``"indices"`` (layers, heads: as ``--layer``),
    ``"int"``, ``"number"``, ``"choice"`` (one name) or ``"flag"`` (a switch).
    """

    flags: tuple[str, ...]
    kind: Literal["names", "numbers", "indices", "int", "number", "choice", "flag"]
    metavar: str
    help: str | Callable[[], str]  # a function: read when the help is shown (from a registry)

    def text(self) -> str:
        """The help text."""
        return self.help() if callable(self.help) else self.help


def setting(default: Any, check: Callable[[Any, Any], Any], cli: CliOption | None = None) -> Any:
    """A field of :class:`FeatureSettings`: its default, its check ``check(value, settings)``
    (the record with the fields declared before checked already; returns the stored value or
    raises :class:`~attntopo.errors.InvalidInputError`) and its command-line option."""
    return field(default=default, metadata={"check": check, "cli": cli})


def _metric_help() -> str:
    from ..distances import DISTANCES

    names = [n + (" (default)" if n == "jensen_shannon" else "") for n in DISTANCES]
    return (
        "Distance between attention rows of the sets that read the token distances (js, "
        f"js_image, …; their columns carry its name): {', '.join(names)}."
    )


def _drop_help() -> str:
    names = [n for n, s in FEATURE_SETS.items() if s.drops_special]
    return (
        "Remove special tokens (\\[CLS], \\[SEP], …) and renormalize rows before the "
        f"{', '.join(names[:-1])} and {names[-1]} sets (default: kept, the attention as the "
        "model computed it)."
    )


def _engine_help() -> str:
    from ..constants import ENGINE_NAMES

    return f"Persistence engine: {', '.join(ENGINE_NAMES)} (default: the fastest installed)."


def _upper(settings: Any) -> float:
    """The largest distance of the settings' metric (the range of ``scales``)."""
    from ..distances import DISTANCES

    return DISTANCES[settings.metric].upper


@dataclass(frozen=True)
class FeatureSettings:
    """The settings of a feature table (frozen, hashable, picklable; checked when built).

    Parameters
    ----------
    sets : str or sequence of str, default :data:`DEFAULT_SETS`
        Feature sets (:data:`FEATURE_SETS`; ``docs/features.md`` has every formula).
    layers, heads : int or sequence of int, optional
        0-based model indices (negatives allowed, resolved against the model); all by default.
    metric : str, default "jensen_shannon"
        The distance between attention rows of the sets that read the token distances
        (``js``, ``js_image``, ``js_landscape``, ``js_per_token``; the ``prompt`` set's
        ``js`` score): a key of :data:`attntopo.distances.DISTANCES` (Jensen–Shannon with
        log base 2 by default).  Their columns carry the metric's name
        (``DISTANCES[metric].column``): ``L0H0.hellinger.h0.n_bars`` for ``"hellinger"``.
    thresholds : sequence of float in [0, 1], default :data:`DEFAULT_THRESHOLDS`
        Attention thresholds τ of the ``graph`` set.
    scales : sequence of float in [0, upper], default :data:`DEFAULT_SCALES`
        Distances at which the ``js`` set's Betti numbers are counted (``upper``: the
        metric's largest value, 1 for Jensen–Shannon).
    quantiles : sequence of float in [0, 1], default :data:`DEFAULT_QUANTILES`
        Quantiles of the ``js`` set's H0 deaths.
    cycle_cap : int, default :data:`CYCLE_CAP` (50)
        Most directed simple cycles counted by the ``graph`` set (50, as la-tda; tda4atd
        counts up to 500).
    prompt_quantities : sequence of {"js", "attention"}, default both
        The ``prompt`` set's scores: ``"attention"`` (TOHA's, on ``1 − max(A, Aᵀ)``) costs
        ``O(n²)`` per head and computes no distances between rows; ``"js"`` (named by the
        metric) needs the token distances from the response's rows.  Ask for
        ``("attention",)`` to pay only for it.
    spectral_k : int, default :data:`SPECTRAL_K` (10)
        Eigenvalues of each head's attention Laplacian the ``spectral`` set keeps.
    drop_special : bool, default False
        Remove special tokens and renormalize rows before the sets that see them so
        (:attr:`FeatureSet.drops_special`: ``js``, ``graph``, ``barcode``, …).  False (as
        everywhere in attntopo): the attention as the model computed it, which is what
        la-tda and TOHA compute on.
    min_persistence : float >= 0, default 0
        Bars of length ``death − birth <= min_persistence`` are left out of the ``js``,
        ``barcode``, ``js_image``, ``js_landscape`` and ``js_per_token`` statistics (gudhi's
        convention; the ``js`` set's H0 death quantiles, the minimum spanning tree's edges,
        keep every edge).
        0 keeps every bar the engine reports.
    engine : {"auto", "giotto", "ripser", "gudhi", …}, optional
        The persistence engine (:data:`attntopo.topology.engines.ENGINES`); None: the default.

    Sequences are stored as tuples of floats/ints, so two settings that compute the same
    table are equal.  ``dataclasses.replace(s, thresholds=(0.1,))`` gives a checked copy.
    """

    sets: tuple[str, ...] = setting(
        DEFAULT_SETS,
        lambda v, s: _check_sets(v),
        CliOption(
            ("--sets", "-s"),
            "names",
            "SETS",
            lambda: f"Feature sets, comma-separated: {', '.join(FEATURE_SETS)}.",
        ),
    )
    layers: int | tuple[int, ...] | None = setting(
        None,
        lambda v, s: _check_indices(v, "layers"),
        CliOption(
            ("--layer", "-l"),
            "indices",
            "L",
            "Layer(s), 0-based; repeat or comma-separate (default: all).",
        ),
    )
    heads: int | tuple[int, ...] | None = setting(
        None,
        lambda v, s: _check_indices(v, "heads"),
        CliOption(("--head",), "indices", "H", "Head(s) in each chosen layer (default: all)."),
    )
    metric: str = setting(
        "jensen_shannon",
        lambda v, s: _check_metric(v),
        CliOption(("--metric",), "choice", "NAME", _metric_help),
    )
    thresholds: tuple[float, ...] = setting(
        DEFAULT_THRESHOLDS,
        lambda v, s: _check_grid(v, "thresholds", 0.0, 1.0),
        CliOption(
            ("--thresholds",),
            "numbers",
            "T",
            "Attention thresholds of the graph set, comma-separated, in [0, 1].",
        ),
    )
    scales: tuple[float, ...] = setting(
        DEFAULT_SCALES,
        lambda v, s: _check_grid(v, "scales", 0.0, _upper(s)),
        CliOption(
            ("--scales",),
            "numbers",
            "E",
            "Distances at which the js set counts Betti numbers, comma-separated.",
        ),
    )
    quantiles: tuple[float, ...] = setting(
        DEFAULT_QUANTILES,
        lambda v, s: _check_grid(v, "quantiles", 0.0, 1.0),
        CliOption(
            ("--quantiles",),
            "numbers",
            "Q",
            "Quantiles of the js set's H0 deaths, comma-separated.",
        ),
    )
    cycle_cap: int = setting(
        CYCLE_CAP,
        lambda v, s: check_positive_int(v, "cycle_cap", allow_none=False),
        CliOption(("--cycle-cap",), "int", "N", "Most directed cycles the graph set counts (50)."),
    )
    prompt_quantities: tuple[str, ...] = setting(
        PROMPT_QUANTITIES,
        lambda v, s: _check_prompt_quantities(v),
        CliOption(
            ("--prompt-quantities",),
            "names",
            "Q",
            "The prompt set's scores, comma-separated: js, attention (default both; attention "
            "alone is O(n²) per head).",
        ),
    )
    spectral_k: int = setting(
        SPECTRAL_K,
        lambda v, s: check_positive_int(v, "spectral_k", allow_none=False),
        CliOption(
            ("--spectral-k",), "int", "K", "Eigenvalues per head the spectral set keeps (10)."
        ),
    )
    drop_special: bool = setting(
        False,
        lambda v, s: check_bool(v, "drop_special"),
        CliOption(("--drop-special",), "flag", "", lambda: _drop_help()),
    )
    min_persistence: float = setting(
        0.0,
        lambda v, s: float(check_number(v, "min_persistence", lo=0.0)),
        CliOption(
            ("--min-persistence",),
            "number",
            "P",
            "Leave bars of length <= P out of the diagram statistics (default 0: every bar).",
        ),
    )
    engine: str | None = setting(
        None,
        lambda v, s: _check_engine(v),
        CliOption(("--engine",), "choice", "NAME", _engine_help),
    )

    def __post_init__(self) -> None:
        for f in fields(self):  # in declaration order: a check may read the fields before it
            object.__setattr__(self, f.name, f.metadata["check"](getattr(self, f.name), self))

    @classmethod
    def resolve(
        cls, settings: "FeatureSettings | None", /, *, owner: str = "settings", **given: Any
    ) -> "FeatureSettings":
        """``settings`` (or the defaults) with the keywords given (those not None).

        What :func:`~attntopo.features.features` and the others do with their ``settings=``
        and keywords: a keyword that disagrees with ``settings`` is one
        :class:`~attntopo.errors.InvalidInputError` naming both values; a name that is no
        setting a TypeError naming ``owner`` (``"corpus.run()"``).
        """
        return resolve_settings(settings, owner=owner, **given)

    def st(self) -> dict[str, Any]:
        """Every setting as the feature pipeline's plain dict (tuples as lists)."""
        return self.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (tuples as lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, doc: Any, *, where: str = "settings") -> "FeatureSettings":
        """Inverse of :meth:`to_dict`; a setting missing from ``doc`` (one added after it was
        written) takes its default, an unknown one is one
        :class:`~attntopo.errors.InvalidInputError` naming it and ``where``."""
        if not isinstance(doc, dict):
            raise InvalidInputError(f"{where}: the feature settings must be an object")
        unknown = sorted(set(doc) - set(SETTING_NAMES))
        if unknown:
            raise InvalidInputError(f"{where}: unknown feature settings {', '.join(unknown)}")
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in doc.items()})


#: The names of the settings, in order: the one list keywords are checked against.
SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(FeatureSettings))
#: Each setting's command-line option (those that have one), by setting name.
CLI_OPTIONS: Mapping[str, CliOption] = MappingProxyType(
    {f.name: f.metadata["cli"] for f in fields(FeatureSettings) if f.metadata["cli"]}
)


def resolve_settings(
    settings: Any = None, *, owner: str = "settings", **given: Any
) -> FeatureSettings:
    """``settings`` (or the defaults) with the keyword arguments that were given (not None).

    A keyword that disagrees with ``settings`` is one :class:`~attntopo.errors.InvalidInputError`
    naming both values; one that agrees is fine.  A name that is no setting is a TypeError
    naming ``owner`` (``"features()"``), as Python's own for an unexpected keyword.
    """
    given = {k: v for k, v in given.items() if v is not None}
    unknown = [k for k in given if k not in SETTING_NAMES]
    if unknown:
        raise TypeError(
            f"{owner} got an unexpected keyword argument {unknown[0]!r} (the feature "
            f"settings are {', '.join(SETTING_NAMES)})"
        )
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
