"""Interactive twins of the static figures, with plotly.

Every function returns a :class:`plotly.graph_objects.Figure` with hover text on every mark.
Save it with :func:`attntopo.plots.save_figure` as ``.html`` (standalone: plotly.js is inlined,
so the file opens offline and never loads a CDN).
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidInputError, MissingDependencyError
from ..topology.complex import complex_at
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
from .slider import MAX_DRAWN_EDGES, MAX_DRAWN_TRIANGLES, check_scales, graph_slider, step_codes

__all__ = [
    "iplot_diagram",
    "iplot_distance_matrix",
    "iplot_threshold_graph",
    "iplot_head_grid",
    "threshold_graph_script",
    "threshold_graph_page",
    "threshold_graph_eps",
    "MAX_DRAWN_EDGES",
    "MAX_DRAWN_TRIANGLES",
]


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
    *,
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
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            line=dict(color="#888888", width=1),
            hoverinfo="skip",
            showlegend=False,
        )
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
                x=p[:, 0],
                y=y,
                mode="markers",
                name=f"H{d} ({len(p)})",
                text=text,
                hovertemplate="%{text}<extra></extra>",
                marker=dict(
                    color=S.dim_color(d),
                    symbol=S.DIM_PLOTLY_SYMBOLS[d % 4],
                    size=8,
                    opacity=0.85,
                    line=dict(color="white", width=0.5),
                ),
            )
        )
    top = inf_y - (inf_y - lo) / 11.0
    if has_inf:
        fig.add_hline(y=inf_y, line=dict(color=S.INF_COLOR, dash="dash", width=1))
    ticks = [float(t) for t in np.linspace(lo, top, 5)]
    fig.update_xaxes(title="birth", range=[lo, hi], constrain="domain")
    fig.update_yaxes(
        title="death",
        range=[lo, hi],
        scaleanchor="x",
        scaleratio=1,
        tickvals=ticks + [inf_y],
        ticktext=[f"{t:.3g}" for t in ticks] + ["∞"],
    )
    fig.update_layout(
        **_layout(
            title,
            width=560,
            height=540,
            legend=dict(x=0.98, y=0.02, xanchor="right", yanchor="bottom"),
        )
    )
    return fig


def iplot_distance_matrix(D: Any, *, labels: Sequence[str] | None = None, title: str | None = None):
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
    labels = check_labels(labels, n=n)
    names = labels if labels is not None else [str(i) for i in range(n)]
    # one category per token, "i: token" (repeated tokens such as "the" stay apart), so the hover
    # names both tokens from n strings instead of n² (the file stays O(n²) numbers); the
    # distances travel as float32 (7 significant digits, more than the 4 the hover shows)
    cats = [f"{i}: {names[i]}" for i in range(n)]
    fig = go.Figure(
        go.Heatmap(
            z=D.astype(np.float32),
            x=cats,
            y=cats,
            colorscale="Viridis",
            zmin=0,
            colorbar=dict(title="distance"),
            hovertemplate="%{y} ↔ %{x}<br>d = %{z:.4f}<extra></extra>",
        )
    )
    pos, texts = S.thin_labels(labels, n)
    ticks = [cats[p] for p in pos]
    fig.update_xaxes(type="category", tickvals=ticks, ticktext=texts, tickangle=-90, showgrid=False)
    fig.update_yaxes(
        type="category",
        tickvals=ticks,
        ticktext=texts,
        autorange="reversed",
        scaleanchor="x",
        showgrid=False,
    )
    side = int(np.clip(420 + 3 * n, 500, 900))
    fig.update_layout(**_layout(title, width=side + 120, height=side))
    return fig


def _closed_paths(X: np.ndarray, simplices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x and y of the polylines through each simplex's vertices, NaN between simplices.

    Edges ``(m, 2)`` give segments ``a b NaN``; triangles ``(t, 3)`` closed outlines
    ``a b c a NaN``.  float32 NumPy arrays: plotly validates them at once and sends them as
    base64 (4 bytes a number; screen positions need far fewer than float32's 7 digits).
    """
    simplices = np.asarray(simplices, dtype=np.int64)  # (m, 2) or (t, 3), m or t may be 0
    idx = simplices if simplices.shape[1] == 2 else np.c_[simplices, simplices[:, :1]]
    pts = np.full((idx.shape[0], idx.shape[1] + 1, 2), np.nan, dtype=np.float32)
    pts[:, :-1] = X[idx]
    return pts[..., 0].ravel(), pts[..., 1].ravel()


