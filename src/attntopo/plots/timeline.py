"""Figures of a :class:`~attntopo.analyses.Timeline`: topology as tokens arrive.

==============================  ==========================================================
function                        what it shows
==============================  ==========================================================
:func:`plot_timeline_diagrams`  small multiples: the persistence diagram of each prefix
:func:`plot_coherence`          bottleneck / Wasserstein distance between consecutive
                                slices, over time, with the arriving tokens on the x-axis
:func:`plot_betti_heatmap`      Betti numbers over distance × time (the Hilbert function
                                of the bifiltration for causal models)
:func:`plot_vineyard`           vines: each feature's (birth, death) band through time
:func:`plot_timeline_overview`  coherence, vineyard and Betti heatmap on one time axis
:func:`iplot_timeline`          plotly animation of the diagrams with a time slider
                                (save with :func:`attntopo.plots.save_figure` as ``.html``:
                                standalone, plotly.js inlined, no CDN)
==============================  ==========================================================

Like every attntopo figure: functions return a figure, single-panel ones accept ``ax=``,
nothing calls ``show()`` or touches ``matplotlib.rcParams``.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure

from ..errors import InvalidInputError
from . import _style as S
from .interactive import _go
from .static import _figure_and_axes

__all__ = [
    "plot_timeline_diagrams",
    "plot_coherence",
    "plot_betti_heatmap",
    "plot_vineyard",
    "plot_timeline_overview",
    "iplot_timeline",
]

_VINE_COLORS = (
    S.OKABE_ITO["vermillion"],
    S.OKABE_ITO["blue"],
    S.OKABE_ITO["bluish_green"],
    S.OKABE_ITO["orange"],
    S.OKABE_ITO["reddish_purple"],
    S.OKABE_ITO["sky_blue"],
    S.OKABE_ITO["black"],
)


# ----------------------------------------------------------------------------- helpers
def _check_timeline(tl: Any) -> None:
    from ..analyses import Timeline

    if not isinstance(tl, Timeline):
        raise InvalidInputError(
            f"expected a Timeline (from attntopo.timeline(...)), got {type(tl).__name__}"
        )


def _style_axes(ax: Axes) -> None:
    ax.tick_params(labelsize=S.FONT["tick"], length=3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _dims(tl: Any, dims: Sequence[int] | int | None) -> list[int]:
    if dims is None:
        return list(range(tl.maxdim + 1))
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        dims = [int(dims)]
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d <= tl.maxdim:
            raise InvalidInputError(
                f"dims must be homology dimensions in 0..{tl.maxdim}, got {d!r}"
            )
        out.append(int(d))
    return out


def _check_dim(tl_or_maxdim: Any, dim: Any) -> int:
    maxdim = tl_or_maxdim if isinstance(tl_or_maxdim, int) else tl_or_maxdim.maxdim
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not 0 <= dim <= maxdim:
        raise InvalidInputError(f"dim must be a homology dimension in 0..{maxdim}, got {dim!r}")
    return int(dim)


def _time_ticks(ax: Axes, tl: Any, times: np.ndarray | None = None) -> None:
    """Label the time axis with the token that arrives at each t (thinned)."""
    times = tl.times if times is None else times
    labels = tl.labels
    by_t = {s.t: labels[s.token] for s in tl.slices}
    pos, _ = S.thin_labels(None, len(times))
    ticks = [int(times[i]) for i in pos]
    texts = [S.short_label(by_t.get(t, str(t))) for t in ticks]
    if S.label_step(len(times)) > 1:
        texts = [f"{x} ({t})" for x, t in zip(texts, ticks)]
    ax.set_xticks(ticks, texts, rotation=90, fontsize=S.FONT["token"])
    ax.tick_params(axis="x", length=2)


def _diagram_range(tl: Any, dims: list[int]) -> tuple[float, float, float]:
    finite = []
    for s in tl.slices:
        for d in dims:
            p = np.asarray(s.diagram[d])
            if p.size:
                finite.append(p[:, 0])
                finite.append(p[np.isfinite(p[:, 1]), 1])
    vals = np.concatenate(finite) if finite else np.zeros(0)
    lo = min(0.0, float(vals.min())) if vals.size else 0.0
    top = float(vals.max()) if vals.size else 1.0
    if top <= lo:
        top = lo + 1.0
    inf_y = top + 0.1 * (top - lo)
    # a small margin below so that points at the lowest value are not cut in half
    return lo - 0.04 * (top - lo), inf_y + 0.05 * (top - lo), inf_y


def _draw_points(
    ax: Axes, dgm: Any, dims: list[int], lo: float, hi: float, inf_y: float, size: float
) -> None:
    ax.plot([lo, hi], [lo, hi], color="#888888", lw=0.6, zorder=1)
    has_inf = False
    for d in dims:
        p = np.asarray(dgm[d], dtype=np.float64).reshape(-1, 2)
        fin = np.isfinite(p[:, 1])
        has_inf |= bool((~fin).any())
        ax.plot(
            p[:, 0],
            np.where(fin, p[:, 1], inf_y),
            ls="",
            marker=S.dim_marker(d),
            markersize=math.sqrt(size),
            color=S.dim_color(d),
            markeredgecolor="none",
            alpha=0.85,
            zorder=3 + d,
            label=f"H{d}",
        )
    if has_inf:
        ax.axhline(inf_y, color=S.INF_COLOR, ls="--", lw=0.5, zorder=1)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_aspect("equal", adjustable="box")


# ----------------------------------------------------------------------- small multiples
def plot_timeline_diagrams(
    tl: Any,
    *,
    times: Sequence[int] | None = None,
    dims: Sequence[int] | int | None = None,
    ncols: int = 6,
    max_panels: int = 24,
    title: str | None = None,
) -> Figure:
    """Small multiples: the persistence diagram of each time slice, on shared axes.

    Parameters
    ----------
    tl : Timeline
    times : list of int, optional
        Prefix lengths to show; by default up to ``max_panels`` evenly spaced slices
        (always including the first and the last).
    dims : int or list of int, optional
        Homology dimensions (all by default).
    ncols : int
        Panels per row.
    max_panels : int
        Most panels drawn when ``times`` is not given.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Each panel is titled with ``t`` and the token that arrived.
    """
    _check_timeline(tl)
    dims = _dims(tl, dims)
    if isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer)) or ncols < 1:
        raise InvalidInputError(f"ncols must be a positive int, got {ncols!r}")
    if times is None:
        if (
            isinstance(max_panels, bool)
            or not isinstance(max_panels, (int, np.integer))
            or max_panels < 1
        ):
            raise InvalidInputError(f"max_panels must be a positive int, got {max_panels!r}")
        S_ = len(tl.slices)
        idx = np.unique(np.round(np.linspace(0, S_ - 1, min(S_, int(max_panels)))).astype(int))
        slices = [tl.slices[i] for i in idx]
    else:
        slices = [tl.slice(int(t)) for t in times]
        if not slices:
            raise InvalidInputError("times is empty: give at least one prefix length")
    lo, hi, inf_y = _diagram_range(tl, dims)
    n = len(slices)
    nc = min(int(ncols), n)
    nr = math.ceil(n / nc)
    fig = Figure(
        figsize=(1.6 * nc + 0.5, 1.75 * nr + (0.6 if title else 0.35)), layout="compressed"
    )
    axes = np.atleast_1d(fig.subplots(nr, nc, squeeze=False)).ravel()
    labels = tl.labels
    for k, ax in enumerate(axes):
        if k >= n:
            ax.set_axis_off()
            continue
        s = slices[k]
        _draw_points(ax, s.diagram, dims, lo, hi, inf_y, size=9)
        ax.set_title(
            f"t={s.t}  +{S.short_label(labels[s.token], 10)}", fontsize=S.FONT["grid_label"]
        )
        ax.tick_params(labelsize=S.FONT["grid_tick"], length=2)
        if k % nc:
            ax.set_yticklabels([])
        if k < n - nc:
            ax.set_xticklabels([])
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    handles = [axes[0].lines[1 + i] for i in range(len(dims)) if len(axes[0].lines) > 1 + i]
    if handles:
        fig.legend(
            handles,
            [f"H{d}" for d in dims],
            loc="outside lower right",
            fontsize=S.FONT["legend"],
            frameon=False,
            ncols=len(dims),
        )
    fig.supxlabel("birth", fontsize=S.FONT["label"])
    fig.supylabel("death", fontsize=S.FONT["label"])
    if title:
        fig.suptitle(title, fontsize=S.FONT["title"])
    return fig


def _empty_note(ax: Axes, note: str) -> None:
    """Say in the middle of an empty panel why it is empty."""
    ax.text(
        0.5,
        0.5,
        note,
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=S.FONT["label"],
        color="#555555",
        style="italic",
        zorder=10,
    )


# ------------------------------------------------------------------------- coherence
def plot_coherence(
    tl: Any,
    *,
    metric: str = "bottleneck",
    dims: Sequence[int] | int | None = None,
    ax: Axes | None = None,
    combined: bool = False,
    highlight: int = 3,
    title: str | None = None,
) -> Figure:
    """Temporal coherence: distance between consecutive diagrams as tokens arrive.

    The value at ``t`` compares slice ``t`` with the previous slice, so it measures how
    much the arrival of the token shown under ``t`` changed the topology.

    Parameters
    ----------
    tl : Timeline
    metric : {"bottleneck", "wasserstein"}
    dims : int or list of int, optional
        One curve per dimension (all by default).
    ax : matplotlib Axes, optional
    combined : bool
        Also draw all dimensions combined (:meth:`Timeline.change`).
    highlight : int
        Mark the ``highlight`` largest changes (0: none).
    title : str, optional
    """
    _check_timeline(tl)
    if metric not in ("bottleneck", "wasserstein"):
        raise InvalidInputError(f"metric must be 'bottleneck' or 'wasserstein', got {metric!r}")
    dims = _dims(tl, dims)
    fig, ax = _figure_and_axes(ax, (max(5.0, 0.09 * len(tl.slices) + 3.0), 3.0))
    t = tl.times[1:]
    for d in dims:
        y = tl.change(metric=metric, dim=d)
        ax.plot(
            t, y, color=S.dim_color(d), marker=S.dim_marker(d), markersize=3, lw=1.0, label=f"H{d}"
        )
    if combined and len(dims) > 1:
        ax.plot(t, tl.change(metric=metric), color="#333333", lw=1.4, ls="--", label="all")
    if highlight and t.size:
        top = tl.top_changes(
            k=min(int(highlight), t.size), metric=metric, dim=None if len(dims) > 1 else dims[0]
        )
        for c in top:
            ax.axvline(c.t, color=S.HIGHLIGHT_COLOR, lw=0.6, alpha=0.5, zorder=0)
    if t.size:
        _time_ticks(ax, tl, tl.times)
        ax.set_xlim(tl.times[0] - 0.5, tl.times[-1] + 0.5)
    name = "bottleneck" if metric == "bottleneck" else f"Wasserstein (p={tl.p:g})"
    ax.set_ylabel(f"{name} distance\nto previous slice", fontsize=S.FONT["label"])
    ax.set_xlabel("arriving token (t = prefix length)", fontsize=S.FONT["label"])
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=S.FONT["legend"], frameon=False, loc="upper right")
    _style_axes(ax)
    ax.set_title(
        title if title is not None else f"{tl.model} layer {tl.layer} head {tl.head}: coherence",
        fontsize=S.FONT["title"],
    )
    return fig


# ------------------------------------------------------------------------- heatmap
def plot_betti_heatmap(
    data: Any,
    *,
    dim: int = 1,
    ax: Axes | None = None,
    scales: Any = None,
    title: str | None = None,
    colorbar: bool = True,
) -> Figure:
    """Betti numbers over distance (y) × time (x).

    For a causal model this is the Hilbert function of the (distance × time)
    bifiltration; for a bidirectional model the stacked Betti curves of the slices.

    Parameters
    ----------
    data : Timeline or HilbertFunction
        A timeline (its :meth:`~Timeline.hilbert` / :meth:`~Timeline.betti_curves` is
        computed) or a precomputed :class:`~attntopo.topology.multiparameter.HilbertFunction`.
    dim : int
        Homology dimension.
    ax : matplotlib Axes, optional
    scales : None, int or array-like
        Distance grid when ``data`` is a Timeline (default: exact).
    title : str, optional
    colorbar : bool
    """
    from ..analyses import Timeline
    from ..topology.multiparameter import HilbertFunction

    tl = None
    if isinstance(data, Timeline):
        tl = data
        dim = _check_dim(tl, dim)
        hf = tl.betti_curves(scales=scales)
    elif isinstance(data, HilbertFunction):
        hf = data
        dim = _check_dim(hf.maxdim, dim)
    else:
        raise InvalidInputError(
            f"expected a Timeline or a HilbertFunction, got {type(data).__name__}"
        )
    B = hf.betti(dim)
    e, t = hf.scales, hf.times
    # cell edges: each value holds from its grid point to the next
    de = np.diff(e)
    e_edges = np.concatenate([e, [e[-1] + (de[-1] if de.size else 1.0) * 0.5]])
    dt = np.diff(t)
    step = float(np.median(dt)) if dt.size else 1.0
    t_edges = np.concatenate([[t[0] - step / 2], (t[:-1] + t[1:]) / 2, [t[-1] + step / 2]])
    fig, ax = _figure_and_axes(ax, (max(5.0, 0.09 * t.size + 3.0), 3.4))
    vmax = int(max(1, B.max()))
    cmap = ListedColormap(_viridis_steps(vmax + 1))
    norm = BoundaryNorm(np.arange(-0.5, vmax + 1.5), cmap.N)
    mesh = ax.pcolormesh(t_edges, e_edges, B, cmap=cmap, norm=norm, shading="flat", rasterized=True)
    if colorbar:
        cb = fig.colorbar(mesh, ax=ax, pad=0.01, fraction=0.04)
        ticks = np.unique(np.linspace(0, vmax, min(vmax + 1, 6)).round().astype(int))
        cb.set_ticks(ticks)
        cb.set_label(f"Betti {dim}", fontsize=S.FONT["label"])
        cb.ax.tick_params(labelsize=S.FONT["tick"])
    ax.set_ylabel("distance ε", fontsize=S.FONT["label"])
    if not B.any():
        _empty_note(ax, f"Betti {dim} is 0 at every scale and time: no H{dim} feature")
    if tl is not None:
        _time_ticks(ax, tl, t.astype(np.int64))
        ax.set_xlabel("arriving token (t = prefix length)", fontsize=S.FONT["label"])
        kind = "Hilbert function" if tl.growing else "slice Betti numbers"
        default = f"{tl.model} layer {tl.layer} head {tl.head}: {kind}, H{dim}"
    else:
        ax.set_xlabel("time t", fontsize=S.FONT["label"])
        default = f"Hilbert function, H{dim}"
    _style_axes(ax)
    ax.set_title(title if title is not None else default, fontsize=S.FONT["title"])
    return fig


def _viridis_steps(k: int) -> list:
    from matplotlib import colormaps

    base = colormaps[S.DISTANCE_CMAP]
    cols = [base(x) for x in np.linspace(0.0, 1.0, max(k, 2))]
    cols[0] = (0.97, 0.97, 0.97, 1.0)  # Betti 0: near white, so features stand out
    return cols[:k] if k >= 2 else cols


# ------------------------------------------------------------------------- vineyard
def plot_vineyard(
    tl: Any,
    *,
    dim: int = 1,
    ax: Axes | None = None,
    top: int | None = 20,
    min_length: int = 1,
    title: str | None = None,
) -> Figure:
    """Vineyard: every feature followed through time as a band from birth to death.

    Each vine (:meth:`Timeline.vines`) is drawn as a filled band between its birth and
    death radius (y, distance) over the slices where it lives (x, time; for H0, whose
    births are all 0, only the death line is drawn): a tall band is a
    persistent feature, a long band one that survives many token arrivals; a band's left
    end is the token that created it, its right end the last slice before the token that
    removed it.  Essential classes (death ∞) are cut at a dashed ∞ line.

    Parameters
    ----------
    tl : Timeline
    dim : int
        Homology dimension.
    ax : matplotlib Axes, optional
    top : int or None
        Draw only the ``top`` vines with the largest area (lifetime in distance summed over
        time); None draws all.
    min_length : int
        Ignore vines living fewer slices.
    title : str, optional
    """
    _check_timeline(tl)
    dim = _check_dim(tl, dim)
    vines = tl.vines(dim=dim, min_length=max(1, int(min_length)))
    n_all = len(vines)
    lo, hi, inf_y = _diagram_range(tl, [dim])

    def area(v):
        d = np.where(np.isfinite(v.points[:, 1]), v.points[:, 1], inf_y)
        return float(np.sum(d - v.points[:, 0]))

    if top is not None:
        vines = sorted(vines, key=area, reverse=True)[: max(0, int(top))]
        vines.sort(key=lambda v: (v.start, int(v.rows[0])))
    fig, ax = _figure_and_axes(ax, (max(5.0, 0.09 * len(tl.slices) + 3.0), 3.2))
    has_inf = False
    for k, v in enumerate(vines):
        c = _VINE_COLORS[k % len(_VINE_COLORS)]
        b = v.points[:, 0]
        fin = np.isfinite(v.points[:, 1])
        has_inf |= bool((~fin).any())
        d = np.where(fin, v.points[:, 1], inf_y)
        x = v.times.astype(np.float64)
        if x.size == 1:  # a one-slice vine: a short vertical bar
            ax.plot([x[0], x[0]], [b[0], d[0]], color=c, lw=2.0, alpha=0.8, solid_capstyle="butt")
            continue
        if dim > 0:  # H0 births are all 0: bands would only stack up
            ax.fill_between(x, b, d, color=c, alpha=0.25, lw=0)
        ax.plot(x, d, color=c, lw=1.0)
        ax.plot(x, b, color=c, lw=0.6, ls=":")
    if has_inf:
        ax.axhline(inf_y, color=S.INF_COLOR, ls="--", lw=0.6)
        yt = [t for t in ax.get_yticks() if lo <= t < inf_y]
        ax.set_yticks(yt + [inf_y], [f"{t:.3g}" for t in yt] + ["∞"])
    ax.set_ylim(lo, hi)
    _time_ticks(ax, tl)
    ax.set_xlim(tl.times[0] - 0.5, tl.times[-1] + 0.5)
    ax.set_xlabel("arriving token (t = prefix length)", fontsize=S.FONT["label"])
    ax.set_ylabel(f"H{dim} birth … death (distance)", fontsize=S.FONT["label"])
    _style_axes(ax)
    if not vines:
        if n_all:
            note = f"no vine drawn (top={top}) of {n_all}"
        else:
            longer = f" for {min_length} slices or more" if min_length > 1 else ""
            note = f"no H{dim} feature lives in any prefix{longer}: nothing to draw"
        _empty_note(ax, note)
    shown = S.plural(len(vines), "vine") + (
        f" (top {top} by area)" if top is not None and n_all > len(vines) else ""
    )
    ax.set_title(
        title
        if title is not None
        else f"{tl.model} layer {tl.layer} head {tl.head}: vineyard H{dim}, {shown}",
        fontsize=S.FONT["title"],
    )
    return fig


# ------------------------------------------------------------------------- overview
def plot_timeline_overview(
    tl: Any,
    *,
    dim: int = 1,
    metric: str = "bottleneck",
    scales: Any = None,
    title: str | None = None,
) -> Figure:
    """Three panels on one time axis: coherence, vineyard (``dim``) and Betti heatmap (``dim``).

    Parameters
    ----------
    tl : Timeline
    dim : int
        Homology dimension of the vineyard and the Betti heatmap.
    metric : {"bottleneck", "wasserstein"}
        Distance of the coherence panel.
    scales : None, int or array-like
        Distance grid of the Betti heatmap (default: exact).
    title : str, optional
        Figure title (default: model, head and number of prefixes).

    Returns
    -------
    matplotlib.figure.Figure
        One title for the figure and one per panel; an empty vineyard or heatmap says so.
    """
    _check_timeline(tl)
    dim = _check_dim(tl, dim)
    if metric not in ("bottleneck", "wasserstein"):
        raise InvalidInputError(f"metric must be 'bottleneck' or 'wasserstein', got {metric!r}")
    w = max(6.0, 0.09 * len(tl.slices) + 3.5)
    fig = Figure(figsize=(w, 8.8), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    name = "bottleneck" if metric == "bottleneck" else f"Wasserstein (p={tl.p:g})"
    what = "Hilbert function" if tl.growing else "Betti numbers of each prefix"
    n_vines = len(tl.vines(dim=dim))
    panel = dict(fontsize=S.FONT["title"] - 1, loc="left")
    plot_coherence(tl, metric=metric, ax=axes[0], title="")
    axes[0].set_title(f"(a) coherence: {name} distance to the previous prefix", **panel)
    plot_vineyard(tl, dim=dim, ax=axes[1], title="")
    top = ", the 20 largest drawn" if n_vines > 20 else ""
    axes[1].set_title(
        f"(b) vineyard H{dim}: {S.plural(n_vines, 'feature')} followed through time{top}", **panel
    )
    plot_betti_heatmap(tl, dim=dim, ax=axes[2], scales=scales, title="")
    axes[2].set_title(f"(c) Betti {dim} over scale ε and time ({what})", **panel)
    for a in axes[:2]:
        a.set_xlabel("")
        a.tick_params(axis="x", labelbottom=False)
    fig.suptitle(
        title
        if title is not None
        else f"{tl.model} · layer {tl.layer}, head {tl.head} · topology as the tokens arrive "
        f"({S.plural(len(tl.slices), 'prefix', 'prefixes')})",
        fontsize=S.FONT["title"] + 1,
    )
    return fig


# ------------------------------------------------------------------------ animation
def iplot_timeline(tl: Any, *, dims: Sequence[int] | int | None = None, title: str | None = None):
    """Plotly animation of the diagrams over time, with a slider over the arriving tokens.

    Save with ``attntopo.plots.save_figure(fig, "timeline.html")``: one standalone file,
    plotly.js inlined (works offline).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    _check_timeline(tl)
    go = _go()
    dims = _dims(tl, dims)
    lo, hi, inf_y = _diagram_range(tl, dims)
    labels = tl.labels

    def traces(s):
        out = [
            go.Scatter(
                x=[lo, hi],
                y=[lo, hi],
                mode="lines",
                line=dict(color="#888888", width=1),
                hoverinfo="skip",
                showlegend=False,
            )
        ]
        for d in dims:
            p = np.asarray(s.diagram[d], dtype=np.float64).reshape(-1, 2)
            fin = np.isfinite(p[:, 1])
            text = [
                f"H{d}<br>birth {b:.4g}<br>death {'∞' if not f else f'{e:.4g}'}"
                for (b, e), f in zip(p.tolist(), fin.tolist())
            ]
            out.append(
                go.Scatter(
                    x=p[:, 0].tolist(),
                    y=np.where(fin, p[:, 1], inf_y).tolist(),
                    mode="markers",
                    name=f"H{d}",
                    text=text,
                    hovertemplate="%{text}<extra></extra>",
                    marker=dict(
                        color=S.dim_color(d),
                        symbol=S.DIM_PLOTLY_SYMBOLS[d % 4],
                        size=8,
                        opacity=0.85,
                    ),
                )
            )
        return out

    def name(s):
        return f"t={s.t} +{S.short_label(labels[s.token], 16)}"

    frames = [go.Frame(data=traces(s), name=str(s.t)) for s in tl.slices]
    fig = go.Figure(data=traces(tl.slices[0]), frames=frames)
    steps = [
        dict(
            method="animate",
            label=name(s),
            args=[
                [str(s.t)],
                dict(
                    mode="immediate",
                    frame=dict(duration=0, redraw=True),
                    transition=dict(duration=0),
                ),
            ],
        )
        for s in tl.slices
    ]
    top = inf_y - (inf_y - lo) / 11.0
    ticks = [float(x) for x in np.linspace(lo, top, 5)]
    fig.update_xaxes(title="birth", range=[lo, hi], constrain="domain")
    fig.update_yaxes(
        title="death",
        range=[lo, hi],
        scaleanchor="x",
        scaleratio=1,
        tickvals=ticks + [inf_y],
        ticktext=[f"{x:.3g}" for x in ticks] + ["∞"],
    )
    fig.add_hline(y=inf_y, line=dict(color=S.INF_COLOR, dash="dash", width=1))
    fig.update_layout(
        template="simple_white",
        title=dict(
            text=title or f"{tl.model} layer {tl.layer} head {tl.head}: diagrams as tokens arrive",
            x=0.02,
        ),
        width=620,
        height=700,
        sliders=[dict(active=0, steps=steps, currentvalue=dict(prefix=""), pad=dict(t=50))],
        updatemenus=[
            dict(
                type="buttons",
                showactive=False,
                x=0.0,
                y=-0.12,
                xanchor="left",
                buttons=[
                    dict(
                        label="▶ play",
                        method="animate",
                        args=[
                            None,
                            dict(
                                frame=dict(duration=300, redraw=True),
                                fromcurrent=True,
                                transition=dict(duration=0),
                            ),
                        ],
                    ),
                    dict(
                        label="❚❚ pause",
                        method="animate",
                        args=[[None], dict(mode="immediate", frame=dict(duration=0, redraw=False))],
                    ),
                ],
            )
        ],
    )
    return fig
