"""Interactive twins of the static figures, with plotly.

Every function returns a :class:`plotly.graph_objects.Figure` with hover text on every mark.
Save it with :func:`attntopo.plots.save_figure` as ``.html`` (standalone: plotly.js is inlined,
so the file opens offline and never loads a CDN).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidInputError, MissingDependencyError
from . import _style as S
from ._layout import (
    check_highlight,
    check_labels,
    check_scale,
    diagram_limits,
    diagram_points,
    distance_matrix,
    mds_layout,
    suggest_scales,
    threshold_complex,
)

__all__ = ["iplot_diagram", "iplot_distance_matrix", "iplot_threshold_graph", "iplot_head_grid"]


def _go():
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise MissingDependencyError(
            "interactive figures need plotly: pip install 'attntopo[plots]' (or pip install plotly)"
        ) from None
    return go


def _layout(title: str | None, **kw) -> dict:
    base = dict(
        template="simple_white",
        font=dict(size=12),
        margin=dict(l=60, r=20, t=60 if title else 30, b=60),
        hoverlabel=dict(font_size=12),
    )
    if title:
        base["title"] = dict(text=title, x=0.02, xanchor="left")
    base.update(kw)
    return base


def _threshold_of(dgm: Any) -> float:
    return float(getattr(dgm, "threshold", math.inf))


def iplot_diagram(
    dgm: Any,
    dims: Sequence[int] | int | None = None,
    title: str | None = None,
):
    """Interactive persistence diagram (hover: dimension, birth, death, lifetime).

    Parameters
    ----------
    dgm : Diagram or list of ndarray of shape (k, 2)
    dims : int or list of int, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    go = _go()
    pts = diagram_points(dgm, dims)
    lo, hi, inf_y = diagram_limits([p for _, p in pts], _threshold_of(dgm))
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="#888888", width=1),
                   hoverinfo="skip", showlegend=False)
    )
    has_inf = False
    for d, p in pts:
        finite = np.isfinite(p[:, 1])
        has_inf |= bool((~finite).any())
        y = np.where(finite, p[:, 1], inf_y)
        life = np.where(finite, p[:, 1] - p[:, 0], np.inf)
        text = [
            f"H{d}<br>birth {b:.4g}<br>death {'∞' if not f else f'{e:.4g}'}"
            f"<br>lifetime {'∞' if not f else f'{lt:.4g}'}"
            for b, e, lt, f in zip(p[:, 0], p[:, 1], life, finite)
        ]
        fig.add_trace(
            go.Scatter(
                x=p[:, 0], y=y, mode="markers", name=f"H{d} ({len(p)})", text=text,
                hovertemplate="%{text}<extra></extra>",
                marker=dict(color=S.dim_color(d), symbol=S.DIM_PLOTLY_SYMBOLS[d % 4], size=8,
                            opacity=0.85, line=dict(color="white", width=0.5)),
            )
        )
    top = inf_y - (inf_y - lo) / 11.0
    if has_inf:
        fig.add_hline(y=inf_y, line=dict(color=S.INF_COLOR, dash="dash", width=1))
    ticks = [float(t) for t in np.linspace(lo, top, 5)]
    fig.update_xaxes(title="birth", range=[lo, hi], constrain="domain")
    fig.update_yaxes(
        title="death", range=[lo, hi], scaleanchor="x", scaleratio=1,
        tickvals=ticks + [inf_y], ticktext=[f"{t:.3g}" for t in ticks] + ["∞"],
    )
    fig.update_layout(**_layout(title, width=560, height=540, legend=dict(x=0.98, y=0.02, xanchor="right", yanchor="bottom")))
    return fig


