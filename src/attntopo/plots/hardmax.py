"""Figures of a :class:`~attntopo.hardmax.HardmaxSimulation`: tokens gathering around leaders.

===============================  =========================================================
function                         what it shows
===============================  =========================================================
:func:`plot_trajectories`        the tokens' paths in the plane, the polytope spanned by the
                                 last step's leaders (its projection when ``d > 2``), the
                                 leaders marked
:func:`plot_cluster_counts`      distinct points (clusters) and leaders against the step
:func:`plot_h0_by_step`          the H0 persistence of the token cloud at every step: each
                                 finite bar's death (an edge of a minimum spanning tree) as a
                                 dot over its step — the clustering seen as topology
:func:`plot_hardmax_overview`    the three side by side
:func:`hardmax_bundle`           the figures as a :class:`~attntopo.plots.Bundle` (file stems
                                 ``trajectories``, ``clusters``, ``h0``)
===============================  =========================================================

Like every attntopo figure: functions return a :class:`matplotlib.figure.Figure`, single-panel
ones accept ``ax=``, nothing calls ``show()`` or touches ``matplotlib.rcParams``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import InvalidInputError
from . import _style as S
from ._labels import add_token_labels
from ._layout import display_labels
from .bundles import Bundle
from .static import _figure_and_axes

__all__ = [
    "plot_trajectories",
    "plot_cluster_counts",
    "plot_h0_by_step",
    "plot_hardmax_overview",
    "hardmax_bundle",
    "projection_2d",
]

_CLUSTER_COLORS = (
    S.OKABE_ITO["blue"],
    S.OKABE_ITO["vermillion"],
    S.OKABE_ITO["bluish_green"],
    S.OKABE_ITO["orange"],
    S.OKABE_ITO["reddish_purple"],
    S.OKABE_ITO["sky_blue"],
    S.OKABE_ITO["yellow"],
    S.OKABE_ITO["black"],
)
_LEADER_COLOR = S.OKABE_ITO["black"]
_HULL_COLOR = "#999999"


def _check(result: Any) -> None:
    if getattr(result, "kind", None) != "hardmax_simulation":
        raise InvalidInputError(
            "expected a HardmaxSimulation (from "
            f"attntopo.hardmax.simulate), got {type(result).__name__}"
        )


def _cluster_color(c: int, n_clusters: int) -> Any:
    if n_clusters <= len(_CLUSTER_COLORS):
        return _CLUSTER_COLORS[c % len(_CLUSTER_COLORS)]
    from matplotlib import colormaps

    return colormaps["viridis"](c / max(1, n_clusters - 1))


def _style(ax: Axes) -> None:
    ax.tick_params(labelsize=S.FONT["tick"], length=3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def projection_2d(result: Any, *, dims: Sequence[int] | None = None) -> tuple[np.ndarray, str, str]:
    """Plane coordinates of every token at every step: ``(steps + 1, n, 2)`` and the axis names.

    ``d = 2``: the coordinates themselves.  ``dims=(i, j)``: coordinates ``i`` and ``j``.
    Otherwise (``d > 2``) the two principal axes of the initial tokens (centred, SVD): a linear
    map, so the projected polytope is the convex hull of the projected leaders.  ``d = 1``:
    the coordinate against the step.
    """
    _check(result)
    T = np.asarray(result.trajectories)
    d = T.shape[2]
    if dims is not None:
        dims = [int(x) for x in dims]
        if len(dims) != 2 or not all(0 <= x < d for x in dims) or dims[0] == dims[1]:
            raise InvalidInputError(
                f"dims must be two different coordinates in 0..{d - 1}, got {dims!r}"
            )
        return T[:, :, dims], f"z[{dims[0]}]", f"z[{dims[1]}]"
    if d == 1:
        steps = np.broadcast_to(np.arange(T.shape[0])[:, None, None], T.shape)
        return np.concatenate([T, steps], axis=2), "z", "step"
    if d == 2:
        return T, "z[0]", "z[1]"
    Z0 = T[0]
    c = Z0.mean(axis=0)
    _, _, Vt = np.linalg.svd(Z0 - c, full_matrices=False)
    B = Vt[:2] if Vt.shape[0] >= 2 else np.vstack([Vt, np.zeros((2 - Vt.shape[0], d))])
    return (T - c) @ B.T, "principal axis 1 of Z0", "principal axis 2 of Z0"


def _draw_hull(ax: Axes, P: np.ndarray) -> None:
    """The convex hull of points ``P`` ``(m, 2)``: a polygon, a segment or a point."""
    from scipy.spatial import ConvexHull, QhullError

    if P.shape[0] >= 3:
        try:
            hull = ConvexHull(P)
            loop = np.append(hull.vertices, hull.vertices[0])
            ax.fill(P[loop, 0], P[loop, 1], color=_HULL_COLOR, alpha=0.15, lw=0, zorder=0)
            ax.plot(
                P[loop, 0],
                P[loop, 1],
                color=_HULL_COLOR,
                lw=1.2,
                zorder=1,
                label="polytope of the leaders",
            )
            return
        except QhullError:  # collinear: fall through to a segment
            pass
    if P.shape[0] >= 2:
        u = P - P.mean(axis=0)
        _, _, Vt = np.linalg.svd(u, full_matrices=False)
        t = u @ Vt[0]
        ends = P[[int(np.argmin(t)), int(np.argmax(t))]]
        ax.plot(
            ends[:, 0],
            ends[:, 1],
            color=_HULL_COLOR,
            lw=1.2,
            zorder=1,
            label="polytope of the leaders",
        )


def plot_trajectories(
    result: Any,
    *,
    ax: Axes | None = None,
    dims: Sequence[int] | None = None,
    annotate: bool | None = None,
    color_by: str = "leader",
    title: str | None = None,
) -> Figure:
    """The tokens' paths, coloured by where they are heading, with the leaders' polytope.

    Parameters
    ----------
    result : HardmaxSimulation
    ax : matplotlib Axes, optional
    dims : (int, int), optional
        Two coordinates to show (default: the plane itself for ``d = 2``, the two principal
        axes of ``Z0`` for ``d > 2``, coordinate against step for ``d = 1``).
    annotate : bool, optional
        Write the token labels next to the starting points (default: when there are labels
        and at most 40 tokens).
    color_by : {"leader", "cluster"}
        ``"leader"``: one colour per group of tokens following the same leader(s) at the last
        step (:meth:`~attntopo.hardmax.HardmaxSimulation.attention_clusters`; after a few
        steps followers are near their leader but not yet at its point); ``"cluster"``: one
        colour per distinct point at the last step.  The same for a converged run.
    title : str, optional

    Returns
    -------
    Figure
        Hollow circles: ``Z0``; filled: the last step; stars: the last step's leaders; grey:
        the convex hull of the leaders (the polytope of the theorem, projected).
    """
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.2, 4.6))
    P, xlab, ylab = projection_2d(result, dims=dims)
    if color_by == "leader":
        lab = np.empty(result.n_tokens, dtype=np.int64)
        for g, group in enumerate(result.attention_clusters()):
            lab[group["members"]] = g
    elif color_by == "cluster":
        lab = np.asarray(result.labels)
    else:
        raise InvalidInputError(f"color_by must be 'leader' or 'cluster', got {color_by!r}")
    k = int(lab.max()) + 1
    lead = np.asarray(result.leaders[-1])
    if result.dim >= 2 or dims is not None:
        if lead.any():
            _draw_hull(ax, P[-1, lead])
    for i in range(result.n_tokens):
        col = _cluster_color(int(lab[i]), k)
        ax.plot(P[:, i, 0], P[:, i, 1], color=col, lw=0.8, alpha=0.7, zorder=2)
    cols = [_cluster_color(int(c), k) for c in lab]
    ax.scatter(
        P[0, :, 0],
        P[0, :, 1],
        s=18,
        facecolors="none",
        edgecolors=cols,
        lw=0.9,
        zorder=3,
        label="tokens at step 0",
    )
    ax.scatter(P[-1, :, 0], P[-1, :, 1], s=14, c=cols, zorder=4, label=f"step {result.steps}")
    if lead.any():
        ax.scatter(
            P[-1, lead, 0],
            P[-1, lead, 1],
            s=90,
            marker="*",
            c=_LEADER_COLOR,
            zorder=5,
            label=f"leaders ({int(lead.sum())})",
        )
    tokens = result.tokens
    if annotate is None:
        annotate = tokens is not None and result.n_tokens <= 40
    if annotate:
        names = (
            display_labels(tokens)
            if tokens is not None
            else [str(i) for i in range(result.n_tokens)]
        )
        n = result.n_tokens
        add_token_labels(
            ax,
            P[0],
            range(n),
            [S.short_label(x) for x in names],
            fontsize=[S.FONT["token"]] * n,
            colors=["#222222"] * n,
            weights=["normal"] * n,
            marker_radius=2.8,
        )
    ax.set_xlabel(xlab, fontsize=S.FONT["label"])
    ax.set_ylabel(ylab, fontsize=S.FONT["label"])
    if result.dim == 2 and dims is None:
        ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize=S.FONT["legend"], frameon=False, loc="best")
    if title is None:
        width = ax.get_position().width * fig.get_figwidth()
        title = S.wrap_title(
            f"hardmax dynamics: {S.plural(result.n_tokens, 'token')} in R^{result.dim}, "
            f"α = {result.alpha:g} · {S.plural(int(result.n_clusters[-1]), 'point')} after "
            f"{S.plural(result.steps, 'step')}",
            width + 0.5,
            S.FONT["title"],
        )
    ax.set_title(title, fontsize=S.FONT["title"])
    _style(ax)
    return fig


def plot_cluster_counts(result: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Distinct points (clusters) and leaders at every step.

    Returns
    -------
    Figure
        Steps on the x-axis; a count of ``n`` means every token is still at its own point.
    """
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.0, 3.2))
    steps = np.arange(result.steps + 1)
    ax.step(
        steps, result.n_clusters, where="post", color=S.OKABE_ITO["blue"], lw=1.6, label="clusters"
    )
    ax.step(
        steps,
        result.n_leaders,
        where="post",
        color=S.OKABE_ITO["vermillion"],
        lw=1.2,
        ls="--",
        label="leaders",
    )
    ax.set_xlabel("step (layer)", fontsize=S.FONT["label"])
    ax.set_ylabel("count", fontsize=S.FONT["label"])
    ax.set_ylim(0, result.n_tokens * 1.05 + 0.5)
    ax.legend(fontsize=S.FONT["legend"], frameon=False)
    ax.set_title(title or "distinct points against depth", fontsize=S.FONT["title"])
    _style(ax)
    return fig


