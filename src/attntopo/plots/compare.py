"""Figures of a :class:`~attntopo.analyses.Comparison` and a phrase across contexts.

* :func:`plot_compare_graphs` — the two texts' Vietoris–Rips complexes at one scale, side by
  side (classical-MDS layout of each text's own distances), with the shared tokens and the
  edges/triangles present in both texts highlighted; :func:`plot_compare_graph` draws one of
  the two panels into an ``ax``.
* :func:`iplot_compare_graphs` — the same, interactive, with a slider over scales (plotly;
  save as standalone ``.html`` with :func:`attntopo.plots.save_figure`, plotly.js inlined).
* :func:`plot_compare_diagrams` / :func:`iplot_compare_diagrams` — both texts' diagrams of one
  head overlaid (text A filled, text B hollow; one marker per homology dimension).
* :func:`plot_compare_heads` / :func:`iplot_compare_heads` — a layers × heads heatmap of a
  diagram distance or of a shared-simplex count.
* :func:`plot_phrase_distances` — a phrase's pairwise diagram distances between contexts.

Same conventions as the other figures: matplotlib functions return a
:class:`~matplotlib.figure.Figure`, take ``ax=`` when they draw one panel, never call
``show()`` and never touch ``rcParams``; colours are Okabe–Ito (colour-blind safe) with
distinct markers and line widths, so nothing depends on colour alone.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..errors import InvalidInputError
from ..topology.complex import complex_at
from . import _style as S
from ._labels import add_token_labels
from ._layout import check_scale, diagram_limits, mds_layout
from .interactive import _go
from .slider import check_scales, compare_slider, slider_scales
from .static import (
    _figure_and_axes,
    _overlay_diagrams,
    _root_figure,
    annotate_cells,
    graph_layout,
    side_colorbar,
)

__all__ = [
    "plot_compare_graph",
    "plot_compare_graphs",
    "iplot_compare_graphs",
    "plot_compare_diagrams",
    "iplot_compare_diagrams",
    "plot_compare_heads",
    "iplot_compare_heads",
    "plot_phrase_distances",
    "TEXT_COLORS",
]

#: Colour of text A and text B in overlays (Okabe–Ito blue and orange).
TEXT_COLORS = (S.OKABE_ITO["blue"], S.OKABE_ITO["orange"])
SHARED_COLOR = S.OKABE_ITO["bluish_green"]  # shared tokens, edges and triangles
_SHARED_SIZE, _HIGHLIGHT_SIZE = (
    46.0,
    70.0,
)  # marker areas (points²) of shared and highlighted tokens
SHARED_TRI_RGBA = "rgba(0,158,115,0.35)"
TRI_RGBA = "rgba(86,180,233,0.15)"


# ---------------------------------------------------------------------- helpers
def _check_comparison(c: Any) -> None:
    if not all(hasattr(c, a) for a in ("a", "b", "shared_tokens", "scales", "shared_simplices")):
        raise InvalidInputError(
            f"expected a Comparison (from attntopo.compare), got {type(c).__name__}"
        )


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _highlight_keys(c: Any, highlight: Any) -> set[int]:
    """Positions in ``c.shared_tokens`` of the highlighted
    words (keys or words; case-insensitive)."""
    if highlight is None:
        return set()
    if isinstance(highlight, str):
        highlight = highlight.split()
    from ..words import normalize_token

    wanted = [normalize_token(h) for h in highlight]
    out = set()
    for w in wanted:
        hits = [
            k
            for k, s in enumerate(c.shared_tokens)
            if normalize_token(s.key) == w
            or w in (normalize_token(s.text_a), normalize_token(s.text_b))
        ]
        if not hits:
            raise InvalidInputError(
                f"cannot highlight {w!r}: it is not a shared token; shared are: "
                f"{', '.join(c.keys) or '(none)'}"
            )
        out.update(hits)
    return out


def _side(c: Any, side: str):
    if side not in ("a", "b"):
        raise InvalidInputError(f"side must be 'a' or 'b', got {side!r}")
    return c.a if side == "a" else c.b


def _panel_data(c: Any, side: str, i: int, j: int, scale: float, highlight: set[int]) -> dict:
    """Everything one threshold-graph panel draws (indices in that text's tokens)."""
    an = _side(c, side)
    D = an.distances[i, j]
    n = D.shape[0]
    cx = complex_at(D, scale, max_simplex_dim=2)
    rep = [getattr(s, side) for s in c.shared_tokens]
    shared_mask = np.zeros(n, dtype=bool)
    shared_mask[rep] = True
    hl = np.zeros(n, dtype=bool)
    for k in highlight:
        hl[rep[k]] = True
    pos = {s.key: r for s, r in zip(c.shared_tokens, rep)}
    both = c.shared_simplices(c.layers[i], c.heads[j], scale=scale)
    sh_edges = np.array(
        [[pos[t[0]], pos[t[1]]] for t in (s["tokens"] for s in both) if len(t) == 2], dtype=np.int64
    ).reshape(-1, 2)
    sh_tris = np.array(
        [[pos[x] for x in t] for t in (s["tokens"] for s in both) if len(t) == 3], dtype=np.int64
    ).reshape(-1, 3)
    return {
        "D": D,
        "n": n,
        "labels": an.attention.labels,
        "special": an.attention.special,
        "edges": cx.simplices(1),
        "tris": cx.simplices(2),
        "shared": shared_mask,
        "hl": hl,
        "sh_edges": sh_edges,
        "sh_tris": sh_tris,
        "text": an.attention.text,
    }


def _pos(c: Any, layer: int | None, head: int | None) -> tuple[int, int]:
    return c._pos(layer, head)


# ------------------------------------------------------------- threshold graphs
def plot_compare_graph(
    comparison: Any,
    *,
    side: str = "a",
    layer: int | None = None,
    head: int | None = None,
    scale: float | None = None,
    ax: Axes | None = None,
    highlight: Any = None,
    coords: np.ndarray | None = None,
    max_labels: int = 60,
    title: str | None = None,
) -> Figure:
    """One text's threshold graph at ``scale``, with what it shares with the other text.

    Grey edges and pale blue triangles are that text's Vietoris–Rips complex at ``scale``;
    shared tokens are green diamonds; edges and triangles among shared tokens present in
    *both* texts at ``scale`` are thick green lines and green fills; ``highlight``ed words are
    vermillion and labelled in bold.

    Parameters
    ----------
    comparison : Comparison
    side : {"a", "b"}
        Which text.
    layer, head : int, optional
        Model indices (optional when one head was compared).
    scale : float, optional
        Scale (default: the head's scale in ``comparison.scales``).
    ax : matplotlib Axes, optional
    highlight : str or list of str, optional
        Shared words to emphasise (e.g. ``["information", "theory"]`` or ``"information theory"``).
    coords : ndarray of shape (n, 2), optional
        Node positions (default: classical MDS of that text's distances).
    max_labels : int
        Most token labels drawn (shared and highlighted tokens are always labelled).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_comparison(comparison)
    i, j = _pos(comparison, layer, head)
    e = float(comparison.scales[i, j]) if scale is None else check_scale(scale)
    p = _panel_data(comparison, side, i, j, e, _highlight_keys(comparison, highlight))
    n = p["n"]
    X, moved = graph_layout(p["D"], coords, min_sep=0.045)
    fig, ax = _figure_and_axes(ax, (5.4, 5.0))
    if len(p["tris"]):
        ax.add_collection(
            PolyCollection(
                X[p["tris"]], facecolors=S.TRIANGLE_COLOR, edgecolors="none", alpha=0.15, zorder=1
            )
        )
    if len(p["sh_tris"]):
        ax.add_collection(
            PolyCollection(
                X[p["sh_tris"]], facecolors=SHARED_COLOR, edgecolors="none", alpha=0.35, zorder=1.5
            )
        )
    if len(p["edges"]):
        ax.add_collection(
            LineCollection(X[p["edges"]], colors=S.EDGE_COLOR, linewidths=0.7, alpha=0.6, zorder=2)
        )
    sp, sh, hl = p["special"], p["shared"], p["hl"]
    plain = ~sh & ~hl
    ax.scatter(
        X[plain, 0],
        X[plain, 1],
        s=22,
        c=np.where(sp[plain], S.SPECIAL_COLOR, S.NODE_COLOR).tolist(),
        marker="o",
        edgecolors="white",
        linewidths=0.5,
        zorder=3,
    )
    if len(p["sh_edges"]):  # above the plain tokens, under the shared ones: never hidden by a token
        ax.add_collection(
            LineCollection(
                X[p["sh_edges"]],
                colors=SHARED_COLOR,
                linewidths=2.2,
                alpha=0.9,
                zorder=3.5,
                capstyle="butt",
            )
        )
    m = sh & ~hl
    ax.scatter(
        X[m, 0],
        X[m, 1],
        s=_SHARED_SIZE,
        c=SHARED_COLOR,
        marker="D",
        edgecolors="white",
        linewidths=0.6,
        zorder=4,
    )
    ax.scatter(
        X[hl, 0],
        X[hl, 1],
        s=_HIGHLIGHT_SIZE,
        c=S.HIGHLIGHT_COLOR,
        marker="D",
        edgecolors="black",
        linewidths=0.6,
        zorder=5,
    )
    step = S.label_step(n, max_labels)
    chosen = (
        [t for t in range(n) if hl[t]]
        + [t for t in range(n) if sh[t] and not hl[t]]
        + [t for t in range(n) if t % step == 0 and not (sh[t] or hl[t])]
    )
    size = np.where(hl, _HIGHLIGHT_SIZE, np.where(sh, _SHARED_SIZE, 22.0))
    add_token_labels(
        ax,
        X,
        chosen,
        [S.short_label(p["labels"][t]) for t in chosen],
        fontsize=[S.FONT["token"] + (1 if hl[t] else 0) for t in chosen],
        colors=[
            S.HIGHLIGHT_COLOR if hl[t] else ("#006b4f" if sh[t] else "#222222") for t in chosen
        ],
        weights=["bold" if (hl[t] or sh[t]) else "normal" for t in chosen],
        marker_radius=np.sqrt(size) / 2 + 0.6,
    )
    # a square data box (room for labels on the right), equal aspect without datalim warnings
    span = float(np.ptp(X, axis=0).max()) if n > 1 else 1.0
    span = span if span > 0 else 1.0
    cx = (X[:, 0].min() + X[:, 0].max()) / 2 + 0.05 * span
    cy = (X[:, 1].min() + X[:, 1].max()) / 2 + 0.01 * span
    half = 0.62 * span
    ax.set_xlim(cx - half, cx + half)
    ax.set_ylim(cy - half, cy + half)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xticks([])
    ax.set_yticks([])
    for s in ax.spines.values():
        s.set_visible(False)
    if moved.any():
        ax.text(
            1.0,
            0.0,
            f"{S.plural(int(moved.sum()), 'crowded token')} nudged apart",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=S.FONT["tick"] - 1,
            color="#777777",
        )
    name = "A" if side == "a" else "B"
    ax.set_title(
        title
        or (
            f"{name}: “{_short(p['text'])}”\nε = {e:.3g} · {S.plural(len(p['edges']), 'edge')} · "
            f"{S.plural(len(p['tris']), 'triangle')} · in both texts: "
            f"{S.plural(len(p['sh_edges']), 'edge')}, {S.plural(len(p['sh_tris']), 'triangle')}"
        ),
        fontsize=S.FONT["title"] - 1,
    )
    return fig


def plot_compare_graphs(
    comparison: Any,
    *,
    layer: int | None = None,
    head: int | None = None,
    scale: float | None = None,
    highlight: Any = None,
    axes: Sequence[Axes] | None = None,
    max_labels: int = 60,
) -> Figure:
    """The two texts' threshold graphs at ``scale`` side by side (see :func:`plot_compare_graph`).

    Parameters
    ----------
    comparison : Comparison
    layer, head : int, optional
    scale : float, optional
        Scale (default: the head's scale in ``comparison.scales``).
    highlight : str or list of str, optional
        Shared words to emphasise in both panels.
    axes : pair of matplotlib Axes, optional
        Draw into these instead of a new figure.
    max_labels : int

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_comparison(comparison)
    i, j = _pos(comparison, layer, head)
    e = float(comparison.scales[i, j]) if scale is None else check_scale(scale)
    if axes is None:
        fig = Figure(figsize=(11.0, 5.4), layout="constrained")
        axs = fig.subplots(1, 2)
    else:
        axs = list(axes)
        if len(axs) != 2 or not all(isinstance(a, Axes) for a in axs):
            raise InvalidInputError("axes must be a pair of matplotlib Axes")
        fig = _root_figure(axs[0])
    lay, hd = comparison.layers[i], comparison.heads[j]
    for side, ax in zip(("a", "b"), axs):
        plot_compare_graph(
            comparison,
            side=side,
            layer=lay,
            head=hd,
            scale=e,
            ax=ax,
            highlight=highlight,
            max_labels=max_labels,
        )
    handles = [
        Line2D([], [], ls="", marker="o", color=S.NODE_COLOR, label="token"),
        Line2D([], [], ls="", marker="D", color=SHARED_COLOR, label="shared token"),
        Line2D([], [], color=S.EDGE_COLOR, lw=0.8, label="edge (D ≤ ε)"),
        Line2D([], [], color=SHARED_COLOR, lw=2.2, label="edge in both texts"),
        Patch(facecolor=S.TRIANGLE_COLOR, alpha=0.3, label="triangle"),
        Patch(facecolor=SHARED_COLOR, alpha=0.5, label="triangle in both texts"),
    ]
    if highlight is not None:
        handles.insert(
            2, Line2D([], [], ls="", marker="D", color=S.HIGHLIGHT_COLOR, label="highlighted")
        )
    if axes is None:
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=len(handles),
            fontsize=S.FONT["legend"],
            frameon=False,
        )
        fig.suptitle(
            f"{comparison.a.attention.model} · layer {lay}, head {hd} · ε = {e:.3g}",
            fontsize=S.FONT["title"],
        )
    return fig


def _segments(X: np.ndarray, edges: np.ndarray) -> tuple[list, list]:
    xs, ys = [], []
    for a, b in edges.tolist():
        xs += [X[a, 0], X[b, 0], None]
        ys += [X[a, 1], X[b, 1], None]
    return xs, ys


def _polys(X: np.ndarray, tris: np.ndarray) -> tuple[list, list]:
    xs, ys = [], []
    for a, b, c in tris.tolist():
        xs += [X[a, 0], X[b, 0], X[c, 0], X[a, 0], None]
        ys += [X[a, 1], X[b, 1], X[c, 1], X[a, 1], None]
    return xs, ys


def _graph_traces(
    go: Any, c: Any, i: int, j: int, scale: float, hk: set[int], coords: dict
) -> tuple[list, str]:
    """The eight traces that change with ε (per text: triangles, shared triangles, edges,
    shared edges) and the title with the counts."""
    traces, counts = [], []
    for s in ("a", "b"):
        p = _panel_data(c, s, i, j, scale, hk)
        X = coords[s]
        tx, ty = _polys(X, p["tris"])
        sx, sy = _polys(X, p["sh_tris"])
        ex, ey = _segments(X, p["edges"])
        gx, gy = _segments(X, p["sh_edges"])
        traces += [
            go.Scatter(
                x=tx,
                y=ty,
                mode="lines",
                fill="toself",
                fillcolor=TRI_RGBA,
                line=dict(width=0),
                hoverinfo="skip",
                showlegend=False,
                name="triangles",
            ),
            go.Scatter(
                x=sx,
                y=sy,
                mode="lines",
                fill="toself",
                fillcolor=SHARED_TRI_RGBA,
                line=dict(width=0),
                hoverinfo="skip",
                showlegend=False,
                name="shared triangles",
            ),
            go.Scatter(
                x=ex,
                y=ey,
                mode="lines",
                line=dict(color=S.EDGE_COLOR, width=1),
                opacity=0.6,
                hoverinfo="skip",
                showlegend=False,
                name="edges",
            ),
            go.Scatter(
                x=gx,
                y=gy,
                mode="lines",
                line=dict(color=SHARED_COLOR, width=3.5),
                hoverinfo="skip",
                showlegend=False,
                name="shared edges",
            ),
        ]
        counts.append((len(p["edges"]), len(p["tris"]), len(p["sh_edges"]), len(p["sh_tris"])))
    (ea, ta, se, st), (eb, tb, _, _) = counts
    e_t = [
        f"{S.plural(e, 'edge')}, {S.plural(t, 'triangle')}"
        for e, t in ((ea, ta), (eb, tb), (se, st))
    ]
    title = (
        f"layer {c.layers[i]}, head {c.heads[j]} · ε = {scale:.3g} · A: {e_t[0]} · B: {e_t[1]} · "
        f"in both: {e_t[2]}"
    )
    return traces, title


def _node_trace(go: Any, p: dict, X: np.ndarray):
    """One text's tokens (hover: index, token, kind), coloured and shaped by kind."""
    labels = p["labels"]
    kind = np.where(
        p["hl"],
        "highlighted",
        np.where(p["shared"], "shared", np.where(p["special"], "special", "token")),
    )
    color = {
        "highlighted": S.HIGHLIGHT_COLOR,
        "shared": SHARED_COLOR,
        "special": S.SPECIAL_COLOR,
        "token": S.NODE_COLOR,
    }
    symbol = {"highlighted": "diamond", "shared": "diamond", "special": "circle", "token": "circle"}
    return go.Scatter(
        # plain lists (not base64 arrays): the page's script reads them from the figure
        x=X[:, 0].tolist(),
        y=X[:, 1].tolist(),
        mode="markers+text" if p["n"] <= 60 else "markers",
        text=[S.short_label(t) for t in labels],
        textposition="top right",
        textfont=dict(size=10),
        customdata=[f"{t}: {labels[t]} ({kind[t]})" for t in range(p["n"])],
        hovertemplate="%{customdata}<extra></extra>",
        marker=dict(
            color=[color[k] for k in kind],
            symbol=[symbol[k] for k in kind],
            size=np.where(kind == "token", 9, 13).tolist(),
            line=dict(color="white", width=1),
        ),
        showlegend=False,
        name="tokens",
    )


def iplot_compare_graphs(
    comparison: Any,
    *,
    layer: int | None = None,
    head: int | None = None,
    scales: Sequence[float] | None = None,
    highlight: Any = None,
    n_scales: int = 16,
    start: int | None = None,
):
    """Interactive twin of :func:`plot_compare_graphs`, with a slider over scales.

    Each slider step redraws both texts' edges and triangles at one scale, with the edges and
    triangles present in both texts in green.  Hover a node for its token.

    The figure carries each text's matrix once, as one number per token pair (the slider
    step at which that pair's edge appears, as in :func:`~attntopo.plots.iplot_threshold_graph`;
    for a pair of shared tokens, the step at which it is an edge in both texts), and neither
    plotly frames nor a plotly slider: under the figure the page shows attntopo's one ε slider
    (``assets/scale_slider.js``: the widget and the data encoding of the threshold graph and
    the explorer too), and a small inlined script (``assets/compare_graphs.js``, no request)
    draws, for the slider's step, what a frame of that step held (the same eight traces and
    title, counts equal to :func:`attntopo.complex_at`'s and
    :meth:`Comparison.shared_simplices`').  The file grows as n² per text, not as steps · n³.
    Each text's own edges and triangles are drawn up to
    :data:`~attntopo.plots.interactive.MAX_DRAWN_EDGES` /
    :data:`~attntopo.plots.interactive.MAX_DRAWN_TRIANGLES` (beyond, those of the largest
    earlier step within the cap, with a note; the counts in the title stay exact).  The
    slider works in the HTML attntopo writes (:func:`attntopo.plots.save_figure` as ``.html``,
    :func:`~attntopo.plots.figures_to_html`, the reports); ``fig.show()`` shows the opening
    scale.

    Parameters
    ----------
    comparison : Comparison
    layer, head : int, optional
    scales : sequence of float, optional
        Slider scales, increasing (default: ``n_scales`` quantiles of both texts' pairwise
        distances, plus the head's comparison scale).
    highlight : str or list of str, optional
    n_scales : int
    start : int, optional
        Index of the scale shown first (default: the comparison scale).

    Returns
    -------
    plotly.graph_objects.Figure
        Save with ``attntopo.plots.save_figure(fig, "compare.html")``: standalone, plotly.js
        inlined, opens offline.
    """
    go = _go()
    from plotly.subplots import make_subplots

    _check_comparison(comparison)
    i, j = _pos(comparison, layer, head)
    base = float(comparison.scales[i, j])
    if scales is None:  # quantiles of both texts' distances, and the comparison scale itself
        scales = slider_scales(
            [comparison.a.distances[i, j], comparison.b.distances[i, j]], n_scales, include=[base]
        )
    scales = check_scales(
        [check_scale(s, "scales") for s in np.atleast_1d(np.asarray(scales, dtype=float))]
    ).tolist()
    if start is None:
        start = int(np.argmin(np.abs(np.asarray(scales) - base)))
    if not 0 <= int(start) < len(scales):
        raise InvalidInputError(f"start must be in 0..{len(scales) - 1}, got {start}")
    hk = _highlight_keys(comparison, highlight)
    lay, hd = comparison.layers[i], comparison.heads[j]
    coords = {s: mds_layout(_side(comparison, s).distances[i, j]) for s in ("a", "b")}
    texts = {s: _side(comparison, s).attention.text for s in ("a", "b")}
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=[f"A: {_short(texts['a'], 60)}", f"B: {_short(texts['b'], 60)}"],
    )

    # the opening state, drawn in Python too (the figure is right before any script runs); the
    # page's script redraws every step from the per-pair steps in layout.meta (no frames)
    traces, title = _graph_traces(go, comparison, i, j, scales[start], hk, coords)
    for t, tr in enumerate(traces):
        fig.add_trace(tr, row=1, col=1 if t < 4 else 2)
    for col, s in ((1, "a"), (2, "b")):
        fig.add_trace(
            _node_trace(go, _panel_data(comparison, s, i, j, scales[start], hk), coords[s]),
            row=1,
            col=col,
        )
    # the one slider's record (plots/slider.py), drawn by assets/scale_slider.js's widget
    meta = dict(
        kind="compare_graphs",
        version=2,
        **compare_slider(comparison, i, j, np.asarray(scales), int(start)),
        title_prefix=f"layer {lay}, head {hd}",
        traces=dict(dynamic=list(range(8)), nodes=[8, 9]),
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_yaxes(scaleanchor="x", scaleratio=1, row=1, col=1)
    fig.update_yaxes(scaleanchor="x2", scaleratio=1, row=1, col=2)
    fig.update_layout(
        template="simple_white",
        title=dict(text=title, x=0.02, xanchor="left", font=dict(size=13)),
        width=1200,
        height=640,
        margin=dict(l=20, r=20, t=90, b=30),
        meta=dict(attntopo=meta),
    )
    return fig


# ------------------------------------------------------------------ diagrams
def _diagram_title(comparison: Any, i: int, j: int) -> str:
    bn = comparison.diagram_distances["bottleneck"][i, j]
    parts = " · ".join(f"H{d} {v:.3g}" for d, v in enumerate(bn))
    return f"layer {comparison.layers[i]}, head {comparison.heads[j]} · bottleneck {parts}"


def plot_compare_diagrams(
    comparison: Any,
    *,
    layer: int | None = None,
    head: int | None = None,
    ax: Axes | None = None,
    dims: Sequence[int] | None = None,
    scope: str = "text",
    title: str | None = None,
) -> Figure:
    """Both texts' persistence diagrams of one head overlaid.

    Text A is drawn with filled markers in blue, text B with hollow markers in orange; each
    homology dimension has its own marker shape.  Infinite bars sit on the dashed ∞ line.

    Parameters
    ----------
    comparison : Comparison
    layer, head : int, optional
    ax : matplotlib Axes, optional
    dims : list of int, optional
        Dimensions to draw (default: all).
    scope : {"text", "shared"}
        Whole texts' diagrams, or those of the shared tokens' sub-matrices.
    title : str, optional
        Default: the head and its bottleneck distance per dimension.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_comparison(comparison)
    i, j = _pos(comparison, layer, head)
    dgms = _scope_diagrams(comparison, i, j, scope)
    maxdim = dgms[0].maxdim
    dims = list(range(maxdim + 1)) if dims is None else [int(d) for d in dims]
    for d in dims:
        if not 0 <= d <= maxdim:
            raise InvalidInputError(f"dims must be in 0..{maxdim}, got {d}")
    fig, ax = _overlay_diagrams(
        ax,
        dgms,
        ("A", "B"),
        TEXT_COLORS,
        dims,
        figsize=(4.8, 4.6),
        sizes=(34, 44),
        linewidth=1.2,
        alpha=0.85,
    )
    ax.tick_params(labelsize=S.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(fontsize=S.FONT["legend"], frameon=False, loc="lower right")
    ax.set_title(title or _diagram_title(comparison, i, j), fontsize=S.FONT["title"])
    return fig


def _scope_diagrams(c: Any, i: int, j: int, scope: str):
    if scope == "text":
        return c.a.diagrams[i][j], c.b.diagrams[i][j]
    if scope == "shared":
        if c.shared_diagrams_a is None:
            raise InvalidInputError("the texts share no token: there are no shared-token diagrams")
        return c.shared_diagrams_a[i][j], c.shared_diagrams_b[i][j]
    raise InvalidInputError(f"scope must be 'text' or 'shared', got {scope!r}")


def iplot_compare_diagrams(
    comparison: Any,
    *,
    layer: int | None = None,
    head: int | None = None,
    scope: str = "text",
    title: str | None = None,
):
    """Interactive twin of :func:`plot_compare_diagrams` (hover: text, dimension, birth, death)."""
    go = _go()
    _check_comparison(comparison)
    i, j = _pos(comparison, layer, head)
    dgms = _scope_diagrams(comparison, i, j, scope)
    maxdim = dgms[0].maxdim
    pts = [np.asarray(g[d]) for g in dgms for d in range(maxdim + 1)]
    lo, hi, inf_y = diagram_limits(pts)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            line=dict(color="#888888", width=1),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    if any((~np.isfinite(p[:, 1])).any() for p in pts):
        fig.add_trace(
            go.Scatter(
                x=[lo, hi],
                y=[inf_y, inf_y],
                mode="lines",
                hoverinfo="skip",
                line=dict(color=S.INF_COLOR, width=1, dash="dash"),
                name="∞",
            )
        )
    for k, (g, name) in enumerate(zip(dgms, ("A", "B"))):
        for d in range(maxdim + 1):
            p = np.asarray(g[d])
            y = np.where(np.isfinite(p[:, 1]), p[:, 1], inf_y)
            death = ["∞" if not math.isfinite(v) else f"{v:.4g}" for v in p[:, 1]]
            fig.add_trace(
                go.Scatter(
                    x=p[:, 0],
                    y=y,
                    mode="markers",
                    name=f"{name} H{d} ({len(p)})",
                    marker=dict(
                        symbol=S.DIM_PLOTLY_SYMBOLS[d % 4] + ("" if k == 0 else "-open"),
                        size=10,
                        color=TEXT_COLORS[k],
                        line=dict(width=1.5, color=TEXT_COLORS[k]),
                    ),
                    customdata=death,
                    hovertemplate=f"text {name} · H{d}<br>birth %{{x:.4g}}<br>death "
                    f"%{{customdata}}<extra></extra>",
                )
            )
    fig.update_xaxes(range=[lo, hi], title="birth")
    fig.update_yaxes(range=[lo, hi], title="death", scaleanchor="x", scaleratio=1)
    fig.update_layout(
        template="simple_white",
        width=620,
        height=600,
        title=dict(text=title or _diagram_title(comparison, i, j), x=0.02, xanchor="left"),
    )
    return fig


# ------------------------------------------------------------------ head grids
def _heads_grid(comparison: Any, name: str, dim: int | None, scope: str) -> tuple[np.ndarray, str]:
    g = comparison.grid(name=name, dim=dim, scope=scope)
    from ..constants import DISTANCE_NAMES

    if name in DISTANCE_NAMES:
        d = comparison._dim(dim, name, scope)
        label = f"{name} H{d}" + (" (shared tokens)" if scope == "shared" else "")
    else:
        label = S.column_title(name)
    return g, label


def plot_compare_heads(
    comparison: Any,
    *,
    name: str = "bottleneck",
    dim: int | None = None,
    ax: Axes | None = None,
    scope: str = "text",
    annotate: bool | None = None,
    mark: int = 3,
    title: str | None = None,
) -> Figure:
    """Heatmap (layers × heads) of a diagram distance or a shared-simplex count.

    Parameters
    ----------
    comparison : Comparison
    name : str
        ``"bottleneck"``, ``"wasserstein1"``, ``"wasserstein2"``, ``"shared_edges"``,
        ``"shared_triangles"``, … (see :meth:`Comparison.grid`).
    dim : int, optional
        Homology dimension of a distance (default: the one the comparison's default ranking
        uses, :meth:`Comparison.default_dim`: the highest without a majority tie).
    ax : matplotlib Axes, optional
    scope : {"text", "shared"}
    annotate : bool, optional
        Write the values in the cells (default: when there are at most 150 cells).
    mark : int
        Outline the heads ranked ``mark`` or better where the texts agree most (white
        squares; 0 = none): more than ``mark`` when heads tie, and the title says so.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_comparison(comparison)
    g, label = _heads_grid(comparison, name, dim, scope)
    L, H = g.shape
    fig, ax = _figure_and_axes(ax, (max(4.0, 0.42 * H + 1.8), max(2.6, 0.42 * L + 1.2)))
    im = ax.imshow(
        np.ma.masked_invalid(g.astype(float)),
        cmap=S.DISTANCE_CMAP,
        aspect="auto",
        interpolation="nearest",
    )
    G = g.astype(float)
    fmt, unit = S.number_format(G, digits=2)
    side_colorbar(
        ax, im, label, fmt=fmt, unit=unit, integer=g.dtype.kind in "iub", width=0.035, pad=0.02
    )
    ax.set_xticks(range(H), [str(h) for h in comparison.heads], fontsize=S.FONT["tick"])
    ax.set_yticks(range(L), [str(l_) for l_ in comparison.layers], fontsize=S.FONT["tick"])
    ax.set_xlabel("head", fontsize=S.FONT["label"])
    ax.set_ylabel("layer", fontsize=S.FONT["label"])
    if annotate is None:
        annotate = L * H <= 150
    if annotate:
        annotate_cells(ax, G, fmt, fontsize=S.FONT["grid_tick"])
    note = ""
    if mark:
        from ..constants import DISTANCE_NAMES

        by = name if name in DISTANCE_NAMES + ("shared_edges", "shared_triangles") else None
        if by is not None:
            r = comparison.ranking(by=by, dim=dim, scope=scope)
            top = np.flatnonzero(r["rank"] <= int(mark))
            for t in top:
                a, b = (
                    comparison.layers.index(int(r["layer"][t])),
                    comparison.heads.index(int(r["head"][t])),
                )
                ax.add_patch(_square_patch(b, a))
            tied = f", {top.size} with ties" if top.size > int(mark) else ""
            note = f"\n(outlined: the {min(int(mark), top.size)} most similar by {label}{tied})"
    ax.set_title(title or f"{label} between the two texts per head{note}", fontsize=S.FONT["title"])
    return fig


def _square_patch(x: float, y: float):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="white", lw=1.8, zorder=5)


