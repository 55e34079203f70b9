"""The :class:`Diagram`: the one canonical persistence-diagram format of attntopo.

A diagram holds one ``(k, 2)`` float64 array of (birth, death) pairs per
homology dimension ``0..maxdim``; ``death == inf`` means the class never dies
(or is still alive where the filtration was cut, at ``threshold``).  Points are
sorted canonically (by birth, then death) and the arrays are read-only, so two
diagrams with the same points compare equal whatever order an engine produced.

Converters exist for the formats of gudhi (``[(dim, (birth, death)), ...]``),
ripser.py (list of ``(k, 2)`` arrays) and giotto-tda (``(k, 3)`` array of
``[birth, death, dim]``).  For storage, :meth:`Diagram.to_dict` gives
JSON-friendly metadata and :meth:`Diagram.arrays` the arrays (for NPZ).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
from scipy.special import entr

from .._validation import check_maxdim, check_number, check_threshold, is_int
from ..constants import SUMMARY_STATS
from ..errors import InvalidInputError

__all__ = ["Diagram", "summary_table"]


_FORMAT = "attntopo.Diagram"
_FORMAT_VERSION = 1


def _as_points(arr: Any, dim: int) -> np.ndarray:
    """Validate one dimension's points and return a sorted, read-only (k, 2) float64 array."""
    try:
        a = np.array(arr, dtype=np.float64)  # always a copy: we own (and freeze) it
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"diagram points of H{dim} must be numbers, shape (k, 2); could not convert: {exc}"
        ) from None
    if a.size == 0:
        a = a.reshape(0, 2)
    if a.ndim != 2 or a.shape[1] != 2:
        raise InvalidInputError(
            f"diagram points of H{dim} must have shape (k, 2) (birth, death), got {a.shape}"
        )
    if a.shape[0]:
        if not np.all(np.isfinite(a[:, 0])):
            raise InvalidInputError(f"births of H{dim} must be finite (deaths may be inf)")
        if np.any(np.isnan(a[:, 1])) or np.any(a[:, 1] < a[:, 0]):
            raise InvalidInputError(f"deaths of H{dim} must be >= births (or inf), not NaN")
        order = np.lexsort((a[:, 1], a[:, 0]))
        a = a[order]
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