def plot_h0_by_step(
    result: Any,
    *,
    ax: Axes | None = None,
    diagrams: Sequence[Any] | None = None,
    log: bool = True,
    title: str | None = None,
) -> Figure:
    """The H0 persistence of the token cloud at every step: one dot per finite bar's death.

    Parameters
    ----------
    result : HardmaxSimulation
    ax : matplotlib Axes, optional
    diagrams : sequence of Diagram, optional
        ``result.diagrams(maxdim=0)`` when already computed.
    log : bool, default True
        Logarithmic death axis (bars shrink geometrically as tokens converge).

    Returns
    -------
    Figure
        Step on the x-axis, H0 death (Euclidean distance at which two groups of tokens join)
        on the y-axis.  Bars of length zero (tokens at the same point) have no dot; bars that
        stay long are the clusters.
    """
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.0, 3.2))
    dgms = list(diagrams) if diagrams is not None else result.diagrams(maxdim=0)
    if len(dgms) != result.steps + 1:
        raise InvalidInputError(
            f"diagrams must hold one diagram per step ({result.steps + 1}), got {len(dgms)}"
        )
    xs, ys = [], []
    for k, dgm in enumerate(dgms):
        deaths = np.asarray(dgm[0])[:, 1] if len(dgm[0]) else np.zeros(0)
        deaths = deaths[np.isfinite(deaths)]
        if log:
            deaths = deaths[deaths > 0]
        xs.append(np.full(deaths.shape, k))
        ys.append(deaths)
    x, y = np.concatenate(xs), np.concatenate(ys)
    ax.scatter(x, y, s=6, color=S.dim_color(0), marker=S.dim_marker(0), alpha=0.6, lw=0)
    if log and y.size:
        ax.set_yscale("log")
    ax.set_xlabel("step (layer)", fontsize=S.FONT["label"])
    ax.set_ylabel("H0 death (Euclidean distance)", fontsize=S.FONT["label"])
    ax.set_title(title or "H0 persistence of the token cloud per step", fontsize=S.FONT["title"])
    _style(ax)
    return fig


def plot_hardmax_overview(result: Any, *, dims: Sequence[int] | None = None) -> Figure:
    """Trajectories, cluster counts and H0 by step side by side."""
    _check(result)
    fig = Figure(figsize=(15, 4.6), layout="constrained")
    axes = fig.subplots(1, 3, width_ratios=[1.2, 1, 1])
    plot_trajectories(result, ax=axes[0], dims=dims)
    plot_cluster_counts(result, ax=axes[1])
    plot_h0_by_step(result, ax=axes[2])
    return fig


def hardmax_bundle(result: Any, *, dims: Sequence[int] | None = None) -> Bundle:
    """The figures of a simulation as a :class:`~attntopo.plots.Bundle` (static only).

    File stems: ``trajectories``, ``clusters``, ``h0``.  There are no interactive figures, so
    the ``html`` format writes nothing.
    """
    _check(result)

    def draw(interactive: bool) -> dict:
        if interactive:
            return {}
        return {
            "trajectories": plot_trajectories(result, dims=dims),
            "clusters": plot_cluster_counts(result),
            "h0": plot_h0_by_step(result),
        }

    return Bundle(draw, title="attntopo hardmax simulation")
