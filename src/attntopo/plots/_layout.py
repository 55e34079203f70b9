"""Input checks and geometric layouts shared by the static and interactive figures.

Nothing here draws: these helpers turn a diagram or a distance matrix into what a
figure needs (points per dimension, the ∞ line, node coordinates, simplices at a scale).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .._mds import classical_mds
from ..errors import InvalidInputError
from ..topology import Diagram, validate_distance_matrix
from ..topology.complex import complex_at

__all__ = [
    "diagram_points",
    "diagram_limits",
    "check_labels",
    "display_labels",
    "check_highlight",
    "check_scale",
    "distance_matrix",
    "mds_layout",
    "threshold_complex",
    "suggest_scale",
    "suggest_scales",
]


def diagram_points(
    dgm: Any, dims: Sequence[int] | int | None = None
) -> list[tuple[int, np.ndarray]]:
    """``[(d, points of shape (k, 2)), ...]`` for the requested dimensions of a diagram.

    ``dgm`` is a :class:`~attntopo.topology.Diagram` or a ripser-style list of (k, 2) arrays.
    """
    if not isinstance(dgm, Diagram):
        try:
            dgm = Diagram(dgm)
        except InvalidInputError as e:
            raise InvalidInputError(
                f"expected a Diagram (or a list of (k, 2) arrays, one per dimension): {e}"
            ) from None
    maxdim = dgm.maxdim
    if dims is None:
        dims = range(maxdim + 1)
    elif isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        dims = [int(dims)]
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d <= maxdim:
            raise InvalidInputError(
                "dims must be homology dimensions in "
                f"0..{maxdim} (this diagram's maxdim), got {d!r}"
            )
        out.append((int(d), np.asarray(dgm[int(d)], dtype=np.float64)))
    return out


def diagram_limits(
    point_sets: Sequence[np.ndarray], threshold: float = math.inf
) -> tuple[float, float, float]:
    """``(lo, hi, inf_y)``: axis range of a diagram and the height of its ∞ line.

    The ∞ line sits 10 % of the data range above the largest finite value (or at a
    finite ``threshold`` where the filtration was cut, if that is higher).
    """
    finite = [
        v
        for pts in point_sets
        for v in (pts[:, 0].tolist() + pts[np.isfinite(pts[:, 1]), 1].tolist())
    ]
    lo = min([0.0] + finite)
    top = max(finite) if finite else 1.0
    if math.isfinite(threshold):
        top = max(top, float(threshold))
    if top <= lo:
        top = lo + 1.0
    inf_y = top + 0.1 * (top - lo)
    hi = inf_y + 0.05 * (top - lo)
    return lo, hi, inf_y


def distance_matrix(D: Any, name: str = "D") -> np.ndarray:
    """A validated (n, n) float64 distance matrix (square, finite, symmetric, zero diagonal)."""
    return validate_distance_matrix(D, name=name)


def check_labels(labels: Sequence[str] | None, n: int) -> list[str] | None:
    """Token labels as a list of str of length ``n`` (or None), raw tokenizer pieces made readable.

    Labels that are a tokenizer's raw pieces (``Attention.tokens``: ``"Ġthe"``, ``"Ċ"``,
    ``"##ing"``, ``"▁word"``) are shown as :attr:`Attention.labels` would show them
    (:func:`display_labels`); any other labels are drawn exactly as given.
    """
    if labels is None:
        return None
    if isinstance(labels, str):
        raise InvalidInputError(
            "labels must be a sequence of strings (one per token), not a string"
        )
    labels = [str(x) for x in labels]
    if len(labels) != n:
        raise InvalidInputError(
            f"got {len(labels)} labels for {n} tokens: give one label per token"
        )
    return display_labels(labels)


_RAW_MARKS = ("Ġ", "Ċ", "ĉ")


def display_labels(labels: Sequence[str]) -> list[str]:
    """What a figure writes for token labels: raw tokenizer pieces made readable.

    When some label carries a raw tokenizer marker — byte-level BPE's ``Ġ`` (space) or ``Ċ``
    (line break), WordPiece's ``##`` (continuation) or SentencePiece's ``▁`` (space) — the
    labels are taken to be raw tokens and are rewritten by the rules of
    :attr:`attntopo.Attention.labels` (:func:`attntopo.attention.token_labels` without a
    source text): byte-level pieces decoded, ``·`` for a leading space, ``↵`` for a line
    break, ``##`` dropped, repeats numbered (``the``, ``the#2``).  Labels without such markers
    (``Attention.labels``, your own) are returned unchanged.

    Parameters
    ----------
    labels : sequence of str, length n

    Returns
    -------
    list of str, length n
    """
    labels = [str(x) for x in labels]
    raw = any(
        any(m in s for m in _RAW_MARKS) or (s.startswith("##") and len(s) > 2) or s.startswith("▁")
        for s in labels
    )
    if not raw:
        return labels
    from ..attention import token_labels

    pieces = [s[2:] if s.startswith("##") and len(s) > 2 else s for s in labels]
    n = len(pieces)
    return token_labels(pieces, [(0, 0)] * n, [False] * n, text="")[0]


def check_highlight(highlight: Any, n: int) -> np.ndarray:
    """Boolean mask of shape (n,) from token positions (ints, negatives ok) or a mask."""
    mask = np.zeros(n, dtype=bool)
    if highlight is None:
        return mask
    h = np.asarray(highlight)
    if h.dtype == bool:
        if h.shape != (n,):
            raise InvalidInputError(f"a highlight mask must have shape ({n},), got {h.shape}")
        return h.copy()
    h = np.atleast_1d(h)
    if h.size and not np.issubdtype(h.dtype, np.integer):
        raise InvalidInputError("highlight must be token positions (ints) or a boolean mask")
    for i in h.tolist():
        if not -n <= i < n:
            raise InvalidInputError(f"highlight token {i} is out of range: valid are 0..{n - 1}")
        mask[i % n] = True
    return mask


def check_scale(scale: Any, name: str = "scale") -> float:
    """A positive finite filtration scale."""
    try:
        e = float(scale)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a positive number, got {scale!r}") from None
    if not math.isfinite(e) or e <= 0:
        raise InvalidInputError(f"{name} must be a positive finite number, got {scale!r}")
    return e


def mds_layout(D: np.ndarray, *, dim: int = 2) -> np.ndarray:
    """Classical (Torgerson) multidimensional scaling of a distance matrix, for drawing.

    The coordinates of :func:`attntopo._mds.classical_mds` (top ``dim`` eigenvectors of
    ``-J D² J / 2`` scaled by the square roots of their non-negative eigenvalues, each axis
    oriented so that its largest-magnitude entry is positive); points that all coincide
    (every distance 0) are spread on a small circle so that they stay visible.

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Distance matrix.
    dim : int
        Output dimension.

    Returns
    -------
    ndarray of shape (n, dim)
    """
    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    if n == 0:
        return np.zeros((0, dim))
    X, _ = classical_mds(D, dim)
    # n tokens at the same place (all distances 0) would stack: spread them on a small circle
    if n > 1 and not np.any(X):
        t = 2 * np.pi * np.arange(n) / n
        X = np.stack([np.cos(t), np.sin(t)] + [np.zeros(n)] * (dim - 2), axis=1)[:, :dim]
    return X


def threshold_complex(D: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Edges and triangles of the Vietoris–Rips complex at ``scale``, as arrays to draw.

    The simplices of :func:`attntopo.topology.complex_at` (which validates ``D`` and bounds
    the number of simplices).

    Returns
    -------
    edges : int ndarray of shape (m, 2)
        Pairs ``i < j`` with ``D[i, j] <= scale``.
    triangles : int ndarray of shape (t, 3)
        Triples ``i < j < k`` whose three distances are all ``<= scale``.
    """
    cx = complex_at(D, scale, max_simplex_dim=2)
    return cx.simplices(1), cx.simplices(2)


