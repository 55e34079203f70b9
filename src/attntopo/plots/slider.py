"""The one ε slider's data: the encoding every threshold-graph slider reads.

Three pages show a Vietoris–Rips complex under a slider over scales: the one-text threshold
graph of the reports (:func:`attntopo.plots.iplot_threshold_graph`), the two-text graphs
(:func:`attntopo.plots.iplot_compare_graphs`) and the explorer (``attntopo serve``).  All three
carry the same record, built here, and all three are driven by the same script
(``assets/scale_slider.js``: the decoder, the complex at a step and the slider widget).

The record of one matrix (:func:`graph_slider`)::

    {"n": n, "scales": [ε_0 < ε_1 < …], "start": k0,
     "steps": base64, "dtype": "u1" | "u2",
     "max_edges": …, "max_triangles": …}

``steps`` holds, per token pair ``i < j`` (NumPy's ``triu_indices`` order), the index of the
first slider step whose ε reaches the pair's distance (``D[i, j] <= ε``, complex_at's rule,
in float64; ``len(scales)``: never), as uint8 up to 255 steps and little-endian uint16 up to
65535.  At step ``k`` an edge is a pair with step ``<= k`` and a triangle is three edges, so
the page's counts equal :func:`attntopo.complex_at` at ``scales[k]``, ties included.  The
record of two texts (:func:`compare_slider`) holds one such ``panels`` entry per text (plus
``rep``: the shared tokens' positions in that text) and ``shared``: per pair of shared tokens
the later of its two texts' steps (an edge in both texts).
"""

from __future__ import annotations

import base64
from typing import Any, Iterable

import numpy as np

from ..errors import InvalidInputError

__all__ = [
    "MAX_DRAWN_EDGES",
    "MAX_DRAWN_TRIANGLES",
    "MAX_SCALES",
    "slider_scales",
    "check_scales",
    "step_codes",
    "encode_steps",
    "decode_steps",
    "graph_slider",
    "compare_slider",
]

# Drawing caps of every threshold graph (the counts shown stay exact beyond them).
MAX_DRAWN_EDGES = 20_000
MAX_DRAWN_TRIANGLES = 10_000
MAX_SCALES = 65535  # slider steps: the step of a pair is stored as uint16 at most


def slider_scales(
    matrices: Iterable[np.ndarray], n_scales: int, *, include: Iterable[float] = ()
) -> np.ndarray:
    """Increasing slider scales: ``n_scales`` quantiles of the positive pairwise distances of
    all ``matrices`` together, plus the values of ``include`` exactly (e.g. the suggested ε).

    Returns
    -------
    ndarray of shape (k,), float64
        Unique, increasing, ``1 <= k <= MAX_SCALES``.
    """
    vals = [np.asarray(D, dtype=np.float64)[np.triu_indices(np.shape(D)[0], 1)] for D in matrices]
    v = np.concatenate(vals) if vals else np.zeros(0)
    v = v[v > 0]
    qs = np.linspace(0.0, 1.0, int(n_scales) + 1)[1:]
    scales = np.quantile(v, qs) if v.size else np.array([1.0])
    return check_scales(np.r_[scales, np.asarray(list(include), dtype=np.float64)])


def check_scales(scales: np.ndarray) -> np.ndarray:
    """``scales`` as an increasing float64 array, refused when empty or over :data:`MAX_SCALES`."""
    scales = np.unique(np.asarray(scales, dtype=np.float64))
    if not scales.size:
        raise InvalidInputError("scales must hold at least one positive number")
    if scales.size > MAX_SCALES:
        raise InvalidInputError(f"scales must hold at most {MAX_SCALES} values, got {scales.size}")
    return scales


def step_codes(D: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Per pair ``i < j`` (``np.triu_indices`` order) the first slider step ``k`` with
    ``D[i, j] <= scales[k]`` (``len(scales)``: never), int64.

    ``D`` is symmetrized the way :func:`attntopo.complex_at` does (the mean of ``D`` and
    ``D.T``; exact for a symmetric matrix), so the edges at step ``k`` are exactly
    ``complex_at(D, scales[k])``'s.
    """
    D = np.asarray(D, dtype=np.float64)
    upper = ((D + D.T) / 2.0)[np.triu_indices(D.shape[0], 1)]
    return np.searchsorted(scales, upper, side="left").astype(
        np.int64
    )  # first k with upper <= scales[k]


def encode_steps(codes: np.ndarray, n_scales: int) -> dict:
    """``{"steps": base64, "dtype": "u1" | "u2"}``: the codes as the page's script decodes them."""
    arr, dtype = (codes.astype(np.uint8), "u1") if n_scales <= 255 else (codes.astype("<u2"), "u2")
    return {"steps": base64.b64encode(arr.tobytes()).decode("ascii"), "dtype": dtype}


def decode_steps(part: dict, n: int) -> np.ndarray:
    """The inverse of :func:`encode_steps`: an (n, n) int64 matrix of each pair's step (both
    triangles; ``-1`` on the diagonal).  For tests and for Python readers of a page's data."""
    raw = base64.b64decode(part["steps"])
    codes = np.frombuffer(raw, dtype=np.uint8 if part["dtype"] == "u1" else "<u2").astype(np.int64)
    S = np.full((n, n), -1, dtype=np.int64)
    S[np.triu_indices(n, 1)] = codes
    S.T[np.triu_indices(n, 1)] = codes
    return S


def _caps() -> dict:
    return {"max_edges": MAX_DRAWN_EDGES, "max_triangles": MAX_DRAWN_TRIANGLES}


def _check_start(start: int, scales: np.ndarray) -> int:
    start = int(start)
    if not 0 <= start < scales.size:
        raise InvalidInputError(f"start must be in 0..{scales.size - 1}, got {start}")
    return start


def graph_slider(D: np.ndarray, scales: np.ndarray, start: int) -> dict:
    """The slider record of one distance matrix (see the module docs)."""
    scales = check_scales(scales)
    n = int(np.shape(D)[0])
    return {
        "n": n,
        "scales": scales.tolist(),
        "start": _check_start(start, scales),
        **encode_steps(step_codes(D, scales), scales.size),
        **_caps(),
    }


def compare_slider(c: Any, i: int, j: int, scales: np.ndarray, start: int) -> dict:
    """The slider record of head ``(i, j)`` (positions) of a Comparison ``c``: one panel per text
    and the shared pairs (:meth:`Comparison.shared_simplices`' rule ``SA <= ε and SB <= ε``)."""
    scales = check_scales(scales)
    panels = []
    for side, an in (("a", c.a), ("b", c.b)):
        D = an.distances[i, j]
        panels.append(
            {
                "n": int(D.shape[0]),
                "rep": [int(getattr(t, side)) for t in c.shared_tokens],
                **encode_steps(step_codes(D, scales), scales.size),
            }
        )
    m = len(c.shared_tokens)
    up = np.triu_indices(m, 1)
    both = np.maximum(
        *(
            np.searchsorted(scales, E[i, j][up], side="left")
            for E in (c.edge_birth_a, c.edge_birth_b)
        )
    )
    return {
        "scales": scales.tolist(),
        "labels": [f"{e:.3g}" for e in scales],
        "start": _check_start(start, scales),
        "panels": panels,
        "shared": {"m": m, **encode_steps(np.asarray(both, dtype=np.int64), scales.size)},
        **_caps(),
    }