def _count_triangles(steps_matrix: np.ndarray, k: int) -> int:
    """Triangles of the graph ``steps_matrix <= k``
    (trace of A³ / 6, exact in float64 for n ≤ 10⁵)."""
    A = (steps_matrix <= k).astype(np.float64)
    np.fill_diagonal(A, 0.0)
    return int(round(float(np.einsum("ij,ji->", A @ A, A)) / 6.0))


def _largest_step(k: int, fits: Any) -> int:
    """The largest step ``s <= k`` with ``fits(s)`` (``-1``: none), for a monotone ``fits``."""
    if k < 0 or fits(k):
        return k
    lo, hi = -1, k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _drawn_steps(edges_at: np.ndarray, triangles_at: Any, k: int) -> tuple[int, int]:
    """The steps whose edges and whose triangles are drawn at step ``k`` (``-1``: none).

    Edges: the largest step ``<= k`` with at most :data:`MAX_DRAWN_EDGES`; triangles: the
    largest step ``<=`` that one with at most :data:`MAX_DRAWN_TRIANGLES` (so every shaded
    triangle's edges are drawn).  The same rule as ``drawnSteps`` in
    ``assets/threshold_graph.js``.
    """
    d_e = _largest_step(k, lambda s: edges_at[s] <= MAX_DRAWN_EDGES)
    return d_e, _largest_step(d_e, lambda s: triangles_at(s) <= MAX_DRAWN_TRIANGLES)


@functools.lru_cache(maxsize=None)
def _asset_js(name: str) -> str:
    return resources.files("attntopo.plots").joinpath(f"assets/{name}").read_text(encoding="utf-8")


# figures whose slider the page computes: meta kind -> (assets inlined in order, attach function)
_PAGE_SCRIPTS = {
    "threshold_graph": (("scale_slider.js", "threshold_graph.js"), "attntopoThresholdGraph"),
    "compare_graphs": (("scale_slider.js", "compare_graphs.js"), "attntopoCompareGraphs"),
}


def _page_kind(fig: Any) -> str | None:
    meta = getattr(getattr(fig, "layout", None), "meta", None)
    if not (isinstance(meta, dict) and isinstance(meta.get("attntopo"), dict)):
        return None
    kind = meta["attntopo"].get("kind")
    return kind if kind in _PAGE_SCRIPTS else None


def threshold_graph_script(fig: Any) -> str | None:
    """The script that gives a threshold graph its ε slider, for ``to_html(post_script=…)``.

    ``None`` for any other figure.  attntopo's HTML writers (:func:`attntopo.plots.save_figure`,
    :func:`~attntopo.plots.plotly_div`, :func:`~attntopo.plots.figures_to_html`, the reports) add
    it; the script defines ``attntopoThresholdGraph`` once per page (inlined, no request) and
    attaches it to the figure's ``<div>`` (plotly's ``{plot_id}``).  The two-text graphs of
    :func:`attntopo.plots.iplot_compare_graphs` get theirs (``attntopoCompareGraphs``) too.
    """
    kind = _page_kind(fig)
    if kind is None:
        return None
    assets, attach = _PAGE_SCRIPTS[kind]
    return (
        "\n".join(_asset_js(a) for a in assets)
        + f"\n{attach}(document.getElementById('{{plot_id}}'));"
    )


def threshold_graph_page(fig: Any) -> tuple[Any, str | None]:
    """``(figure, script)`` for a page: a threshold graph (or two-text graphs) without its drawn
    edges and triangles (the script draws them: no copy of the opening state in the file) and
    its script; any other figure as it is, with ``None``."""
    script = threshold_graph_script(fig)
    if script is None:
        return fig, None
    page = _go().Figure(fig)
    traces = fig.layout.meta["attntopo"]["traces"]
    for k in traces.get("dynamic") or (traces["triangles"], traces["edges"]):
        page.data[k].update(x=[], y=[])
    return page, script