def iplot_compare_heads(
    comparison: Any,
    *,
    name: str = "bottleneck",
    dim: int | None = None,
    scope: str = "text",
    title: str | None = None,
):
    """Interactive heads heatmap with a menu over every distance (per dimension) and count."""
    go = _go()
    _check_comparison(comparison)
    from ..constants import COUNT_NAMES, DISTANCE_NAMES

    options = []
    for n in DISTANCE_NAMES:
        for d in range(comparison.maxdim + 1):
            options.append((n, d))
    options += [(n, None) for n in COUNT_NAMES]
    mats = {}
    for n, d in options:
        g, label = _heads_grid(comparison, n, d, scope)
        mats[label] = g.astype(float)
    _, first = _heads_grid(comparison, name, dim, scope)
    fig = go.Figure(
        go.Heatmap(
            z=mats[first],
            x=[str(h) for h in comparison.heads],
            y=[str(l_) for l_ in comparison.layers],
            colorscale="Viridis",
            colorbar=dict(title=first),
            hovertemplate="layer %{y}, head %{x}<br>%{z:.4g}<extra></extra>",
        )
    )
    buttons = [
        dict(label=k, method="restyle", args=[{"z": [v.tolist()], "colorbar.title.text": k}])
        for k, v in mats.items()
    ]
    fig.update_xaxes(title="head", type="category")
    fig.update_yaxes(title="layer", type="category", autorange="reversed")
    fig.update_layout(
        template="simple_white",
        width=760,
        height=480,
        title=dict(text=title or "Two texts, per head", x=0.02, xanchor="left"),
        updatemenus=[
            dict(buttons=buttons, active=list(mats).index(first), x=1.0, xanchor="right", y=1.15)
        ],
    )
    return fig