class Diagram:
    """Persistence diagram of one filtration, one array per homology dimension.

    Parameters
    ----------
    dgms : sequence of array-like of shape (k_d, 2)
        (birth, death) pairs for dimensions ``0..maxdim``, in the distance unit of
        the filtration; ``inf`` death = never dies (or alive at ``threshold``).
        Copied, sorted by (birth, death), made read-only.
    maxdim : int, optional
        Highest homology dimension; must equal ``len(dgms) - 1`` (inferred when
        omitted).
    threshold : float, default inf
        Where the filtration was cut (``inf`` = not cut).
    engine : str, default "giotto"
        Engine that computed it (provenance only: not part of equality).
    filtration : str, default "vietoris_rips"
        Name of the filtration.

    Notes
    -----
    Immutable and hashable.  ``dgm[d]`` is the (k, 2) array of dimension ``d``,
    ``len(dgm) == maxdim + 1`` and iterating yields the arrays of dims 0..maxdim.
    Two diagrams are equal when their points are exactly equal and they share
    ``maxdim``, ``threshold`` and ``filtration``.  The engine is deliberately not
    compared: all engines return identical diagrams, and a diagram computed by
    gudhi should equal the same diagram computed by giotto-ph.

    Examples
    --------
    >>> dgm = Diagram([[[0, 1], [0, float("inf")]], [[1, 1.5]]], maxdim=1)
    >>> dgm.counts()
    array([2, 1])
    >>> dgm.betti(1.2)
    array([1, 1])
    """

    __slots__ = ("_dgms", "_maxdim", "_threshold", "_engine", "_filtration")

    def __init__(
        self,
        dgms: Sequence[Any],
        *,
        maxdim: int | None = None,
        threshold: float = float("inf"),
        engine: str = "giotto",
        filtration: str = "vietoris_rips",
    ) -> None:
        if isinstance(dgms, np.ndarray) and dgms.ndim == 2:
            raise InvalidInputError(
                "dgms must be a sequence of (k, 2) arrays, one per dimension; "
                "for a giotto-tda (k, 3) array use Diagram.from_giotto"
            )
        try:
            dgms = list(dgms)
        except TypeError:
            raise InvalidInputError(
                "dgms must be a sequence of (k, 2) arrays, one per dimension, "
                f"got {type(dgms).__name__}"
            ) from None
        if not dgms:
            raise InvalidInputError("dgms must hold at least one dimension (H0)")
        if maxdim is None:
            maxdim = len(dgms) - 1
        maxdim = check_maxdim(maxdim, hi=None)
        if len(dgms) != maxdim + 1:
            raise InvalidInputError(
                f"dgms must hold maxdim + 1 = {maxdim + 1} arrays (dims 0..{maxdim}), "
                f"got {len(dgms)}"
            )
        if not isinstance(engine, str) or not isinstance(filtration, str):
            raise InvalidInputError("engine and filtration must be strings")
        set_ = object.__setattr__
        set_(self, "_dgms", tuple(_as_points(a, d) for d, a in enumerate(dgms)))
        set_(self, "_maxdim", maxdim)
        set_(self, "_threshold", check_threshold(threshold))
        set_(self, "_engine", engine)
        set_(self, "_filtration", filtration)

    @classmethod
    def _from_engine(cls, dgms: Sequence[np.ndarray], threshold: float, engine: str) -> "Diagram":
        """Wrap :func:`attntopo.topology.engines.compute` output without copying or checks.

        Internal fast path for batches of thousands of small diagrams: ``dgms`` must be
        C-contiguous float64 ``(k, 2)`` arrays, sorted by (birth, death), finite births,
        deaths > births or inf, owned by the caller (they are frozen in place), and
        ``threshold`` an already checked float.
        """
        self = object.__new__(cls)
        arrays = []
        for a in dgms:
            a.setflags(write=False)
            arrays.append(a)
        set_ = object.__setattr__
        set_(self, "_dgms", tuple(arrays))
        set_(self, "_maxdim", len(arrays) - 1)
        set_(self, "_threshold", float(threshold))
        set_(self, "_engine", engine)
        set_(self, "_filtration", "vietoris_rips")
        return self

    # ------------------------------------------------------------ immutability
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Diagram is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Diagram is immutable")

    def __reduce__(self):
        state = (self._dgms, self._maxdim, self._threshold, self._engine, self._filtration)
        return (_rebuild, state)

    def replace(self, **changes: Any) -> "Diagram":
        """Copy with some of ``dgms``, ``maxdim``, ``threshold``, ``engine``, ``filtration``
        changed (``maxdim`` follows ``dgms`` unless given)."""
        kw = dict(
            dgms=self._dgms,
            maxdim=self._maxdim,
            threshold=self._threshold,
            engine=self._engine,
            filtration=self._filtration,
        )
        unknown = set(changes) - set(kw)
        if unknown:
            raise InvalidInputError(f"cannot replace {sorted(unknown)}; allowed: {sorted(kw)}")
        kw.update(changes)
        if "dgms" in changes and "maxdim" not in changes:
            kw["maxdim"] = None
        dgms = kw.pop("dgms")
        return Diagram(dgms, **kw)

    # ------------------------------------------------------------------ access
    @property
    def dgms(self) -> tuple[np.ndarray, ...]:
        """tuple of read-only ndarray of shape (k_d, 2): the points per dimension."""
        return self._dgms

    @property
    def maxdim(self) -> int:
        """Highest homology dimension held."""
        return self._maxdim

    @property
    def threshold(self) -> float:
        """Where the filtration was cut (``inf`` = not cut)."""
        return self._threshold

    @property
    def engine(self) -> str:
        """Engine that computed the diagram (provenance)."""
        return self._engine

    @property
    def filtration(self) -> str:
        """Name of the filtration, e.g. ``"vietoris_rips"``."""
        return self._filtration

    def _dim(self, d: Any) -> int:
        if not is_int(d):
            raise InvalidInputError(f"homology dimension must be an int, got {d!r}")
        d = int(d)
        if d < 0:
            d += self._maxdim + 1
        if not 0 <= d <= self._maxdim:
            raise InvalidInputError(
                f"homology dimension {d} out of range; this diagram holds dims 0..{self._maxdim}"
            )
        return d

    def __getitem__(self, d: int) -> np.ndarray:
        return self._dgms[self._dim(d)]

    def __len__(self) -> int:
        return self._maxdim + 1

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._dgms)

    def finite(self, d: int) -> np.ndarray:
        """Points of dimension ``d`` with finite death, ndarray of shape (k, 2)."""
        a = self[d]
        return a[np.isfinite(a[:, 1])]

    def infinite(self, d: int) -> np.ndarray:
        """Points of dimension ``d`` with infinite death, ndarray of shape (k, 2)."""
        a = self[d]
        return a[~np.isfinite(a[:, 1])]

    def lifetimes(self, d: int) -> np.ndarray:
        """Finite lifetimes ``death - birth`` of dimension ``d``, ndarray of shape (k,)."""
        a = self.finite(d)
        return a[:, 1] - a[:, 0]

    def prune(self, min_persistence: float) -> "Diagram":
        """The diagram without its short bars: finite bars with ``death - birth <=
        min_persistence`` are dropped (gudhi's ``persistence(min_persistence=)`` convention:
        kept bars are strictly longer); infinite bars always stay.  ``0`` drops only
        zero-length bars, which the engines never report.  Returns a new Diagram.
        """
        mp = check_number(min_persistence, "min_persistence", lo=0.0)
        kept = []
        for a in self._dgms:
            b = a[~((a[:, 1] - a[:, 0]) <= mp)]  # inf - birth is inf: never dropped
            b.setflags(write=False)
            kept.append(b)
        out = object.__new__(Diagram)
        set_ = object.__setattr__
        set_(out, "_dgms", tuple(kept))
        set_(out, "_maxdim", self._maxdim)
        set_(out, "_threshold", self._threshold)
        set_(out, "_engine", self._engine)
        set_(out, "_filtration", self._filtration)
        return out

    def counts(self) -> np.ndarray:
        """Number of points per dimension, int ndarray of shape (maxdim + 1,)."""
        return np.array([a.shape[0] for a in self._dgms], dtype=np.int64)

    def betti(self, scale: float) -> np.ndarray:
        """Betti numbers at ``scale``: bars with ``birth <= scale < death``.

        Parameters
        ----------
        scale : float
            Filtration value (same unit as the distances).

        Returns
        -------
        ndarray of shape (maxdim + 1,)
            int Betti number per dimension.  Beyond a finite ``threshold`` the
            numbers describe the cut complex, not the full filtration.
        """
        scale = float(scale)
        return np.array(
            [int(np.count_nonzero((a[:, 0] <= scale) & (scale < a[:, 1]))) for a in self._dgms],
            dtype=np.int64,
        )

    def summary(self) -> dict[int, dict[str, float | int]]:
        """Per-dimension summary statistics.

        Returns
        -------
        dict
            ``{d: {"n_bars", "n_infinite", "total_persistence", "max_persistence",
            "persistence_entropy"}}`` for d in 0..maxdim.  ``total_persistence``
            is the sum of finite lifetimes, ``max_persistence`` the largest finite
            lifetime (0 if none), ``persistence_entropy`` the Shannon entropy in
            bits of the finite lifetimes normalised to sum 1 (giotto-tda's
            ``PersistenceEntropy(normalize=False)`` since 0.3, which gives its
            ``nan_fill_value``, -1, where attntopo gives 0: when no lifetime is
            positive; giotto-tda 0.2 used the natural log).  Infinite bars are excluded from the
            three lifetime statistics (they are counted in ``n_bars`` and ``n_infinite``).
        """
        table = summary_table([self])
        return {
            d: {
                k: (int(table[k][0, d]) if k.startswith("n_") else float(table[k][0, d]))
                for k in SUMMARY_STATS
            }
            for d in range(self._maxdim + 1)
        }

    # ------------------------------------------------------- equality and repr
    def _key(self) -> tuple:
        return (self._maxdim, self._threshold, self._filtration)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Diagram):
            return NotImplemented
        return self._key() == other._key() and all(
            np.array_equal(a, b) for a, b in zip(self._dgms, other._dgms)
        )

    def __hash__(self) -> int:
        return hash(self._key() + tuple(a.tobytes() for a in self._dgms))

    def allclose(self, other: "Diagram", *, atol: float = 1e-6, rtol: float = 0.0) -> bool:
        """Same dims and point counts, births/deaths within ``atol + rtol*|value|``.

        Points are paired in canonical (birth, death) order, and if that fails in
        (death, birth) order; ``inf`` must face ``inf``.  Threshold and filtration
        are not compared.

        Parameters
        ----------
        other : Diagram
        atol, rtol : float
            Absolute and relative tolerance, as in :func:`numpy.allclose`.
        """
        if not isinstance(other, Diagram):
            raise InvalidInputError(f"allclose needs a Diagram, got {type(other).__name__}")
        if self._maxdim != other._maxdim or not np.array_equal(self.counts(), other.counts()):
            return False
        for a, b in zip(self._dgms, other._dgms):
            if np.allclose(a, b, atol=atol, rtol=rtol):
                continue
            oa = np.lexsort((a[:, 0], a[:, 1]))
            ob = np.lexsort((b[:, 0], b[:, 1]))
            if not np.allclose(a[oa], b[ob], atol=atol, rtol=rtol):
                return False
        return True

    def __repr__(self) -> str:
        counts = ", ".join(f"H{d}={a.shape[0]}" for d, a in enumerate(self._dgms))
        extra = "" if math.isinf(self._threshold) else f", threshold={self._threshold:g}"
        return f"Diagram({counts}, engine={self._engine!r}{extra})"

    # ------------------------------------------------------------- converters
    def to_gudhi(self) -> list[tuple[int, tuple[float, float]]]:
        """gudhi format: ``[(dim, (birth, death)), ...]``, dims ascending."""
        return [(d, (float(b), float(e))) for d, a in enumerate(self._dgms) for b, e in a.tolist()]

    @classmethod
    def from_gudhi(
        cls,
        pairs: Iterable[tuple[int, tuple[float, float]]],
        *,
        maxdim: int | None = None,
        **meta: Any,
    ) -> "Diagram":
        """Build from gudhi's ``[(dim, (birth, death)), ...]`` (e.g. ``SimplexTree.persistence()``).

        ``maxdim`` defaults to the largest dimension present (0 if none); pairs
        above ``maxdim`` are ignored.  ``meta``: threshold, engine, filtration.
        """
        try:
            pairs = [(int(d), (float(p[0]), float(p[1]))) for d, p in pairs]
        except (TypeError, ValueError, IndexError):
            raise InvalidInputError(
                "gudhi pairs must look like [(dim, (birth, death)), ...]"
            ) from None
        if maxdim is None:
            maxdim = max((d for d, _ in pairs), default=0)
        maxdim = check_maxdim(maxdim, hi=None)
        dgms: list[list] = [[] for _ in range(maxdim + 1)]
        for d, p in pairs:
            if d < 0:
                raise InvalidInputError(f"gudhi pair has negative dimension {d}")
            if d <= maxdim:
                dgms[d].append(p)
        meta.setdefault("engine", "gudhi")
        return cls(dgms, maxdim=maxdim, **meta)

    def to_ripser(self) -> list[np.ndarray]:
        """ripser.py / persim format: list of writable (k, 2) float64 arrays, dims 0..maxdim."""
        return [a.copy() for a in self._dgms]

    @classmethod
    def from_ripser(
        cls, dgms: Sequence[Any], *, maxdim: int | None = None, **meta: Any
    ) -> "Diagram":
        """Build from ripser.py's ``ripser(...)["dgms"]`` (or giotto-ph's ``"dgms"``).

        Extra dimensions above ``maxdim`` are ignored.  ``meta``: threshold,
        engine, filtration.
        """
        dgms = list(dgms)
        if maxdim is None:
            maxdim = len(dgms) - 1
        maxdim = check_maxdim(maxdim, hi=None)
        if len(dgms) < maxdim + 1:
            raise InvalidInputError(
                f"ripser diagrams hold {len(dgms)} dimensions, fewer than maxdim + 1 = {maxdim + 1}"
            )
        meta.setdefault("engine", "ripser")
        return cls(dgms[: maxdim + 1], maxdim=maxdim, **meta)

    def to_giotto(self) -> np.ndarray:
        """giotto-tda format: ndarray of shape (k, 3) with rows ``[birth, death, dim]``.

        Infinite deaths are kept as ``inf`` (giotto-tda itself would replace them).
        """
        parts = [
            np.column_stack([a, np.full(a.shape[0], float(d))]) for d, a in enumerate(self._dgms)
        ]
        return np.concatenate(parts, axis=0) if parts else np.empty((0, 3))

    @classmethod
    def from_giotto(cls, arr: Any, *, maxdim: int | None = None, **meta: Any) -> "Diagram":
        """Build from a giotto-tda diagram, ndarray of shape (k, 3) or (1, k, 3).

        Rows with ``birth == death`` are dropped (giotto-tda pads diagrams with
        such points).  ``maxdim`` defaults to the largest dimension present.
        """
        a = np.asarray(arr, dtype=np.float64)
        if a.ndim == 3 and a.shape[0] == 1:
            a = a[0]
        if a.size == 0:
            a = a.reshape(0, 3)
        if a.ndim != 2 or a.shape[1] != 3:
            raise InvalidInputError(
                f"giotto-tda diagram must have shape (k, 3) [birth, death, dim], got {a.shape}"
            )
        dims = a[:, 2]
        if np.any(dims != np.round(dims)) or np.any(dims < 0):
            raise InvalidInputError("giotto-tda diagram column 2 must hold non-negative int dims")
        if maxdim is None:
            maxdim = int(dims.max()) if dims.size else 0
        maxdim = check_maxdim(maxdim, hi=None)
        keep = a[:, 0] != a[:, 1]
        dgms = [a[keep & (dims == d), :2] for d in range(maxdim + 1)]
        meta.setdefault("engine", "giotto")
        return cls(dgms, maxdim=maxdim, **meta)

    # ---------------------------------------------------------------- storage
    def to_dict(self, *, include_points: bool = False) -> dict[str, Any]:
        """JSON-friendly description.

        Parameters
        ----------
        include_points : bool, default False
            Also include ``"points"``: per dimension a list of ``[birth, death]``
            with ``death = None`` for inf (strict JSON has no inf).  Leave False
            when the arrays go to an NPZ file via :meth:`arrays`.

        Returns
        -------
        dict
            ``format``, ``version``, ``maxdim``, ``threshold`` (float, or the
            string ``"inf"``), ``engine``, ``filtration``, ``counts``.
        """
        out: dict[str, Any] = {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "maxdim": self._maxdim,
            "threshold": "inf" if math.isinf(self._threshold) else self._threshold,
            "engine": self._engine,
            "filtration": self._filtration,
            "counts": self.counts().tolist(),
        }
        if include_points:
            out["points"] = [
                [[b, (e if math.isfinite(e) else None)] for b, e in a.tolist()] for a in self._dgms
            ]
        return out

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], *, arrays: Mapping[str, Any] | None = None, prefix: str = ""
    ) -> "Diagram":
        """Inverse of :meth:`to_dict` (points from ``data["points"]`` or from ``arrays``).

        Parameters
        ----------
        data : mapping
            Output of :meth:`to_dict`.
        arrays : mapping, optional
            Output of :meth:`arrays` (e.g. an opened NPZ file); required when
            ``data`` has no ``"points"``.
        prefix : str
            Key prefix used with :meth:`arrays`.
        """
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"from_dict needs a mapping, got {type(data).__name__}")
        fmt = data.get("format", _FORMAT)
        if fmt != _FORMAT:
            raise InvalidInputError(
                f"not a diagram description: format {fmt!r}, expected {_FORMAT!r}"
            )
        version = data.get("version", _FORMAT_VERSION)
        if version != _FORMAT_VERSION:
            raise InvalidInputError(
                f"unsupported diagram format version {version!r}; "
                f"this attntopo reads {_FORMAT_VERSION}"
            )
        meta = _meta_from_dict(data)
        if arrays is not None:
            return cls.from_arrays(arrays, prefix=prefix, **meta)
        if "points" not in data:
            raise InvalidInputError("diagram description has no 'points'; pass arrays= too")
        dgms = [
            np.array([[b, np.inf if e is None else e] for b, e in pts], dtype=np.float64).reshape(
                -1, 2
            )
            for pts in data["points"]
        ]
        return cls(dgms, **meta)

    def arrays(self, *, prefix: str = "") -> dict[str, np.ndarray]:
        """Arrays for NPZ storage: ``{f"{prefix}h{d}": ndarray of shape (k_d, 2)}``; inf kept."""
        return {f"{prefix}h{d}": a for d, a in enumerate(self._dgms)}

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, Any], *, prefix: str = "", maxdim: int | None = None, **meta: Any
    ) -> "Diagram":
        """Inverse of :meth:`arrays`.

        ``maxdim`` defaults to the number of consecutive keys ``{prefix}h0``,
        ``{prefix}h1``, ... found, minus one.  ``meta``: threshold, engine,
        filtration.
        """
        if maxdim is None:
            maxdim = -1
            while f"{prefix}h{maxdim + 1}" in arrays:
                maxdim += 1
            if maxdim < 0:
                raise InvalidInputError(f"no diagram arrays under key {prefix + 'h0'!r}")
        maxdim = check_maxdim(maxdim, hi=None)
        missing = [f"{prefix}h{d}" for d in range(maxdim + 1) if f"{prefix}h{d}" not in arrays]
        if missing:
            raise InvalidInputError(f"diagram arrays missing keys {missing}")
        return cls([arrays[f"{prefix}h{d}"] for d in range(maxdim + 1)], maxdim=maxdim, **meta)