def suggest_scale(dgm: Diagram | None, D: np.ndarray) -> float:
    """A scale at which the threshold graph is informative.

    The middle of the most persistent finite H1 bar (its loop is then drawn, not yet
    filled) or, without H1 bars, the median H0 death (half the tokens have merged).
    """
    if dgm is not None and dgm.maxdim >= 1 and len(dgm.finite(1)):
        f = dgm.finite(1)
        b, d = f[int(np.argmax(f[:, 1] - f[:, 0]))]
        return float((b + d) / 2)
    if dgm is not None and len(dgm.finite(0)):
        deaths = dgm.finite(0)[:, 1]
        pos = deaths[deaths > 0]
        if pos.size:
            return float(np.median(pos))
    upper = np.asarray(D)[np.triu_indices(np.asarray(D).shape[0], 1)]
    upper = upper[upper > 0]
    return float(np.median(upper)) if upper.size else 1.0


def suggest_scales(D: np.ndarray, *, n_scales: int = 16) -> np.ndarray:
    """``n_scales`` increasing scales at quantiles of the pairwise distances (for sliders)."""
    D = np.asarray(D)
    upper = D[np.triu_indices(D.shape[0], 1)]
    upper = upper[upper > 0]
    if upper.size == 0:
        return np.array([1.0])
    qs = np.linspace(0.0, 1.0, int(n_scales) + 1)[1:]
    scales = np.unique(np.quantile(upper, qs))
    return scales[scales > 0]
