"""Token labels that do not collide, and points that do not hide each other.

Dense clusters of tokens (a sink head puts most rows of a text at almost the same place)
make labels written at a fixed offset pile up into an unreadable block, and tokens at the
same place hide the edge between them.  Two remedies, both deterministic:

* :class:`TokenLabels` — an artist added to the axes that, every time the figure is drawn
  (on screen, to PNG, SVG or PDF, at any size and dpi), measures every label with the
  renderer and places it greedily next to its point: on the first free spot of a spiral of
  candidate offsets that overlaps no label already placed, no point marker and stays inside
  the axes.  A label pushed away from its point gets a thin leader line back to it.
* :func:`separate_points` — nudges points closer than a minimum distance apart (in the
  layout's own units) so that every marker and every short edge between them is visible.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.text import Annotation

__all__ = ["TokenLabels", "separate_points", "add_token_labels"]

#: Candidate directions, tried in this order at each radius (upper right first, as before).
_ANGLES = np.deg2rad(
    [45, 0, 90, 135, 180, 315, 270, 225, 22.5, 67.5, 112.5, 157.5, 202.5, 247.5, 292.5, 337.5]
)
#: Radii of the candidate spots, in points from the
#: point's centre less 2 (plus the marker's radius).
_RADII = (3.0, 8.0, 14.0, 21.0, 29.0, 38.0, 48.0, 60.0, 74.0)
_COS, _SIN = np.round(np.cos(_ANGLES), 12), np.round(np.sin(_ANGLES), 12)
_LEADER_COLOR = "#9A9A9A"


def _overlaps(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Total overlap area of each row of ``boxes`` (c, 4) with the rows of ``others`` (k, 4)."""
    if others.size == 0:
        return np.zeros(len(boxes))
    w = np.minimum(boxes[:, None, 2], others[None, :, 2]) - np.maximum(
        boxes[:, None, 0], others[None, :, 0]
    )
    h = np.minimum(boxes[:, None, 3], others[None, :, 3]) - np.maximum(
        boxes[:, None, 1], others[None, :, 1]
    )
    return (np.clip(w, 0, None) * np.clip(h, 0, None)).sum(axis=1)


class TokenLabels(Artist):
    """Labels of some points of an axes, placed at draw time so that they do not overlap.

    Parameters
    ----------
    ax : Axes
        The axes the labels and points live in.
    xy : ndarray of shape (n, 2)
        Every point of the axes in data coordinates (all are obstacles for the labels).
    labelled : sequence of int
        The points that get a label, in order of priority (earlier ones get the closer spots).
    annotations : sequence of Annotation
        One per labelled point, already added to ``ax`` (``xy`` at the point,
        ``textcoords="offset points"``); their offsets are set on every draw.
    marker_radius : float or ndarray of shape (n,)
        Radius of the points' markers in points (the area labels keep clear of).
    """

    def __init__(
        self,
        ax: Axes,
        xy: np.ndarray,
        labelled: Sequence[int],
        annotations: Sequence[Annotation],
        marker_radius: float | np.ndarray = 3.5,
    ) -> None:
        super().__init__()
        self.axes = ax
        self.set_figure(ax.figure)
        self.set_zorder(2.9)  # after edges, before the points: leader lines lie under the markers
        self.set_in_layout(False)
        self.xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        self.labelled = [int(i) for i in labelled]
        self.annotations = list(annotations)
        self.marker_radius = np.broadcast_to(
            np.asarray(marker_radius, dtype=np.float64), (len(self.xy),)
        ).copy()
        self.leaders = LineCollection([], colors=_LEADER_COLOR, linewidths=0.5, zorder=2.9)
        self.leaders.set_figure(ax.figure)
        #: After a draw: the offsets (points) given to each label and whether it has a leader line.
        self.offsets = np.zeros((len(self.labelled), 2))
        self.has_leader = np.zeros(len(self.labelled), dtype=bool)

    def place(self, renderer) -> None:
        """Choose every label's spot for the axes' current size (called by :meth:`draw`)."""
        ax = self.axes
        pt = renderer.points_to_pixels(1.0)
        P = ax.transData.transform(self.xy)
        r = self.marker_radius * pt
        points = np.column_stack([P[:, 0] - r, P[:, 1] - r, P[:, 0] + r, P[:, 1] + r])
        frame = ax.bbox.extents
        placed = np.zeros((0, 4))
        segments = []
        for k, (i, ann) in enumerate(zip(self.labelled, self.annotations)):
            ann.set_horizontalalignment("left")
            ann.set_verticalalignment("bottom")
            ann.xyann = (0.0, 0.0)
            ext = ann.get_window_extent(renderer)
            w, h = ext.width, ext.height
            # where the text's box sits against its anchor at offset (0, 0), left/bottom aligned
            dx0, dy0 = ext.x0 - P[i, 0], ext.y0 - P[i, 1]
            others = np.delete(points, i, axis=0)
            best, best_cost = None, math.inf
            for radius in _RADII:
                rad = (
                    r[i] + (radius - 2.0) * pt
                )  # the first spot just clear of the point's own marker
                x0 = P[i, 0] + rad * _COS - w * (0.5 - 0.5 * _COS)
                y0 = P[i, 1] + rad * _SIN - h * (0.5 - 0.5 * _SIN)
                boxes = np.column_stack([x0, y0, x0 + w, y0 + h])
                inside = np.clip(
                    np.minimum(boxes[:, 2], frame[2]) - np.maximum(boxes[:, 0], frame[0]), 0, None
                ) * np.clip(
                    np.minimum(boxes[:, 3], frame[3]) - np.maximum(boxes[:, 1], frame[1]), 0, None
                )
                cost = (
                    50.0 * _overlaps(boxes, placed)
                    + 8.0 * _overlaps(boxes, others)
                    + 20.0 * (w * h - inside)
                )
                free = np.flatnonzero(cost <= 1e-9 * w * h)
                if free.size:  # the first free direction at the nearest radius
                    best = (boxes[free[0]], rad)
                    break
                cost = cost + 0.5 * rad * (w + h)  # at equal clutter, the nearer spot
                c = int(np.argmin(cost))
                if cost[c] < best_cost:
                    best, best_cost = (boxes[c], rad), float(cost[c])
            box, rad = best
            placed = np.vstack([placed, box])
            self.offsets[k] = ((box[0] - P[i, 0] - dx0) / pt, (box[1] - P[i, 1] - dy0) / pt)
            ann.xyann = tuple(self.offsets[k])
            self.has_leader[k] = rad > r[i] + (_RADII[1] - 3.0) * pt
            if self.has_leader[k]:
                # from the marker's edge to the nearest point of the label's box, in data units
                q = np.array([np.clip(P[i, 0], box[0], box[2]), np.clip(P[i, 1], box[1], box[3])])
                v = q - P[i]
                d = float(np.hypot(*v))
                if d > r[i] + 1.0 * pt:
                    start = P[i] + v / d * r[i]
                    segments.append(ax.transData.inverted().transform(np.vstack([start, q])))
        self.leaders.set_segments(segments)

    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        self.place(renderer)
        self.leaders.set_transform(self.axes.transData)
        self.leaders.draw(renderer)
        self.stale = False