def iplot_distance_matrix(D: Any, labels: Sequence[str] | None = None, title: str | None = None):
    """Interactive heatmap of a token distance matrix (hover: both tokens and their distance).

    Parameters
    ----------
    D : array-like of shape (n, n)
    labels : sequence of str of length n, optional
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    go = _go()
    D = distance_matrix(D)
    n = D.shape[0]
    labels = check_labels(labels, n)
    names = labels if labels is not None else [str(i) for i in range(n)]
    # numeric axes (repeated tokens such as "the" must not collapse into one category)
    custom = np.empty((n, n, 2), dtype=object)
    for i in range(n):
        for j in range(n):
            custom[i, j, 0] = f"{i}: {names[i]}"
            custom[i, j, 1] = f"{j}: {names[j]}"
    fig = go.Figure(
        go.Heatmap(
            z=D, x=list(range(n)), y=list(range(n)), colorscale="Viridis", zmin=0,
            customdata=custom, colorbar=dict(title="distance"),
            hovertemplate="%{customdata[0]} ↔ %{customdata[1]}<br>d = %{z:.4f}<extra></extra>",
        )
    )
    pos, texts = S.thin_labels(labels, n)
    fig.update_xaxes(tickvals=pos, ticktext=texts, tickangle=-90, showgrid=False)
    fig.update_yaxes(tickvals=pos, ticktext=texts, autorange="reversed", scaleanchor="x", showgrid=False)
    side = int(np.clip(420 + 3 * n, 500, 900))
    fig.update_layout(**_layout(title, width=side + 120, height=side))
    return fig


def _complex_xy(X: np.ndarray, edges: np.ndarray, tris: np.ndarray):
    ex, ey = [], []
    for i, j in edges:
        ex += [X[i, 0], X[j, 0], None]
        ey += [X[i, 1], X[j, 1], None]
    tx, ty = [], []
    for i, j, k in tris:
        tx += [X[i, 0], X[j, 0], X[k, 0], X[i, 0], None]
        ty += [X[i, 1], X[j, 1], X[k, 1], X[i, 1], None]
    return ex, ey, tx, ty


def iplot_threshold_graph(
    D: Any,
    scales: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
    highlight: Any = None,
    title: str | None = None,
    *,
    special: Any = None,
    n_scales: int = 16,
    start: int | None = None,
):
    """Interactive Vietoris–Rips complex with a slider over scales (one frame per scale).

    Nodes are placed by classical MDS of ``D``; each slider step shows the edges
    (``D[i, j] <= eps``) and the filled triangles of one scale.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Token distance matrix.
    scales : sequence of float, optional
        The scales of the slider, increasing (default: ``n_scales`` quantiles of the
        pairwise distances).
    labels : sequence of str of length n, optional
    highlight : int, list of int, or bool mask, optional
        Tokens drawn larger in vermillion.
    title : str, optional
    special : bool mask of shape (n,), optional
        Special tokens, drawn in grey.
    n_scales : int
        Number of default scales.
    start : int, optional
        Index of the scale shown first (default: the middle one).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    go = _go()
    D = distance_matrix(D)
    n = D.shape[0]
    labels = check_labels(labels, n)
    hl = check_highlight(highlight, n)
    sp = check_highlight(special, n) if special is not None else np.zeros(n, dtype=bool)
    if scales is None:
        scales = suggest_scales(D, n_scales)
    scales = [check_scale(s, "scales") for s in np.atleast_1d(np.asarray(scales, dtype=object))]
    if not scales:
        raise InvalidInputError("scales must hold at least one positive number")
    scales = sorted(scales)
    start = len(scales) // 2 if start is None else int(start)
    if not 0 <= start < len(scales):
        raise InvalidInputError(f"start must be in 0..{len(scales) - 1}, got {start}")
    X = mds_layout(D)
    names = labels if labels is not None else [str(i) for i in range(n)]
    frames, steps = [], []
    data0 = None
    for k, eps in enumerate(scales):
        edges, tris = threshold_complex(D, eps)
        ex, ey, tx, ty = _complex_xy(X, edges, tris)
        traces = [
            go.Scatter(x=tx, y=ty, mode="lines", fill="toself", fillcolor="rgba(86,180,233,0.18)",
                       line=dict(width=0), hoverinfo="skip", name="triangles", showlegend=False),
            go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=S.EDGE_COLOR, width=1),
                       opacity=0.7, hoverinfo="skip", name="edges", showlegend=False),
        ]
        name = f"{eps:.4g}"
        frames.append(go.Frame(data=traces, traces=[0, 1], name=name,
                               layout=dict(title_text=_graph_title(title, eps, len(edges), len(tris)))))
        steps.append(dict(method="animate", label=name,
                          args=[[name], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                             transition=dict(duration=0))]))
        if k == start:
            data0 = (traces, len(edges), len(tris))
    colors = np.where(hl, S.HIGHLIGHT_COLOR, np.where(sp, S.SPECIAL_COLOR, S.NODE_COLOR))
    nodes = go.Scatter(
        x=X[:, 0], y=X[:, 1], mode="markers+text" if n <= 60 else "markers",
        text=[S.short_label(t) for t in names], textposition="top right", textfont=dict(size=10),
        customdata=[f"{i}: {names[i]}" for i in range(n)],
        hovertemplate="%{customdata}<extra></extra>",
        marker=dict(color=list(colors), size=np.where(hl, 13, 9).tolist(), line=dict(color="white", width=1)),
        showlegend=False, name="tokens",
    )
    traces, n_e, n_t = data0
    fig = go.Figure(data=traces + [nodes], frames=frames)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    fig.update_layout(
        **_layout(_graph_title(title, scales[start], n_e, n_t), width=760, height=720),
        sliders=[dict(active=start, steps=steps, currentvalue=dict(prefix="ε = "), pad=dict(t=30))],
    )
    return fig