def threshold_graph_eps(fig: Any) -> float:
    """The scale ε a figure of :func:`iplot_threshold_graph` opens at."""
    if _page_kind(fig) != "threshold_graph":
        raise InvalidInputError("expected a figure of attntopo.plots.iplot_threshold_graph")
    m = fig.layout.meta["attntopo"]
    return float(m["scales"][m["start"]])


def iplot_threshold_graph(
    D: Any,
    *,
    scales: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
    highlight: Any = None,
    title: str | None = None,
    special: Any = None,
    n_scales: int = 100,
    start: int | None = None,
    scale: float | None = None,
):
    """Interactive Vietoris–Rips complex with a slider over scales, computed in the browser.

    Nodes are placed by classical MDS of ``D``.  The figure carries the matrix once, as
    one number per token pair: the slider step at which that pair's edge appears (exact for
    every position the slider can take; 1 byte per pair up to 255 steps, 2 beyond).  In the
    page, a small inlined script (``assets/threshold_graph.js``, no request) draws for the
    chosen ε the edges (``D[i, j] <= scale``) and the filled triangles (all three sides
    ``<= scale``): the counts under the slider equal :func:`attntopo.complex_at`'s, ties
    included.  The file grows as n² (one matrix), not as steps · n³.

    Drawing is capped at :data:`MAX_DRAWN_EDGES` edges and :data:`MAX_DRAWN_TRIANGLES`
    triangles: beyond, the page draws the edges (or triangles) of the largest earlier step
    within the cap, says so, and keeps the counts exact.

    The slider works in the HTML that attntopo writes (:func:`attntopo.plots.save_figure` as
    ``.html``, :func:`~attntopo.plots.figures_to_html`, :func:`~attntopo.plots.plotly_div`,
    the reports); elsewhere (``fig.show()``, ``fig.write_html``, static export) the figure
    shows the opening scale.  For ``fig.write_html`` pass
    ``post_script=threshold_graph_script(fig)``.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Token distance matrix.
    scales : sequence of float, optional
        The scales of the slider, increasing (default: ``n_scales`` quantiles of the
        pairwise distances).  At most 65535.
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
    scale : float, optional
        The scale shown first (e.g. :func:`attntopo.plots.suggest_scale`); added to the
        slider's scales when missing, so that the slider holds it exactly.  Give ``scale`` or
        ``start``, not both.

    Returns
    -------
    plotly.graph_objects.Figure
        Its ``layout.meta["attntopo"]`` holds the slider's data (``scales``, ``start``,
        ``steps``); :func:`threshold_graph_eps` reads the opening scale.
    """
    go = _go()
    D = distance_matrix(D)
    n = D.shape[0]
    labels = check_labels(labels, n=n)
    hl = check_highlight(highlight, n)
    sp = check_highlight(special, n) if special is not None else np.zeros(n, dtype=bool)
    if scales is None:
        scales = suggest_scales(D, n_scales=n_scales)
    scales = [check_scale(s, "scales") for s in np.atleast_1d(np.asarray(scales, dtype=object))]
    if scale is not None:
        if start is not None:
            raise InvalidInputError(
                "give scale (the scale shown first) or start (its index), not both"
            )
        scale = check_scale(scale, "scale")
        scales.append(scale)
    scales = check_scales(np.asarray(scales, dtype=np.float64))
    if scale is not None:
        start = int(np.searchsorted(scales, scale))
    start = scales.size // 2 if start is None else int(start)
    slider = graph_slider(D, scales, start)  # the one slider's record (plots/slider.py)
    codes = step_codes(D, scales)
    # the opening state, drawn in Python too (the figure is right before any script runs)
    steps_m = np.zeros((n, n), dtype=np.int64)
    steps_m[np.triu_indices(n, 1)] = codes
    steps_m = steps_m + steps_m.T
    edges_at = np.cumsum(np.bincount(codes, minlength=scales.size + 1))
    triangles_at = functools.lru_cache(maxsize=None)(lambda k: _count_triangles(steps_m, k))
    d_e, d_t = _drawn_steps(edges_at, triangles_at, start)
    X = mds_layout(D)
    edges = (
        complex_at(D, float(scales[d_e]), max_simplex_dim=1).simplices(1)
        if d_e >= 0
        else np.zeros((0, 2))
    )
    tris = threshold_complex(D, float(scales[d_t]))[1] if d_t >= 0 else np.zeros((0, 3))
    (ex, ey), (tx, ty) = _closed_paths(X, edges), _closed_paths(X, tris)
    names = labels if labels is not None else [str(i) for i in range(n)]
    colors = np.where(hl, S.HIGHLIGHT_COLOR, np.where(sp, S.SPECIAL_COLOR, S.NODE_COLOR))
    traces = [
        go.Scatter(
            x=tx,
            y=ty,
            mode="lines",
            fill="toself",
            fillcolor="rgba(86,180,233,0.18)",
            line=dict(width=0),
            hoverinfo="skip",
            name="triangles",
            showlegend=False,
        ),
        go.Scatter(
            x=ex,
            y=ey,
            mode="lines",
            line=dict(color=S.EDGE_COLOR, width=1),
            opacity=0.7,
            hoverinfo="skip",
            name="edges",
            showlegend=False,
        ),
        go.Scatter(
            # plain lists (not base64 arrays): the page's script reads them from the figure
            x=X[:, 0].tolist(),
            y=X[:, 1].tolist(),
            mode="markers+text" if n <= 60 else "markers",
            text=[S.short_label(t) for t in names],
            textposition="top right",
            textfont=dict(size=10),
            customdata=[f"{i}: {names[i]}" for i in range(n)],
            hovertemplate="%{customdata}<extra></extra>",
            marker=dict(
                color=list(colors),
                size=np.where(hl, 13, 9).tolist(),
                line=dict(color="white", width=1),
            ),
            showlegend=False,
            name="tokens",
        ),
    ]
    width = 760
    meta = dict(
        kind="threshold_graph",
        version=2,
        **slider,
        traces=dict(triangles=0, edges=1, nodes=2),
        width=width,
        title_prefix=f"{title} · " if title else "",
    )
    fig = go.Figure(data=traces)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x", scaleratio=1)
    fig.update_layout(
        **_layout(
            _graph_title(title, float(scales[start]), int(edges_at[start]), triangles_at(start)),
            width=width,
            height=720,
        ),
        meta=dict(attntopo=meta),
    )
    return fig