def add_token_labels(
    ax: Axes,
    xy: np.ndarray,
    labelled: Sequence[int],
    texts: Sequence[str],
    *,
    fontsize: Sequence[float],
    colors: Sequence[str],
    weights: Sequence[str],
    marker_radius: float | np.ndarray = 3.5,
    zorder: float = 6.0,
) -> TokenLabels:
    """Write ``texts[k]`` next to point ``labelled[k]``
    without collisions (see :class:`TokenLabels`).

    Returns the :class:`TokenLabels` artist (added to ``ax``); its annotations are in ``ax.texts``.
    """
    xy = np.asarray(xy, dtype=np.float64)
    anns = [
        ax.annotate(
            t,
            xy[i],
            xytext=(3, 3),
            textcoords="offset points",
            fontsize=fs,
            color=c,
            fontweight=wt,
            zorder=zorder,
            annotation_clip=False,
        )
        for i, t, fs, c, wt in zip(labelled, texts, fontsize, colors, weights)
    ]
    layer = TokenLabels(ax, xy, labelled, anns, marker_radius)
    ax.add_artist(layer)
    return layer


def separate_points(
    X: np.ndarray, min_dist: float, *, max_iter: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """Move points closer than ``min_dist`` apart, each as little as it takes.

    Pairs closer than ``min_dist`` are pushed apart along the line through them (points at
    the same place along deterministic golden-angle directions) until no pair is closer
    than ``0.98 · min_dist`` or ``max_iter`` rounds have passed.  Points with room around
    them do not move.

    Parameters
    ----------
    X : ndarray of shape (n, 2)
    min_dist : float
        Smallest distance wanted between two points (same unit as ``X``), positive.
    max_iter : int

    Returns
    -------
    X : ndarray of shape (n, 2)
        The moved points (a copy).
    moved : ndarray of shape (n,), bool
        The points that were moved.
    """
    X0 = np.asarray(X, dtype=np.float64).reshape(-1, 2)
    X = X0.copy()
    n = X.shape[0]
    if n < 2 or not min_dist > 0:
        return X, np.zeros(n, dtype=bool)
    golden = math.pi * (3.0 - math.sqrt(5.0))
    u = np.column_stack([np.cos(golden * np.arange(n)), np.sin(golden * np.arange(n))])
    off = ~np.eye(n, dtype=bool)
    for _ in range(int(max_iter)):
        diff = X[:, None, :] - X[None, :, :]
        d = np.hypot(diff[..., 0], diff[..., 1])
        close = (d < 0.98 * min_dist) & off
        if not close.any():
            break
        tiny = d < 1e-9 * min_dist
        dirs = np.where(tiny[..., None], (u[:, None, :] - u[None, :, :]), diff)
        norm = np.hypot(dirs[..., 0], dirs[..., 1])
        norm[norm == 0] = 1.0
        dirs = dirs / norm[..., None]
        push = np.where(close, (min_dist - d) / 2.0, 0.0)
        X = X + 0.6 * (push[..., None] * dirs).sum(axis=1)
    moved = np.any(np.abs(X - X0) > 0, axis=1)
    return X, moved