def _graph_title(title: str | None, eps: float, n_edges: int, n_tris: int) -> str:
    head = f"{title} · " if title else ""
    return f"{head}threshold graph at ε = {eps:.3g} · {n_edges} edges · {n_tris} triangles"


def iplot_head_grid(analysis: Any, stat: str = "max_persistence_h1", title: str | None = None):
    """Heatmap of a summary statistic over layers × heads, with a menu to switch statistics.

    Parameters
    ----------
    analysis : Analysis
    stat : str
        Column of :meth:`Analysis.summary` shown first (e.g. ``"max_persistence_h1"``).
    title : str, optional

    Returns
    -------
    plotly.graph_objects.Figure
    """
    go = _go()
    if not all(hasattr(analysis, a) for a in ("summary", "layers", "heads")):
        raise InvalidInputError(
            f"expected an attntopo Analysis (from attntopo.analyze), got {type(analysis).__name__}"
        )
    table = analysis.summary()
    stats = [k for k in table if k not in ("layer", "head")]
    if stat not in stats:
        raise InvalidInputError(f"unknown statistic {stat!r}; allowed: {', '.join(stats)}")
    layers, heads = list(analysis.layers), list(analysis.heads)
    L, H = len(layers), len(heads)
    mats = {k: np.asarray(table[k], dtype=np.float64).reshape(L, H) for k in stats}
    fig = go.Figure(
        go.Heatmap(
            z=mats[stat], x=[str(h) for h in heads], y=[str(l_) for l_ in layers],
            colorscale="Viridis", colorbar=dict(title=stat.replace("_", " ")),
            hovertemplate="layer %{y}, head %{x}<br>%{z:.4g}<extra></extra>",
        )
    )
    buttons = [
        dict(label=k, method="restyle",
             args=[{"z": [mats[k].tolist()], "colorbar.title.text": k.replace("_", " ")}])
        for k in stats
    ]
    a = analysis.attention
    fig.update_xaxes(title="head", type="category")
    fig.update_yaxes(title="layer", type="category", autorange="reversed")
    fig.update_layout(
        **_layout(title or f"{a.model} · {a.n_tokens} tokens · {analysis.metric}",
                  width=int(np.clip(240 + 48 * H, 480, 1000)), height=int(np.clip(200 + 26 * L, 360, 1000))),
        updatemenus=[dict(buttons=buttons, active=stats.index(stat), x=1.0, xanchor="right", y=1.12,
                          yanchor="top", direction="down")],
    )
    return fig
