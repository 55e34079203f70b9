"""Many diagrams in two arrays per homology dimension (how results store diagram grids).

A grid of diagrams — one per head ``(L, H)``, per time slice ``(S,)``, per context and head
``(C, L, H)``, or a single diagram ``()`` — is stored as, for every dimension ``d``:

* ``{prefix}counts_h{d}``: int64 array of the grid's shape, the number of points of each
  diagram in ``H_d``;
* ``{prefix}points_h{d}``: float64 array of shape ``(sum of counts, 2)``, the diagrams'
  ``(birth, death)`` points one after the other in C order of the grid (``inf`` kept).

The diagrams' common settings (``maxdim``, ``threshold``, ``engine``, ``filtration``) are
not in the arrays: the result that holds the grid stores them with its own metadata and
passes them back to :func:`unpack_diagrams`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ResultFormatError
from .diagram import Diagram

__all__ = ["pack_diagrams", "unpack_diagrams"]


def _flatten(grid: Any) -> tuple[list[Diagram], tuple[int, ...]]:
    """The diagrams of a (rectangular) nested list in C order, and the grid's shape."""
    if isinstance(grid, Diagram):
        return [grid], ()
    if not isinstance(grid, (list, tuple)):
        raise TypeError(
            f"a grid of diagrams is a Diagram or nested lists of them, got {type(grid).__name__}"
        )
    parts = [_flatten(g) for g in grid]
    inner = {shape for _, shape in parts}
    if len(inner) > 1:
        raise ValueError(f"the grid of diagrams is not rectangular: rows of shapes {sorted(inner)}")
    sub = inner.pop() if inner else ()
    return [d for flat, _ in parts for d in flat], (len(grid), *sub)


def pack_diagrams(
    diagrams: Diagram | Sequence[Any], *, prefix: str = "dgm_", maxdim: int | None = None
) -> dict[str, np.ndarray]:
    """Arrays that store a grid of diagrams (see the module docstring).

    Parameters
    ----------
    diagrams : Diagram, or nested lists of Diagram
        A single diagram or a rectangular grid of any depth.
    prefix : str
        Key prefix of the arrays.
    maxdim : int, optional
        Dimensions ``0..maxdim`` are stored (default: the diagrams' common maxdim; required
        for an empty grid).

    Returns
    -------
    dict of str to ndarray
        ``{prefix}counts_h{d}`` (int64, the grid's shape) and ``{prefix}points_h{d}``
        (float64, shape (k, 2)) for ``d = 0..maxdim``.
    """
    flat, shape = _flatten(diagrams)
    if maxdim is None:
        if not flat:
            raise ValueError("maxdim is needed to pack an empty grid of diagrams")
        maxdim = min(d.maxdim for d in flat)
    out: dict[str, np.ndarray] = {}
    for d in range(int(maxdim) + 1):
        pts = [np.asarray(g[d], dtype=np.float64).reshape(-1, 2) for g in flat]
        out[f"{prefix}counts_h{d}"] = np.array([len(p) for p in pts], dtype=np.int64).reshape(shape)
        out[f"{prefix}points_h{d}"] = np.concatenate(pts, axis=0) if pts else np.zeros((0, 2))
    return out


def _nest(flat: list[Diagram], shape: tuple[int, ...]) -> Any:
    if not shape:
        return flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[k * step : (k + 1) * step], shape[1:]) for k in range(shape[0])]


def unpack_diagrams(
    arrays: Mapping[str, Any],
    *,
    prefix: str = "dgm_",
    maxdim: int,
    shape: tuple[int, ...] | None = None,
    threshold: float = math.inf,
    engine: str = "giotto",
    filtration: str = "vietoris_rips",
) -> Any:
    """Inverse of :func:`pack_diagrams`: the grid as nested lists (a Diagram for shape ``()``).

    Parameters
    ----------
    arrays : mapping of str to ndarray
        Holds ``{prefix}counts_h{d}`` and ``{prefix}points_h{d}`` for ``d = 0..maxdim``.
    maxdim : int
    shape : tuple of int, optional
        Shape of the grid (default: the shape of the stored counts).  Counts stored flat are
        reshaped to it.
    threshold, engine, filtration
        Settings given to every :class:`Diagram`.

    Raises
    ------
    ResultFormatError
        Missing arrays, counts that are not non-negative integers of the grid's size, counts
        that do not add up to the number of points, points that are not numbers of shape
        ``(k, 2)``.
    """
    per_dim: list[list[np.ndarray]] = []
    for d in range(int(maxdim) + 1):
        ck, pk = f"{prefix}counts_h{d}", f"{prefix}points_h{d}"
        if ck not in arrays or pk not in arrays:
            raise ResultFormatError(f"diagram arrays {ck!r}/{pk!r} are missing")
        counts = np.asarray(arrays[ck])
        points = np.asarray(arrays[pk])
        if counts.dtype.kind not in "iu":
            raise ResultFormatError(f"{ck!r} must hold integers, got dtype {counts.dtype}")
        if shape is None:
            shape = counts.shape
        if counts.size != math.prod(shape):
            raise ResultFormatError(
                f"{ck!r} holds {counts.size} counts for a grid of shape {tuple(shape)}"
            )
        if counts.size and counts.min() < 0:
            raise ResultFormatError(f"{ck!r} holds negative counts")
        if points.dtype.kind not in "fiu" or (
            points.size and (points.ndim != 2 or points.shape[1] != 2)
        ):
            raise ResultFormatError(
                f"{pk!r} must be numbers of shape (k, 2), got "
                f"dtype {points.dtype} and shape {points.shape}"
            )
        points = points.reshape(-1, 2)
        bounds = np.concatenate([[0], np.cumsum(counts.ravel())])
        if bounds[-1] != points.shape[0]:
            raise ResultFormatError(
                f"{ck!r} counts {int(bounds[-1])} points but {pk!r} holds {points.shape[0]}"
            )
        per_dim.append([points[bounds[k] : bounds[k + 1]] for k in range(counts.size)])
    n = len(per_dim[0]) if per_dim else 0
    flat = [
        Diagram(
            tuple(per_dim[d][k] for d in range(int(maxdim) + 1)),
            maxdim=int(maxdim),
            threshold=threshold,
            engine=engine,
            filtration=filtration,
        )
        for k in range(n)
    ]
    return _nest(flat, tuple(shape or ()))