def _graph_title(title: str | None, scale: float, n_edges: int, n_tris: int) -> str:
    head = f"{title} · " if title else ""
    return (
        f"{head}threshold graph at ε = {scale:.3g} · {n_edges} edge{'' if n_edges == 1 else 's'}"
        f" · {n_tris} triangle{'' if n_tris == 1 else 's'}"
    )


def iplot_head_grid(analysis: Any, *, stat: str = "max_persistence_h1", title: str | None = None):
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
            z=mats[stat],
            x=[str(h) for h in heads],
            y=[str(l_) for l_ in layers],
            colorscale="Viridis",
            colorbar=dict(title=S.column_title(stat)),
            hovertemplate="layer %{y}, head %{x}<br>%{z:.4g}<extra></extra>",
        )
    )
    buttons = [
        dict(
            label=S.column_title(k),
            method="restyle",
            args=[{"z": [mats[k].tolist()], "colorbar.title.text": S.column_title(k)}],
        )
        for k in stats
    ]
    a = analysis.attention
    fig.update_xaxes(title="head", type="category")
    fig.update_yaxes(title="layer", type="category", autorange="reversed")
    fig.update_layout(
        **_layout(
            title or f"{a.model} · {a.n_tokens} tokens · {S.metric_name(analysis.metric)} distance",
            width=int(np.clip(240 + 48 * H, 480, 1000)),
            height=int(np.clip(200 + 26 * L, 360, 1000)),
        ),
        updatemenus=[
            dict(
                buttons=buttons,
                active=stats.index(stat),
                x=1.0,
                xanchor="right",
                y=1.12,
                yanchor="top",
                direction="down",
            )
        ],
    )
    return fig
