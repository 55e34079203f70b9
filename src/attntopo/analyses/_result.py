"""The protocol every analysis result follows, written once.

A result class (a dataclass) derives from :class:`Result` and supplies

* ``kind``: the name written into a saved result (``attntopo.json``'s ``"kind"``), the key of
  :data:`attntopo.analyses.KINDS`;
* ``_payload() -> (meta, arrays)``: JSON metadata and named arrays;
  ``_from_payload(meta, arrays)``: the inverse (checking what it reads: :func:`read_array`);
* ``summary()``: a table as :class:`Columns` (names → equal-length 1-D arrays);
* ``to_dict()``: plain JSON-safe data, what the command line's ``--json`` prints of it.

and gets from :class:`Result`: :meth:`~Result.save` (an atomic folder, ``attntopo.json`` +
``arrays.npz``, read back by :func:`attntopo.load_result`), equality over its fields
(arrays compared exactly, NaN equal to NaN; the fields named in ``_eq_ignore`` — provenance —
left out), :meth:`~Result.to_pandas` and ``_repr_html_`` (supplied by the rendering layer).

A result inside another (the two analyses of a comparison, the head types of a head space)
is stored under its field name: :func:`nest` puts its metadata at ``meta[name]`` and its
arrays under ``"{name}__"``; :func:`unnest` reads it back.  Grids of diagrams are stored with
:func:`attntopo.topology.pack_diagrams`.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence, TypeVar

import numpy as np

from ..errors import MissingDependencyError, ResultFormatError
from ..io import save_payload
from ._html_hook import render_html, set_html_renderer

__all__ = [
    "Result",
    "Columns",
    "same",
    "nest",
    "unnest",
    "read_array",
    "set_html_renderer",
]

R = TypeVar("R", bound="Result")


# ------------------------------------------------------------------------ tables
class Columns(dict):
    """A table as columns: column name → 1-D ndarray, all of one length (``summary()``).

    A plain ``dict`` for every purpose (``pandas.DataFrame(cols)``, ``json``, ``cols["layer"]``).
    """

    def __init__(self, columns: Mapping[str, Any]) -> None:
        cols = {str(k): np.asarray(v) for k, v in columns.items()}
        lengths = {k: (v.shape[0] if v.ndim == 1 else None) for k, v in cols.items()}
        bad = [k for k, n in lengths.items() if n is None]
        if bad:
            raise ValueError(f"summary columns must be 1-D arrays; {bad} are not")
        if len(set(lengths.values())) > 1:
            raise ValueError(f"summary columns must have one length, got {lengths}")
        super().__init__(cols)

    @property
    def n_rows(self) -> int:
        """Number of rows (0 for a table without columns)."""
        return next(iter(self.values())).shape[0] if self else 0

    def rows(self) -> list[dict]:
        """The table as one dict per row (Python scalars)."""
        keys = list(self)
        return [{k: self[k][r].item() for k in keys} for r in range(self.n_rows)]

    def __reduce__(self):  # pickles as a plain dict of columns
        return (dict, (dict(self),))


# ---------------------------------------------------------------------- equality
def _plain_dataclass(x: Any) -> bool:
    """A dataclass instance that compares by identity (``eq=False``, no ``__eq__`` of its own)."""
    return (
        dataclasses.is_dataclass(x) and not isinstance(x, type) and type(x).__eq__ is object.__eq__
    )


def same(a: Any, b: Any) -> bool:
    """Exact equality of two field values.

    Arrays: same shape and values (NaN equals NaN in float arrays); mappings: same keys and
    values; lists and tuples: same length and items (a list equals a tuple with the same
    items); floats: NaN equals NaN; dataclasses without an equality of their own: field by
    field; everything else: ``==``.
    """
    if a is b:
        return True
    if a is None or b is None:
        return False
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "fc" and y.dtype.kind in "fc":
            return bool(np.array_equal(x, y, equal_nan=True))
        return bool(np.array_equal(x, y))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if _plain_dataclass(a):
        return type(a) is type(b) and all(
            same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    return bool(a == b)


# ------------------------------------------------------------------------ result
class Result:
    """Base of every analysis result (see the module docstring)."""

    #: Name of the result kind in saved results.
    kind: ClassVar[str]
    #: Fields left out of equality (provenance: when and with which versions it was made).
    _eq_ignore: ClassVar[tuple[str, ...]] = ("provenance",)
    #: Fields compared by equality; ``None``: every dataclass field not in ``_eq_ignore``.
    _eq_fields: ClassVar[tuple[str, ...] | None] = None

    # ------------------------------------------------------------- to implement
    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        """``(meta, arrays)``: JSON-able metadata (without ``kind``) and named arrays."""
        raise NotImplementedError

    @classmethod
    def _from_payload(cls: type[R], meta: dict, arrays: Mapping[str, np.ndarray]) -> R:
        """The result from :meth:`_payload`'s output (as read back from a folder)."""
        raise NotImplementedError

    def summary(self) -> Columns:
        """The result as a table: column name → 1-D ndarray, all of one length."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """Plain, JSON-safe data (what ``--json`` prints of this result)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ storage
    def save(
        self,
        path: str | Path,
        *,
        overwrite: bool = True,
        compress: bool = False,
        extra_files: dict[str, bytes] | None = None,
    ) -> Path:
        """Save into a folder (``attntopo.json`` + ``arrays.npz``), atomically.

        Parameters
        ----------
        path : path
            Target folder; a result already there is replaced (if ``overwrite``), a non-empty
            folder that is not a result is refused.
        overwrite : bool, default True
        compress : bool, default False
            Compress ``arrays.npz``.
        extra_files : dict of str to bytes, optional
            Further files (``{relative path: bytes}``, e.g. figures) written into the same
            folder in the same atomic step.

        Returns
        -------
        Path
            The folder.  :func:`attntopo.load_result` reads back an equal result.
        """
        meta, arrays = self._payload()
        return save_payload(
            path,
            {"kind": self.kind, **meta},
            arrays,
            overwrite=overwrite,
            compress=compress,
            extra_files=extra_files,
        )

    # ----------------------------------------------------------------- equality
    @classmethod
    def _compared_fields(cls) -> tuple[str, ...]:
        names = cls._eq_fields
        if names is None:
            names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        return tuple(n for n in names if n not in cls._eq_ignore)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(same(getattr(self, n), getattr(other, n)) for n in self._compared_fields())

    __hash__ = None  # type: ignore[assignment]

    # ------------------------------------------------------------------- tables
    def to_pandas(self):
        """The :meth:`summary` table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingDependencyError(
                f"{type(self).__name__}.to_pandas needs pandas: pip install pandas"
            ) from None
        return pd.DataFrame(dict(self.summary()))

    def _repr_html_(self) -> str | None:
        return render_html(self)


# ------------------------------------------------------------- nested results
def nest(meta: dict, arrays: dict[str, np.ndarray], name: str, child: Result | None) -> None:
    """Store ``child`` (a result or None) in a parent's payload under ``name``.

    Its metadata (with its ``kind``) becomes ``meta[name]`` and its arrays are stored as
    ``arrays[f"{name}__{key}"]``.
    """
    if child is None:
        meta[name] = None
        return
    m, a = child._payload()
    meta[name] = {"kind": child.kind, **m}
    arrays.update({f"{name}__{k}": v for k, v in a.items()})


def unnest(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray], name: str, cls: type[R]
) -> R | None:
    """Inverse of :func:`nest` (None when nothing was stored under ``name``)."""
    m = meta.get(name)
    if not m:
        return None
    if not isinstance(m, Mapping):
        raise ResultFormatError(f"the metadata of {name!r} is not an object")
    prefix = f"{name}__"
    sub = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
    return cls._from_payload(dict(m), sub)


# ---------------------------------------------------------------------- loading
_KIND_NAMES = {"f": "floats", "i": "integers", "b": "booleans", "U": "strings"}


def read_array(
    arrays: Mapping[str, Any],
    name: str,
    *,
    kind: str = "f",
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    finite: bool = False,
    nonneg: bool = False,
    optional: bool = False,
) -> np.ndarray | None:
    """An array of a saved result, checked; :class:`ResultFormatError` with one line if not.

    Parameters
    ----------
    name : str
        Key in ``arrays``.
    kind : {"f", "i", "b", "U"}
        Floats (integers accepted, returned as float64), integers (int64), booleans or
        strings.
    ndim : int, optional
        Required number of axes.
    shape : sequence of int or None, optional
        Required shape (``None`` entries: any length).
    finite : bool
        Every value must be finite (floats).
    nonneg : bool
        Every value must be ``>= 0``.
    optional : bool
        Return None when the key is absent instead of raising.
    """
    if name not in arrays:
        if optional:
            return None
        raise ResultFormatError(f"array {name!r} is missing")
    a = np.asarray(arrays[name])
    allowed = {"f": "fiu", "i": "iu", "b": "b", "U": "U"}[kind]
    if a.dtype.kind not in allowed and not (kind == "b" and a.dtype.kind in "iu" and a.size == 0):
        raise ResultFormatError(
            f"array {name!r} must hold {_KIND_NAMES[kind]}, got dtype {a.dtype}"
        )
    if ndim is not None and a.ndim != ndim:
        raise ResultFormatError(f"array {name!r} must have {ndim} axes, got shape {a.shape}")
    if shape is not None and (
        a.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, a.shape))
    ):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ResultFormatError(f"array {name!r} must have shape {want}, got {a.shape}")
    if kind == "f":
        a = a.astype(np.float64, copy=False)
        if finite and not np.all(np.isfinite(a)):
            raise ResultFormatError(f"array {name!r} holds non-finite values")
    elif kind == "i":
        a = a.astype(np.int64, copy=False)
    elif kind == "b":
        a = a.astype(bool, copy=False)
    if nonneg and a.size and np.nanmin(a) < 0:
        raise ResultFormatError(f"array {name!r} holds negative values")
    return a