# -------------------------------------------------------------------- phrases
def plot_phrase_distances(
    phrase_topology: Any,
    *,
    layer: int | None = None,
    head: int | None = None,
    dim: int | None = None,
    ax: Axes | None = None,
    by: str = "bottleneck",
    title: str | None = None,
) -> Figure:
    """Pairwise diagram distances of a phrase between its contexts (one head, one dimension).

    Parameters
    ----------
    phrase_topology : PhraseTopology
    layer, head : int, optional
    dim : int, optional
        Homology dimension (default H0: phrases are short).
    ax : matplotlib Axes, optional
    by : {"bottleneck", "wasserstein1", "wasserstein2"}
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not all(hasattr(phrase_topology, a) for a in ("matrix", "contexts", "phrase")):
        raise InvalidInputError(
            "expected a PhraseTopology (from attntopo.phrase_topology), got "
            f"{type(phrase_topology).__name__}"
        )
    M = phrase_topology.matrix(layer, head, dim=dim, by=by)
    C = M.shape[0]
    d = phrase_topology._dim(dim)
    i, j = phrase_topology._pos(layer, head)
    names = [f"{k}: {_short(c, 28)}" for k, c in enumerate(phrase_topology.contexts)]
    label_width = 0.055 * max(len(x) for x in names)  # inches of the y tick labels (7 pt)
    side = float(np.clip(0.5 * C, 1.6, 7.0))
    fig, ax = _figure_and_axes(ax, (label_width + side + 1.3, side + 1.2))
    im = ax.imshow(M, cmap=S.DISTANCE_CMAP, interpolation="nearest")
    fmt, unit = S.number_format(M, digits=2)
    side_colorbar(ax, im, S.column_title(f"{by}_h{d}"), fmt=fmt, unit=unit)
    ax.set_xticks(range(C), [str(k) for k in range(C)], fontsize=S.FONT["tick"])
    ax.set_yticks(range(C), names, fontsize=S.FONT["tick"])
    ax.set_xlabel("context", fontsize=S.FONT["label"])
    if C <= 12:
        annotate_cells(ax, M, fmt, fontsize=S.FONT["grid_tick"] + 1)
    ax.set_title(
        title
        or f"“{_short(phrase_topology.phrase, 40)}” across {S.plural(C, 'context')}\n"
        f"layer {phrase_topology.layers[i]}, head {phrase_topology.heads[j]}",
        fontsize=S.FONT["title"],
    )
    return fig
