"""Static figures with matplotlib: diagrams, barcodes, matrices, head grids, threshold graphs.

Every function returns a :class:`matplotlib.figure.Figure`; those that draw one panel take
``ax=`` to draw into an existing axes (and then return that axes' figure).  Nothing here calls
``pyplot.show()`` or touches ``matplotlib.rcParams``: figures are built from
:class:`~matplotlib.figure.Figure` objects directly (no pyplot state), styled through the
properties of the objects they draw.  Save with :func:`attntopo.plots.save_figure`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ..errors import InvalidInputError
from ..topology import Diagram
from . import _style as S
from ._labels import add_token_labels, separate_points
from ._layout import (
    check_highlight,
    check_labels,
    check_scale,
    diagram_limits,
    diagram_points,
    distance_matrix,
    mds_layout,
    suggest_scale,
    threshold_complex,
)

__all__ = [
    "plot_diagram",
    "plot_barcode",
    "plot_distance_matrix",
    "plot_attention",
    "plot_head_grid",
    "plot_head_stat",
    "plot_threshold_graph",
    "plot_head_overview",
]


# ----------------------------------------------------------------------------- helpers
def _root_figure(ax: Axes) -> Figure:
    fig = ax.figure
    while getattr(fig, "figure", fig) is not fig:  # SubFigure → its root Figure
        fig = fig.figure
    return fig


def _figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        return fig, fig.add_subplot()
    if not isinstance(ax, Axes):
        raise InvalidInputError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return _root_figure(ax), ax


def _threshold_of(dgm: Any) -> float:
    return dgm.threshold if isinstance(dgm, Diagram) else math.inf


def _finite_ticks(lo: float, top: float, n: int = 5) -> list[float]:
    ticks = MaxNLocator(n).tick_values(lo, top)
    return [float(t) for t in ticks if lo - 1e-12 <= t <= top + 1e-12]


def _fmt_tick(t: float) -> str:
    return f"{t:.3g}"


def _square(ax: Axes) -> None:
    ax.set_aspect("equal", adjustable="box")


def _style_axes(ax: Axes, small: bool = False) -> None:
    ax.tick_params(
        labelsize=S.FONT["grid_tick"] if small else S.FONT["tick"], length=2 if small else 3
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _matrix(x: Any, name: str) -> np.ndarray:
    try:
        A = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be a square (n, n) numeric matrix") from None
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise InvalidInputError(f"{name} must be a square (n, n) matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise InvalidInputError(f"{name} must be finite (no NaN or inf)")
    return A


def side_colorbar(
    ax: Axes,
    mappable: Any,
    label: str,
    *,
    fmt: Any = None,
    unit: str = "",
    integer: bool = False,
    width: float = 0.045,
    pad: float = 0.03,
):
    """A colour bar beside ``ax``, exactly as tall as the axes' drawn box.

    A colour bar made with ``fig.colorbar(ax=…)`` takes the height of the axes' layout slot;
    an image with an equal aspect is shorter than that slot, so the bar stood above and below
    the matrix (and over its title).  This one is an inset of the axes: it follows the box
    the image actually fills.

    Parameters
    ----------
    ax : Axes
    mappable : ScalarMappable
    label : str
    fmt : callable float -> str, optional
        Tick format (the figure's one number format, :func:`attntopo.plots._style.number_format`).
    unit : str
        Appended to the label in brackets (``"×10⁻⁴"``).
    integer : bool
        Ticks at whole numbers only.
    width, pad : float
        Width of the bar and its gap to the axes, as fractions of the axes' width.

    Returns
    -------
    matplotlib.colorbar.Colorbar
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    cax = ax.inset_axes([1.0 + pad, 0.0, width, 1.0])
    cb = ax.figure.colorbar(mappable, cax=cax)
    cb.set_label(f"{label} [{unit}]" if unit else label, fontsize=S.FONT["label"])
    if integer:
        cb.locator = MaxNLocator(integer=True)
    if fmt is not None:
        cb.formatter = FuncFormatter(lambda x, _pos: fmt(x))
        res = getattr(fmt, "resolution", 0.0)
        if res > 0 and not integer:  # ticks that the format writes exactly
            cb.locator = _resolution_locator(res)
    cb.update_ticks()
    cb.ax.tick_params(labelsize=S.FONT["tick"])
    return cb


def _resolution_locator(res: float):
    """Nice ticks (multiples of 1, 2, 2.5 or 5 of a power of ten) that are multiples of ``res``,
    so a format with that resolution writes every tick exactly (no 0.0125 shown as 0.013)."""
    from matplotlib.ticker import MaxNLocator

    class _Locator(MaxNLocator):
        def tick_values(self, vmin, vmax):
            ticks = super().tick_values(vmin, vmax)
            if len(ticks) > 1:
                step = float(np.median(np.diff(ticks)))
                if step < res * (1 - 1e-9) or abs(step / res - round(step / res)) > 1e-6:
                    k = max(1.0, math.ceil(step / res - 1e-9))
                    for nice in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
                        if nice >= k:
                            k = nice
                            break
                    base = k * res
                    ticks = np.arange(math.floor(vmin / base) * base, vmax + 0.5 * base, base)
            return ticks

    return _Locator(nbins=5, steps=[1, 2, 5, 10])


def annotate_cells(
    ax: Axes, M: np.ndarray, fmt: Any, *, fontsize: float, dark_below: float | None = None
) -> None:
    """Write ``fmt(M[i, j])`` in every cell of an ``imshow`` of ``M`` (``–`` where not finite).

    Text is white on the dark half of the colour map (values below ``dark_below``, the middle
    of the finite range by default) and black on the light half.
    """
    finite = M[np.isfinite(M)]
    if dark_below is None:
        dark_below = (finite.min() + finite.max()) / 2 if finite.size else 0.0
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            v = M[i, j]
            ax.text(
                j,
                i,
                fmt(v),
                ha="center",
                va="center",
                fontsize=fontsize,
                color="white" if np.isfinite(v) and v < dark_below else "black",
            )


def _token_ticks(
    ax: Axes, n: int, labels: list[str] | None, x: bool = True, y: bool = True
) -> None:
    pos, texts = S.thin_labels(labels, n)
    if x:
        ax.set_xticks(pos, texts, rotation=90, fontsize=S.FONT["token"])
    if y:
        ax.set_yticks(pos, texts, fontsize=S.FONT["token"])
    ax.tick_params(length=2)


def _draw_diagram(
    ax: Axes,
    pts: list[tuple[int, np.ndarray]],
    lo: float,
    hi: float,
    inf_y: float,
    *,
    size: float,
    small: bool = False,
    legend: bool = True,
    xticks: bool = True,
    yticks: bool = True,
    inf_tick: bool | None = None,
) -> None:
    ax.plot([lo, hi], [lo, hi], color="#888888", lw=0.6 if small else 0.8, zorder=1)
    has_inf = any((~np.isfinite(p[:, 1])).any() for _, p in pts)
    if has_inf:
        ax.axhline(inf_y, color=S.INF_COLOR, ls="--", lw=0.5 if small else 0.8, zorder=1)
    for d, p in pts:
        y = np.where(np.isfinite(p[:, 1]), p[:, 1], inf_y)
        ax.plot(
            p[:, 0],
            y,
            ls="",
            marker=S.dim_marker(d),
            markersize=math.sqrt(size),
            color=S.dim_color(d),
            markeredgecolor="white" if not small else "none",
            markeredgewidth=0.3,
            alpha=0.85,
            zorder=3 + d,
            label=f"H{d} ({len(p)})",
            clip_on=False,
        )
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    top = inf_y - (inf_y - lo) / 11.0  # the largest finite value (see diagram_limits)
    ticks = _finite_ticks(lo, top, 3 if small else 5)
    labels = [_fmt_tick(t) for t in ticks]
    if xticks:
        ax.set_xticks(ticks, labels)
    else:
        ax.set_xticks([])
    if yticks:
        if has_inf if inf_tick is None else inf_tick:
            ax.set_yticks(ticks + [inf_y], labels + ["∞"])
        else:
            ax.set_yticks(ticks, labels)
    else:
        ax.set_yticks([])
    _square(ax)
    _style_axes(ax, small)
    if legend and not small:
        ax.legend(loc="lower right", fontsize=S.FONT["legend"], frameon=False, handletextpad=0.2)


# ------------------------------------------------------------------------- diagrams
def _overlay_diagrams(
    ax: Axes | None,
    dgms: Sequence[Any],
    names: Sequence[str],
    colors: Sequence[str],
    dims: Sequence[int],
    *,
    figsize: tuple[float, float],
    sizes: tuple[float, float],
    linewidth: float,
    alpha: float,
) -> tuple[Figure, Axes]:
    """Two persistence diagrams on one square axes: the first filled, the second hollow.

    Shared by the text comparison and the model comparison figures: diagonal, dashed ∞
    line (when a bar never dies), one scatter per diagram and dimension labelled
    ``"{name} H{d} ({count})"``, equal limits with an ∞ tick, birth/death labels.
    """
    pts = [np.asarray(g[d]) for g in dgms for d in dims]
    lo, hi, inf_y = diagram_limits(pts)
    fig, ax = _figure_and_axes(ax, figsize)
    ax.plot([lo, hi], [lo, hi], color="#888888", lw=0.8, zorder=1)
    if any((~np.isfinite(p[:, 1])).any() for p in pts):
        ax.axhline(inf_y, color=S.INF_COLOR, ls="--", lw=0.8, zorder=1)
    for k, g in enumerate(dgms):
        col = colors[k]
        for d in dims:
            p = np.asarray(g[d])
            y = np.where(np.isfinite(p[:, 1]), p[:, 1], inf_y)
            ax.scatter(
                p[:, 0],
                y,
                s=sizes[k],
                marker=S.dim_marker(d),
                facecolors=col if k == 0 else "none",
                edgecolors=col,
                linewidths=linewidth,
                alpha=alpha,
                zorder=3 + k,
                label=f"{names[k]} H{d} ({len(p)})",
                clip_on=False,
            )
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ticks = [t for t in ax.get_yticks() if lo - 1e-12 <= t < inf_y - 0.04 * (hi - lo)]
    ax.set_yticks(ticks + [inf_y], [f"{t:.3g}" for t in ticks] + ["∞"])
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("birth", fontsize=S.FONT["label"])
    ax.set_ylabel("death", fontsize=S.FONT["label"])
    return fig, ax


def plot_diagram(
    dgm: Diagram | Sequence[Any],
    *,
    ax: Axes | None = None,
    dims: Sequence[int] | int | None = None,
    title: str | None = None,
    legend: bool = True,
) -> Figure:
    """Persistence diagram: one marker and colour per homology dimension.

    Points are (birth, death); the diagonal is drawn, and classes that never die are
    drawn on a dashed ∞ line above the largest finite value.

    Parameters
    ----------
    dgm : Diagram or list of ndarray of shape (k, 2)
        The diagram (ripser-style lists are accepted).
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    dims : int or list of int, optional
        Dimensions to draw (all by default).
    title : str, optional
    legend : bool
        Show the legend (``H0 (n)``, …).

    Returns
    -------
    matplotlib.figure.Figure
    """
    pts = diagram_points(dgm, dims)
    lo, hi, inf_y = diagram_limits([p for _, p in pts], _threshold_of(dgm))
    fig, ax = _figure_and_axes(ax, (4.0, 4.0))
    _draw_diagram(ax, pts, lo, hi, inf_y, size=22, legend=legend)
    ax.set_xlabel("birth", fontsize=S.FONT["label"])
    ax.set_ylabel("death", fontsize=S.FONT["label"])
    if title:
        ax.set_title(title, fontsize=S.FONT["title"])
    return fig


def plot_barcode(
    dgm: Diagram | Sequence[Any],
    *,
    ax: Axes | None = None,
    dims: Sequence[int] | int | None = None,
    title: str | None = None,
) -> Figure:
    """Persistence barcode: one horizontal bar per class, grouped by dimension.

    Bars that never die run to the dashed ∞ line and end in an arrow head.

    Parameters
    ----------
    dgm : Diagram or list of ndarray of shape (k, 2)
    ax : matplotlib Axes, optional
    dims : int or list of int, optional
        Dimensions to draw (all by default).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    pts = diagram_points(dgm, dims)
    lo, hi, inf_y = diagram_limits([p for _, p in pts], _threshold_of(dgm))
    total = sum(len(p) for _, p in pts)
    fig, ax = _figure_and_axes(ax, (5.0, min(7.0, 1.6 + 0.05 * total)))
    lw = float(np.clip(180.0 / max(total, 1), 0.6, 4.0))
    gap = max(1.0, 0.04 * total)
    y = 0.0
    centers, names = [], []
    has_inf = False
    for d, p in pts:
        order = np.lexsort((p[:, 1], p[:, 0]))
        p = p[order]
        ys = y + np.arange(len(p))
        ends = np.where(np.isfinite(p[:, 1]), p[:, 1], inf_y)
        color = S.dim_color(d)
        ax.hlines(ys, p[:, 0], ends, color=color, lw=lw)
        inf = ~np.isfinite(p[:, 1])
        if inf.any():
            has_inf = True
            ax.scatter(ends[inf], ys[inf], marker=">", s=max(8.0, 6 * lw), color=color, zorder=3)
        centers.append(y + (len(p) - 1) / 2 if len(p) else y)
        names.append(f"H{d} ({len(p)})")
        y += len(p) + gap
    if has_inf:
        ax.axvline(inf_y, color=S.INF_COLOR, ls="--", lw=0.8)
    ax.set_xlim(lo, hi)
    ax.set_ylim(y - gap + 0.5, -1.0)
    top = inf_y - (inf_y - lo) / 11.0
    ticks = _finite_ticks(lo, top)
    ax.set_xticks(ticks + [inf_y], [_fmt_tick(t) for t in ticks] + ["∞"])
    ax.set_yticks(centers, names, fontsize=S.FONT["label"])
    for lab, (d, _) in zip(ax.get_yticklabels(), pts):
        lab.set_color(S.dim_color(d))
    ax.set_xlabel("filtration value", fontsize=S.FONT["label"])
    _style_axes(ax)
    ax.tick_params(axis="y", length=0)
    if title:
        ax.set_title(title, fontsize=S.FONT["title"])
    return fig


# ------------------------------------------------------------------------- matrices
def _matrix_figsize(n: int) -> tuple[float, float]:
    side = float(np.clip(3.2 + 0.035 * n, 4.0, 7.5))
    return side + 0.9, side


def plot_distance_matrix(
    D: Any,
    *,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = S.DISTANCE_CMAP,
    colorbar: bool = True,
) -> Figure:
    """Heatmap of a token distance matrix, with token labels (every k-th for long texts).

    Parameters
    ----------
    D : array-like of shape (n, n)
        Symmetric distance matrix with zero diagonal.
    labels : sequence of str of length n, optional
        Token labels (e.g. ``Attention.labels``).
    ax : matplotlib Axes, optional
    title : str, optional
    cmap : str
        Colour map (viridis by default: perceptually uniform and colour-blind safe).
    colorbar : bool

    Returns
    -------
    matplotlib.figure.Figure
    """
    D = distance_matrix(D)
    n = D.shape[0]
    labels = check_labels(labels, n=n)
    fig, ax = _figure_and_axes(ax, _matrix_figsize(n))
    im = ax.imshow(D, cmap=cmap, vmin=0.0, vmax=max(float(D.max()), 1e-12), interpolation="nearest")
    _token_ticks(ax, n, labels)
    if colorbar:
        side_colorbar(ax, im, "distance")
    if title:
        ax.set_title(title, fontsize=S.FONT["title"])
    return fig


def plot_attention(
    weights: Any,
    *,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = S.ATTENTION_CMAP,
    colorbar: bool = True,
) -> Figure:
    """Heatmap of one head's attention weights: rows are queries, columns keys.

    Parameters
    ----------
    weights : array-like of shape (n, n)
        ``weights[i, j]``: attention of query token ``i`` to key token ``j`` (e.g. ``att[l, h]``).
    labels : sequence of str of length n, optional
    ax : matplotlib Axes, optional
    title : str, optional
    cmap : str
        Colour map (cividis by default).
    colorbar : bool

    Returns
    -------
    matplotlib.figure.Figure
    """
    W = _matrix(weights, "weights")
    if (W < -1e-6).any():
        raise InvalidInputError("attention weights must be non-negative")
    n = W.shape[0]
    labels = check_labels(labels, n=n)
    fig, ax = _figure_and_axes(ax, _matrix_figsize(n))
    im = ax.imshow(W, cmap=cmap, vmin=0.0, vmax=max(float(W.max()), 1e-12), interpolation="nearest")
    _token_ticks(ax, n, labels)
    ax.set_xlabel("key", fontsize=S.FONT["label"])
    ax.set_ylabel("query", fontsize=S.FONT["label"])
    if colorbar:
        side_colorbar(ax, im, "attention weight")
    if title:
        ax.set_title(title, fontsize=S.FONT["title"])
    return fig


# -------------------------------------------------------------------------- analyses
def _check_analysis(analysis: Any) -> None:
    if not all(hasattr(analysis, a) for a in ("diagrams", "layers", "heads", "attention")):
        raise InvalidInputError(
            f"expected an attntopo Analysis (from attntopo.analyze), got {type(analysis).__name__}"
        )


def _describe(analysis: Any) -> str:
    a = analysis.attention
    return f"{a.model} · {a.n_tokens} tokens · {S.metric_name(analysis.metric)} distance"


def plot_head_grid(
    analysis: Any,
    *,
    dims: Sequence[int] | int | None = None,
    title: str | None = None,
    cell: float = 0.8,
) -> Figure:
    """Small persistence diagrams of every analysed head: rows are layers, columns heads.

    All panels share their axes (one scale for the whole model), so heads compare at a
    glance; tick labels appear only on the outer panels.  Readable from 6 × 12 (MiniLM) to
    30 × 9 (SmolLM2) heads: the figure grows with the grid, ``cell`` inches per panel.

    Parameters
    ----------
    analysis : Analysis
        From :func:`attntopo.analyze`.
    dims : int or list of int, optional
        Dimensions to draw (all analysed by default).
    title : str, optional
        Defaults to model, tokens and metric.
    cell : float
        Side of one panel in inches.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_analysis(analysis)
    layers, heads = list(analysis.layers), list(analysis.heads)
    L, H = len(layers), len(heads)
    pts = [[diagram_points(analysis.diagrams[i][j], dims) for j in range(H)] for i in range(L)]
    lo, hi, inf_y = diagram_limits(
        [p for row in pts for cellpts in row for _, p in cellpts], float(analysis.threshold)
    )
    any_inf = any((~np.isfinite(p[:, 1])).any() for row in pts for c in row for _, p in c)
    left, right, bottom = (
        0.95,
        0.15,
        0.45,
    )  # inches (left: the "death" label, then the layer labels)
    w = H * cell + left + right
    heading = S.wrap_title(
        title or f"Persistence diagrams per head · {_describe(analysis)}",
        w - left - 0.05,
        S.FONT["title"],
    )
    lines = heading.count("\n") + 1
    top = 0.55 + 0.17 * lines  # the title's lines, then a row for the legend
    h = L * cell + top + bottom
    fig = Figure(figsize=(w, h))
    fig.subplots_adjust(
        left=left / w,
        right=1 - right / w,
        top=1 - top / h,
        bottom=bottom / h,
        wspace=0.08,
        hspace=0.08,
    )
    # one scale for all panels, set on each (matplotlib's sharex/sharey costs O(panels²))
    axes = fig.subplots(L, H, squeeze=False)
    for i in range(L):
        for j in range(H):
            ax = axes[i, j]
            _draw_diagram(
                ax,
                pts[i][j],
                lo,
                hi,
                inf_y,
                size=4,
                small=True,
                legend=False,
                xticks=i == L - 1,
                yticks=j == 0,
                inf_tick=any_inf,
            )
    for j, h_ in enumerate(heads):
        axes[0, j].set_title(f"head {h_}", fontsize=S.FONT["grid_label"], pad=3)
    for i, l_ in enumerate(layers):
        axes[i, 0].set_ylabel(
            f"layer {l_}",
            fontsize=S.FONT["grid_label"],
            rotation=0,
            ha="right",
            va="center",
            labelpad=4,
        )
    shown = [d for d, _ in pts[0][0]] if L and H else []
    handles = [
        Line2D(
            [], [], ls="", marker=S.dim_marker(d), color=S.dim_color(d), markersize=4, label=f"H{d}"
        )
        for d in shown
    ]
    fig.legend(
        handles=handles,
        loc="upper right",
        ncol=len(handles),
        fontsize=S.FONT["legend"],
        frameon=False,
        bbox_to_anchor=(1 - right / w, 1 - (0.12 + 0.17 * lines) / h),
    )
    fig.suptitle(heading, x=left / w, y=1 - 0.1 / h, ha="left", va="top", fontsize=S.FONT["title"])
    fig.supxlabel("birth", fontsize=S.FONT["grid_label"], y=0.08 / h, va="bottom")
    fig.text(0.1 / w, 0.5, "death", rotation=90, va="center", fontsize=S.FONT["grid_label"])
    return fig


def plot_head_stat(
    analysis: Any,
    *,
    stat: str = "max_persistence_h1",
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = S.DISTANCE_CMAP,
    annotate: bool | None = None,
) -> Figure:
    """Heatmap of one summary statistic over layers × heads.

    Parameters
    ----------
    analysis : Analysis
    stat : str
        A column of :meth:`Analysis.summary` other than ``layer``/``head``, e.g.
        ``"max_persistence_h1"``, ``"n_bars_h1"``, ``"persistence_entropy_h0"``.
    ax : matplotlib Axes, optional
    title : str, optional
    cmap : str
    annotate : bool, optional
        Write the values in the cells (default: when there are at most 120 cells).

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_analysis(analysis)
    table = analysis.summary()
    allowed = [k for k in table if k not in ("layer", "head")]
    if stat not in allowed:
        raise InvalidInputError(f"unknown statistic {stat!r}; allowed: {', '.join(allowed)}")
    layers, heads = list(analysis.layers), list(analysis.heads)
    L, H = len(layers), len(heads)
    M = np.asarray(table[stat], dtype=np.float64).reshape(L, H)
    fig, ax = _figure_and_axes(
        ax, (float(np.clip(2.4 + 0.5 * H, 4.2, 12.0)), float(np.clip(1.6 + 0.32 * L, 2.8, 12.0)))
    )
    im = ax.imshow(M, cmap=cmap, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(H), [str(h) for h in heads], fontsize=S.FONT["tick"])
    ax.set_yticks(range(L), [str(l_) for l_ in layers], fontsize=S.FONT["tick"])
    ax.set_xlabel("head", fontsize=S.FONT["label"])
    ax.set_ylabel("layer", fontsize=S.FONT["label"])
    if annotate is None:
        annotate = L * H <= 120
    label = S.column_title(stat)
    fmt, unit = S.number_format(M, digits=2)
    integer = bool(np.all(M[np.isfinite(M)] == np.round(M[np.isfinite(M)])))
    if annotate:
        annotate_cells(ax, M, fmt, fontsize=S.FONT["grid_tick"] + 1, dark_below=None)
    side_colorbar(ax, im, label, fmt=fmt, unit=unit, integer=integer, width=0.035, pad=0.02)
    width = ax.get_position().width * _root_figure(ax).get_figwidth()
    ax.set_title(
        title
        or S.wrap_title(f"{label} per head · {_describe(analysis)}", width + 0.6, S.FONT["title"]),
        fontsize=S.FONT["title"],
    )
    return fig


# ----------------------------------------------------------------- threshold graphs
def plot_threshold_graph(
    D: Any,
    scale: float,
    *,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
    highlight: Any = None,
    title: str | None = None,
    special: Any = None,
    coords: np.ndarray | None = None,
    max_labels: int = 60,
) -> Figure:
    """The Vietoris–Rips complex at ``scale``: edges and filled triangles over the tokens.

    Tokens are placed by classical multidimensional scaling of ``D`` (deterministic), an
    edge joins two tokens at distance ≤ ``scale``, and every triangle whose three sides are
    ≤ ``scale`` is filled.  A loop of edges around an unfilled hole is an H1 class alive at
    ``scale``.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Token distance matrix.
    scale : float
        Scale (same unit as ``D``), positive.
    labels : sequence of str of length n, optional
        Token labels drawn next to the nodes (every k-th when there are more than ``max_labels``).
    ax : matplotlib Axes, optional
    highlight : int, list of int, or bool mask of shape (n,), optional
        Tokens to emphasise (larger, vermillion, always labelled).
    title : str, optional
        Defaults to the scale and the numbers of edges and triangles.
    special : bool mask of shape (n,), optional
        Special tokens ([CLS], …), drawn in grey.
    coords : ndarray of shape (n, 2), optional
        Node positions (default: classical MDS of ``D``).
    max_labels : int
        Most token labels drawn.

    Returns
    -------
    matplotlib.figure.Figure
    """
    D = distance_matrix(D)
    n = D.shape[0]
    scale = check_scale(scale)
    labels = check_labels(labels, n=n)
    hl = check_highlight(highlight, n)
    sp = check_highlight(special, n) if special is not None else np.zeros(n, dtype=bool)
    X, moved = graph_layout(D, coords)
    edges, tris = threshold_complex(D, scale)
    fig, ax = _figure_and_axes(ax, (5.6, 5.0))
    if len(tris):
        ax.add_collection(
            PolyCollection(
                X[tris], facecolors=S.TRIANGLE_COLOR, edgecolors="none", alpha=0.18, zorder=1
            )
        )
    if len(edges):
        ax.add_collection(
            LineCollection(X[edges], colors=S.EDGE_COLOR, linewidths=0.7, alpha=0.7, zorder=2)
        )
    colors = np.where(hl, S.HIGHLIGHT_COLOR, np.where(sp, S.SPECIAL_COLOR, S.NODE_COLOR))
    sizes = np.where(hl, 46.0, 22.0)
    ax.scatter(
        X[:, 0], X[:, 1], s=sizes, c=list(colors), edgecolors="white", linewidths=0.5, zorder=3
    )
    if labels is not None:
        step = S.label_step(n, max_labels)
        chosen = [i for i in range(n) if hl[i]] + [
            i for i in range(n) if i % step == 0 and not hl[i]
        ]
        add_token_labels(
            ax,
            X,
            chosen,
            [S.short_label(labels[i]) for i in chosen],
            fontsize=[S.FONT["token"] + (1 if hl[i] else 0) for i in chosen],
            colors=[S.HIGHLIGHT_COLOR if hl[i] else "#222222" for i in chosen],
            weights=["bold" if hl[i] else "normal" for i in chosen],
            marker_radius=np.sqrt(sizes) / 2 + 0.5,
        )
    _graph_frame(ax, X)
    ax.set_title(
        title
        or f"threshold graph at ε = {scale:.3g} · {S.plural(len(edges), 'edge')} · "
        f"{S.plural(len(tris), 'triangle')}",
        fontsize=S.FONT["title"],
    )
    ax.text(
        1.0,
        0.0,
        _layout_note(moved),
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=S.FONT["tick"] - 1,
        color="#777777",
    )
    return fig


def graph_layout(
    D: np.ndarray, coords: Any = None, min_sep: float = 0.035
) -> tuple[np.ndarray, np.ndarray]:
    """Node positions of a threshold graph and which were nudged.

    Classical MDS of ``D`` (deterministic) with tokens closer than ``min_sep`` times the
    layout's extent nudged apart (:func:`~attntopo.plots._labels.separate_points`), so that tokens
    at (almost) the same place and the short edges between them stay visible; ``coords`` are
    used exactly as given.
    """
    n = D.shape[0]
    if coords is not None:
        X = np.asarray(coords, dtype=np.float64)
        if X.shape != (n, 2):
            raise InvalidInputError(f"coords must have shape ({n}, 2), got {X.shape}")
        return X, np.zeros(n, dtype=bool)
    X = mds_layout(D)
    span = float(np.ptp(X, axis=0).max()) if n > 1 else 0.0
    if span <= 0:
        return X, np.zeros(n, dtype=bool)
    return separate_points(X, min_sep * span)


def _layout_note(moved: np.ndarray) -> str:
    k = int(np.count_nonzero(moved))
    if not k:
        return "layout: classical MDS"
    return f"layout: classical MDS\n{S.plural(k, 'crowded token')} nudged apart"


def _graph_frame(ax: Axes, X: np.ndarray) -> None:
    """Limits with a margin, equal aspect, no ticks or spines."""
    n = X.shape[0]
    span = np.ptp(X, axis=0).max() if n > 1 else 1.0
    span = span if span > 0 else 1.0
    ax.set_xlim(X[:, 0].min() - 0.08 * span, X[:, 0].max() + 0.15 * span)
    ax.set_ylim(X[:, 1].min() - 0.08 * span, X[:, 1].max() + 0.1 * span)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xticks([])
    ax.set_yticks([])
    for s in ax.spines.values():
        s.set_visible(False)


def plot_head_overview(
    analysis: Any,
    layer: int,
    head: int,
    *,
    scale: float | None = None,
    highlight: Any = None,
) -> Figure:
    """Four panels for one head: attention, distance matrix, persistence diagram, threshold graph.

    Parameters
    ----------
    analysis : Analysis
    layer, head : int
        Model layer and head (0-based; must have been analysed).
    scale : float, optional
        Scale of the threshold graph (default: the middle of the most persistent H1 bar,
        see :func:`attntopo.plots.suggest_scale`).
    highlight : optional
        Tokens to emphasise in the threshold graph.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_analysis(analysis)
    dgm = analysis.diagram(layer, head)
    D = analysis.distance_matrix(layer, head)
    i, j = analysis.position(layer, head)
    W = analysis.attention.weights[i, j]
    labels = analysis.attention.labels
    scale = suggest_scale(dgm, D) if scale is None else scale
    L, H = analysis.layers[i], analysis.heads[j]
    fig = Figure(figsize=(11.0, 9.6), layout="constrained")
    axs = fig.subplots(2, 2)
    plot_attention(W, labels=labels, ax=axs[0, 0], title="attention")
    plot_distance_matrix(
        D, labels=labels, ax=axs[0, 1], title=f"{S.metric_name(analysis.metric)} distance"
    )
    plot_diagram(dgm, ax=axs[1, 0], title="persistence diagram")
    plot_threshold_graph(
        D,
        scale,
        labels=labels,
        ax=axs[1, 1],
        highlight=highlight,
        special=analysis.attention.special,
    )
    fig.suptitle(f"layer {L}, head {H} · {_describe(analysis)}", fontsize=S.FONT["title"] + 1)
    return fig