def _rebuild(dgms, maxdim, threshold, engine, filtration) -> Diagram:
    return Diagram(dgms, maxdim=maxdim, threshold=threshold, engine=engine, filtration=filtration)


def _meta_from_dict(data: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if "maxdim" in data:
        meta["maxdim"] = data["maxdim"]
    if "threshold" in data:
        t = data["threshold"]
        meta["threshold"] = float("inf") if t in ("inf", None) else t
    for k in ("engine", "filtration"):
        if k in data:
            meta[k] = data[k]
    return meta


def summary_table(
    diagrams: Sequence[Diagram], *, dims: Sequence[int] | None = None
) -> dict[str, np.ndarray]:
    """Summary statistics of many diagrams at once (vectorized).

    Parameters
    ----------
    diagrams : sequence of Diagram, length N
    dims : sequence of int, optional
        Homology dimensions to summarise; default ``0..min(maxdim)`` over the
        diagrams.  Every diagram must hold every requested dimension.

    Returns
    -------
    dict of str to ndarray of shape (N, len(dims))
        Keys :data:`~attntopo.constants.SUMMARY_STATS`: ``n_bars`` and ``n_infinite`` (int64),
        ``total_persistence``, ``max_persistence`` and ``persistence_entropy``
        (float64, computed from finite lifetimes only; entropy in bits, 0 when
        no lifetime is positive).  See :meth:`Diagram.summary`.
    """
    diagrams = list(diagrams)
    for i, g in enumerate(diagrams):
        if not isinstance(g, Diagram):
            raise InvalidInputError(f"diagrams[{i}] is a {type(g).__name__}, expected a Diagram")
    N = len(diagrams)
    if dims is None:
        dims = range(min((g.maxdim for g in diagrams), default=-1) + 1)
    dims = [int(d) for d in dims]
    for d in dims:
        if d < 0 or any(d > g.maxdim for g in diagrams):
            raise InvalidInputError(
                f"homology dimension {d} is not held by every diagram "
                f"(smallest maxdim: {min((g.maxdim for g in diagrams), default=0)})"
            )
    out = {
        "n_bars": np.zeros((N, len(dims)), dtype=np.int64),
        "n_infinite": np.zeros((N, len(dims)), dtype=np.int64),
        "total_persistence": np.zeros((N, len(dims))),
        "max_persistence": np.zeros((N, len(dims))),
        "persistence_entropy": np.zeros((N, len(dims))),
    }
    if N == 0:
        return out
    for j, d in enumerate(dims):
        arrs = [g._dgms[d] for g in diagrams]
        sizes = np.array([a.shape[0] for a in arrs])
        pts = np.concatenate(arrs, axis=0) if sizes.sum() else np.empty((0, 2))
        owner = np.repeat(np.arange(N), sizes)
        fin = np.isfinite(pts[:, 1])
        out["n_bars"][:, j] = sizes
        out["n_infinite"][:, j] = np.bincount(owner[~fin], minlength=N)
        life = pts[fin, 1] - pts[fin, 0]
        own = owner[fin]
        total = np.bincount(own, weights=life, minlength=N)
        out["total_persistence"][:, j] = total
        mx = np.zeros(N)
        if life.size:
            np.maximum.at(mx, own, life)
        out["max_persistence"][:, j] = mx
        out["persistence_entropy"][:, j] = lifetime_entropy(life, own, N, total=total)
    return out


def lifetime_entropy(
    lifetimes: np.ndarray,
    owner: np.ndarray,
    n: int,
    base: float = 2.0,
    total: np.ndarray | None = None,
) -> np.ndarray:
    """Persistence entropy of n groups of finite lifetimes at once (one ``bincount``).

    Parameters
    ----------
    lifetimes : ndarray of shape (k,), float64
        Finite lifetimes (death - birth >= 0) of the bars of all groups.
    owner : ndarray of shape (k,), int
        The group (0..n-1) of each lifetime.
    n : int
        Number of groups.
    base : float
        Logarithm base: 2 (bits, the :func:`summary_table` unit) or ``numpy.e`` (nats).
    total : ndarray of shape (n,), optional
        Each group's sum of lifetimes, when the caller has it already.

    Returns
    -------
    ndarray of shape (n,), float64
        ``-Σ p log p`` over each group's positive lifetimes with ``p = lifetime / Σ lifetime``;
        0 for a group without a positive lifetime, never ``-0.0``.
    """
    if total is None:
        total = np.bincount(owner, weights=lifetimes, minlength=n)
    pos = lifetimes > 0
    p = lifetimes[pos] / total[owner[pos]]
    # scipy's entr(p) = -p ln p, 0 at p = 0: a lifetime far below the total can divide to 0
    # (5e-324 / 2), where -p * log(p) gave 0 * inf = nan
    out = np.bincount(owner[pos], weights=entr(p) / math.log(base), minlength=n).astype(np.float64)
    out += 0.0  # -0.0 from a single bar (p == 1) reads badly
    return np.maximum(out, 0.0, out=out)
