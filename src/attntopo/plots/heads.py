"""Figures of head space (:class:`~attntopo.analyses.HeadSpace`), head types and
model-to-model comparisons.

* :func:`plot_head_distances` — the head-distance matrix as a heatmap, heads ordered by the
  single-linkage dendrogram (close heads adjacent), with a colour band per layer along
  both axes.
* :func:`plot_head_mds` — the heads as points of the 2-D classical MDS embedding, coloured
  by layer or by type; :func:`iplot_head_mds` is its interactive twin (plotly, hover labels;
  save as standalone ``.html`` with :func:`attntopo.plots.save_figure`, plotly.js inlined).
* :func:`plot_head_barcode` — the barcode of the head space's persistence diagram.
* :func:`plot_head_types` — a layers × heads grid of type labels.
* :func:`plot_model_diagrams` — two models' head-space diagrams overlaid.

Conventions as in the rest of :mod:`attntopo.plots`: each function returns a figure, takes
``ax=`` when it draws one panel, never calls ``show()`` and never changes ``rcParams``.
Types are told apart by colour (Okabe–Ito) *and* by marker or letter code.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import BoundaryNorm, ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..errors import InvalidInputError
from . import _style as S
from .interactive import _go
from .static import _figure_and_axes, _overlay_diagrams, _root_figure, side_colorbar

__all__ = [
    "plot_head_distances",
    "plot_head_mds",
    "iplot_head_mds",
    "plot_head_barcode",
    "plot_head_types",
    "plot_model_diagrams",
    "TYPE_COLORS",
    "TYPE_MARKERS",
    "TYPE_CODES",
    "LAYER_CMAP",
]

#: Colour of each head type (Okabe–Ito).
TYPE_COLORS = {
    "sink": S.OKABE_ITO["vermillion"],
    "self": S.OKABE_ITO["blue"],
    "previous": S.OKABE_ITO["sky_blue"],
    "next": S.OKABE_ITO["bluish_green"],
    "broad": S.OKABE_ITO["yellow"],
    "banded": S.OKABE_ITO["orange"],
    "vertical": S.OKABE_ITO["reddish_purple"],
    "mixed": "#BBBBBB",
}
#: matplotlib marker of each head type (so types never depend on colour alone).
TYPE_MARKERS = {
    "sink": "X",
    "self": "o",
    "previous": "<",
    "next": ">",
    "broad": "s",
    "banded": "D",
    "vertical": "^",
    "mixed": ".",
}
_PLOTLY_TYPE_SYMBOLS = {
    "sink": "x",
    "self": "circle",
    "previous": "triangle-left",
    "next": "triangle-right",
    "broad": "square",
    "banded": "diamond",
    "vertical": "triangle-up",
    "mixed": "circle-open",
}
#: Two-letter code of each type, written in the cells of :func:`plot_head_types`.
TYPE_CODES = {
    "sink": "sk",
    "self": "se",
    "previous": "pr",
    "next": "nx",
    "broad": "br",
    "banded": "bd",
    "vertical": "vt",
    "mixed": "mx",
}
#: Colormap of layer indices (ordered, colour-blind safe; distances use viridis).
LAYER_CMAP = "plasma"
_MODEL_COLORS = (S.OKABE_ITO["blue"], S.OKABE_ITO["orange"])
_DARK = {"sink", "self", "vertical", "next"}  # cells whose code is written in white


# ----------------------------------------------------------------- helpers


def _check_space(hs: Any) -> None:
    if not all(hasattr(hs, a) for a in ("distances", "embedding", "layers", "heads", "diagram")):
        raise InvalidInputError(
            f"expected a HeadSpace (from attntopo.head_space), got {type(hs).__name__}"
        )


def _types_of(hs: Any, types: Any) -> Any:
    t = types if types is not None else getattr(hs, "types", None)
    if t is None or not hasattr(t, "labels"):
        raise InvalidInputError(
            "no head types: build the head space with types=True or pass "
            "types=attntopo.head_types(...)"
        )
    if np.asarray(t.labels).size != hs.distances.shape[0]:
        raise InvalidInputError("the head types are of another set of heads than the head space")
    return t


def _style(ax: Axes) -> None:
    ax.tick_params(labelsize=S.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _layer_colors(n_layers: int) -> np.ndarray:
    cmap = colormaps[LAYER_CMAP]
    return cmap(np.linspace(0.0, 0.9, max(n_layers, 1)))[:n_layers]


def _unit(hs: Any) -> str:
    if getattr(hs, "layers_summed", False):
        return "JS distance (natural log) summed over tokens and layers"
    return (
        "mean JS distance per token"
        if getattr(hs, "normalize", True)
        else "JS distance summed over tokens"
    )


def _layer_colorbar(ax: Axes, names: Sequence[str], colors: np.ndarray, *, x: float) -> Any:
    """A discrete colour bar of the layer colours beside ``ax`` (at ``x`` in axes fractions),
    as tall as the axes, one block per layer, at most ~10 tick labels."""
    from matplotlib.cm import ScalarMappable

    L = len(names)
    sm = ScalarMappable(norm=BoundaryNorm(np.arange(L + 1) - 0.5, L), cmap=ListedColormap(colors))
    cax = ax.inset_axes([x, 0.0, 0.035, 1.0])
    cb = ax.figure.colorbar(sm, cax=cax)
    step = max(1, int(np.ceil(L / 10)))
    cb.set_ticks(list(range(0, L, step)), labels=[names[i] for i in range(0, L, step)])
    cb.set_label("layer (bands along the axes)", fontsize=S.FONT["label"])
    cb.ax.tick_params(labelsize=S.FONT["tick"])
    cb.ax.invert_yaxis()  # layer 0 on top, as in the matrix
    return cb


def _layer_scale(hs: Any) -> tuple[list[str], np.ndarray]:
    """The layer colour scale's entries and each point's position on it: one entry per layer,
    or a single "all" where every point sums the layers (the paper's heads notebook)."""
    if getattr(hs, "layers_summed", False):
        return ["all"], np.zeros(hs.distances.shape[0], dtype=np.int64)
    return [str(li) for li in hs.layers], np.repeat(np.arange(len(hs.layers)), len(hs.heads))


# -------------------------------------------------------------- heatmap
def plot_head_distances(
    hs: Any,
    *,
    ax: Axes | None = None,
    order: str = "dendrogram",
    layer_bands: bool = True,
    title: str | None = None,
) -> Figure:
    """Head-distance heatmap.

    Parameters
    ----------
    hs : HeadSpace
    ax : matplotlib Axes, optional
    order : {"dendrogram", "layer"}
        ``"dendrogram"``: the leaves of the single-linkage dendrogram (heads that merge early
        sit next to each other, so redundant groups show as dark blocks); ``"layer"``:
        layer-major model order.
    layer_bands : bool
        Draw a colour strip (one colour per layer, :data:`LAYER_CMAP`) along both axes.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_space(hs)
    if order not in ("dendrogram", "layer"):
        raise InvalidInputError(f"order must be 'dendrogram' or 'layer', got {order!r}")
    D = np.asarray(hs.distances, dtype=np.float64)
    N = D.shape[0]
    idx = np.asarray(hs.leaf_order()) if order == "dendrogram" else np.arange(N)
    M = D[np.ix_(idx, idx)]
    side = float(np.clip(3.0 + 0.02 * N, 4.2, 9.0))
    fig, ax = _figure_and_axes(ax, (side + 0.9, side))
    im = ax.imshow(M, cmap=S.DISTANCE_CMAP, interpolation="nearest", extent=(0, N, N, 0))
    side_colorbar(ax, im, _unit(hs), width=0.035, pad=0.02)
    labels = [hs.labels[i] for i in idx]
    step = S.label_step(N, 80)
    pos = list(range(0, N, step))
    texts = [labels[p] for p in pos]
    fs = S.FONT["grid_tick"] if N > 40 else S.FONT["token"]
    ax.set_xticks([p + 0.5 for p in pos], texts, rotation=90, fontsize=fs)
    ax.set_yticks([p + 0.5 for p in pos], texts, fontsize=fs)
    ax.tick_params(length=2)
    if layer_bands:
        w = max(1.0, 0.025 * N)
        names, layer_pos = _layer_scale(hs)
        layer_pos = layer_pos[idx]
        colors = _layer_colors(len(names))
        for k, lp in enumerate(layer_pos):
            c = colors[lp]
            ax.add_patch(Rectangle((k, -w - 0.3), 1, w, color=c, lw=0, clip_on=False))
            ax.add_patch(Rectangle((-w - 0.3, k), w, 1, color=c, lw=0, clip_on=False))
        ax.set_xlim(-w - 0.3, N)
        ax.set_ylim(N, -w - 0.3)
        if len(names) <= 12:
            handles = [
                Patch(color=colors[i], label="all layers" if li == "all" else f"L{li}")
                for i, li in enumerate(names)
            ]
            ax.legend(
                handles=handles,
                fontsize=S.FONT["legend"] - 1,
                frameon=False,
                loc="upper left",
                bbox_to_anchor=(1.0, -0.02),
                title="layer",
                title_fontsize=S.FONT["legend"] - 1,
                handlelength=0.8,
            )
        else:  # too many layers for a legend: a discrete colour bar of the layers, ticks thinned
            _layer_colorbar(ax, names, colors, x=1.17)
    for s in ax.spines.values():
        s.set_visible(False)
    what = "dendrogram order" if order == "dendrogram" else "layer order"
    ax.set_title(
        title or f"head distances · {hs.model} · {N} heads ({what})", fontsize=S.FONT["title"]
    )
    return fig


# --------------------------------------------------------------------- MDS
def plot_head_mds(
    hs: Any,
    *,
    color_by: str = "layer",
    ax: Axes | None = None,
    types: Any = None,
    annotate: bool | int = False,
    title: str | None = None,
) -> Figure:
    """The heads in the 2-D classical MDS embedding of head space.

    Parameters
    ----------
    hs : HeadSpace
    color_by : {"layer", "type"}
        ``"layer"``: colour by layer (:data:`LAYER_CMAP`, with a colour bar); ``"type"``:
        colour and marker by head type (:data:`TYPE_COLORS`, :data:`TYPE_MARKERS`).
    ax : matplotlib Axes, optional
    types : HeadTypes, optional
        Types to colour by (default: ``hs.types``).
    annotate : bool or int
        Write head labels next to the points: ``True`` for all, an int ``k`` for the ``k``
        heads farthest from the centre.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    _check_space(hs)
    if color_by not in ("layer", "type"):
        raise InvalidInputError(f"color_by must be 'layer' or 'type', got {color_by!r}")
    X = np.asarray(hs.embedding, dtype=np.float64)
    N = X.shape[0]
    fig, ax = _figure_and_axes(ax, (5.6, 4.6))
    size = float(np.clip(2400.0 / max(N, 1), 12.0, 60.0))
    if color_by == "layer":
        names, layer_pos = _layer_scale(hs)
        L = len(names)
        cmap = ListedColormap(_layer_colors(L))
        norm = BoundaryNorm(np.arange(L + 1) - 0.5, L)
        sc = ax.scatter(
            X[:, 0],
            X[:, 1],
            c=layer_pos,
            cmap=cmap,
            norm=norm,
            s=size,
            edgecolors="white",
            linewidths=0.4,
            zorder=3,
        )
        cb = _root_figure(ax).colorbar(sc, ax=ax, shrink=0.85, pad=0.02)
        step = max(1, int(np.ceil(L / 10)))
        cb.set_ticks(list(range(0, L, step)), labels=[names[i] for i in range(0, L, step)])
        cb.set_label("layer", fontsize=S.FONT["label"])
        cb.ax.tick_params(labelsize=S.FONT["tick"])
    else:
        t = _types_of(hs, types)
        labs = np.asarray(t.labels).reshape(-1)
        for name in TYPE_COLORS:
            sel = labs == name
            if not sel.any():
                continue
            ax.scatter(
                X[sel, 0],
                X[sel, 1],
                s=size * (1.6 if name == "mixed" else 1.0),
                marker=TYPE_MARKERS[name],
                color=TYPE_COLORS[name],
                edgecolors="#333333" if name in ("broad", "mixed") else "white",
                linewidths=0.4,
                zorder=3,
                label=f"{name} ({int(sel.sum())})",
            )
        ax.legend(
            fontsize=S.FONT["legend"],
            frameon=False,
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
            title="head type",
            title_fontsize=S.FONT["legend"],
        )
    if annotate:
        labels = hs.labels
        if annotate is True:
            chosen = range(N)
        else:
            r = np.linalg.norm(X - X.mean(0), axis=1)
            chosen = np.argsort(-r, kind="stable")[: int(annotate)]
        for i in chosen:
            ax.annotate(
                labels[i],
                X[i],
                fontsize=S.FONT["grid_label"] - 1,
                xytext=(3, 3),
                textcoords="offset points",
                color="#333333",
            )
    ax.set_aspect("equal", adjustable="datalim")
    share = hs.mds_explained() if hasattr(hs, "mds_explained") else float("nan")
    ax.set_xlabel("MDS 1", fontsize=S.FONT["label"])
    ax.set_ylabel("MDS 2", fontsize=S.FONT["label"])
    _style(ax)
    ax.set_title(
        title or f"head space · {hs.model} · {N} heads (MDS, {share:.0%} of the geometry)",
        fontsize=S.FONT["title"],
    )
    return fig


def _hex(rgba: Sequence[float]) -> str:
    r, g, b = (int(round(255 * float(c))) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def iplot_head_mds(
    hs: Any, *, color_by: str = "layer", types: Any = None, title: str | None = None
):
    """Interactive twin of :func:`plot_head_mds` (plotly), with hover labels.

    Hovering a point shows the head (``L3H4``), its layer and head, its type (when known),
    its nearest head and their distance.  Save with
    ``attntopo.plots.save_figure(fig, "heads.html")``: one standalone file with plotly.js
    inlined (no CDN, works offline).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    _check_space(hs)
    if color_by not in ("layer", "type"):
        raise InvalidInputError(f"color_by must be 'layer' or 'type', got {color_by!r}")
    go = _go()
    X = np.asarray(hs.embedding, dtype=np.float64)
    N = X.shape[0]
    labels = hs.labels
    names, layer_pos = _layer_scale(hs)
    layer_of = np.array(names, dtype=object)[layer_pos]
    head_of = np.tile(np.asarray(hs.heads), len(layer_pos) // max(len(hs.heads), 1))
    t = types if types is not None else getattr(hs, "types", None)
    labs = None if t is None else np.asarray(t.labels).reshape(-1)
    if color_by == "type" and labs is None:
        _types_of(hs, types)  # raises with the message
    D = np.asarray(hs.distances, dtype=np.float64).copy()
    np.fill_diagonal(D, np.inf)
    nn = D.argmin(1) if N > 1 else np.zeros(N, int)
    hover = []
    for i in range(N):
        s = f"<b>{labels[i]}</b><br>layer {layer_of[i]}, head {head_of[i]}"
        if labs is not None:
            s += f"<br>type: {labs[i]}"
        if N > 1:
            s += f"<br>nearest: {labels[nn[i]]} ({D[i, nn[i]]:.3g})"
        hover.append(s)
    hover = np.array(hover, dtype=object)
    fig = go.Figure()
    if color_by == "layer":
        colors = [_hex(c) for c in _layer_colors(len(names))]
        for k, li in enumerate(names):
            sel = layer_pos == k
            fig.add_trace(
                go.Scatter(
                    x=X[sel, 0],
                    y=X[sel, 1],
                    mode="markers",
                    name=f"layer {li}",
                    marker=dict(color=colors[k], size=9, line=dict(color="white", width=0.5)),
                    text=hover[sel],
                    hovertemplate="%{text}<extra></extra>",
                )
            )
    else:
        for name in TYPE_COLORS:
            sel = labs == name
            if not sel.any():
                continue
            fig.add_trace(
                go.Scatter(
                    x=X[sel, 0],
                    y=X[sel, 1],
                    mode="markers",
                    name=f"{name} ({int(sel.sum())})",
                    marker=dict(
                        color=TYPE_COLORS[name],
                        size=10,
                        symbol=_PLOTLY_TYPE_SYMBOLS[name],
                        line=dict(color="#333333", width=0.5),
                    ),
                    text=hover[sel],
                    hovertemplate="%{text}<extra></extra>",
                )
            )
    share = hs.mds_explained() if hasattr(hs, "mds_explained") else float("nan")
    fig.update_layout(
        template="simple_white",
        title=dict(
            text=title or f"head space · {hs.model} · {N} heads (MDS, {share:.0%} of the geometry)",
            x=0.02,
            xanchor="left",
        ),
        xaxis=dict(title="MDS 1", zeroline=False),
        yaxis=dict(title="MDS 2", zeroline=False, scaleanchor="x", scaleratio=1),
        legend=dict(title="layer" if color_by == "layer" else "head type"),
        margin=dict(l=60, r=20, t=60, b=60),
        hoverlabel=dict(font_size=12),
    )
    return fig


# ------------------------------------------------------------------ barcode
def plot_head_barcode(
    hs: Any,
    *,
    ax: Axes | None = None,
    dims: Sequence[int] | int | None = None,
    title: str | None = None,
) -> Figure:
    """Barcode of the head space's persistence diagram (H0: how heads merge into clusters;
    H1: loops of heads).  Drawn by :func:`attntopo.plots.plot_barcode`."""
    _check_space(hs)
    from .static import plot_barcode

    return plot_barcode(
        hs.diagram,
        ax=ax,
        dims=dims,
        title=title or f"head-space barcode · {hs.model} · {hs.distances.shape[0]} heads",
    )


# ------------------------------------------------------------ types grid
def plot_head_types(types: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """A layers × heads grid of head-type labels (colour and two-letter code per type).

    Parameters
    ----------
    types : HeadTypes or HeadSpace
        The types (a head space's ``.types`` is used when a HeadSpace is given).
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if hasattr(types, "distances") and hasattr(types, "types"):
        types = _types_of(types, None)
    if not hasattr(types, "labels") or not hasattr(types, "layers"):
        raise InvalidInputError(
            f"expected HeadTypes (from attntopo.head_types), got {type(types).__name__}"
        )
    labs = np.asarray(types.labels)
    L, H = labs.shape
    names = list(TYPE_COLORS)
    code = np.vectorize(names.index)(labs) if labs.size else labs
    fig, ax = _figure_and_axes(ax, (min(12.0, 2.2 + 0.45 * H), min(14.0, 1.4 + 0.3 * L)))
    cmap = ListedColormap([TYPE_COLORS[n] for n in names])
    ax.imshow(
        code,
        cmap=cmap,
        norm=Normalize(-0.5, len(names) - 0.5),
        aspect="auto",
        interpolation="nearest",
    )
    fs = S.FONT["grid_tick"] if L * H > 120 else S.FONT["grid_label"]
    for i in range(L):
        for j in range(H):
            lab = labs[i, j]
            ax.text(
                j,
                i,
                TYPE_CODES[lab],
                ha="center",
                va="center",
                fontsize=fs,
                color="white" if lab in _DARK else "#222222",
            )
    ystep = max(1, int(np.ceil(L / 30)))
    ax.set_yticks(range(0, L, ystep), [str(types.layers[i]) for i in range(0, L, ystep)])
    ax.set_xticks(range(H), [str(h) for h in types.heads])
    ax.set_xlabel("head", fontsize=S.FONT["label"])
    ax.set_ylabel("layer", fontsize=S.FONT["label"])
    ax.tick_params(labelsize=S.FONT["tick"], length=0)
    counts = {n: int((labs == n).sum()) for n in names}
    handles = [
        Patch(
            facecolor=TYPE_COLORS[n],
            edgecolor="#888888",
            label=f"{TYPE_CODES[n]} {n} ({counts[n]})",
        )
        for n in names
        if counts[n]
    ]
    ax.legend(
        handles=handles,
        fontsize=S.FONT["legend"],
        frameon=False,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title(
        title or f"head types · {types.model} · {L} layers × {H} heads", fontsize=S.FONT["title"]
    )
    return fig


# ------------------------------------------------------- model vs model
def plot_model_diagrams(
    comparison: Any,
    *,
    ax: Axes | None = None,
    dims: Sequence[int] | None = None,
    title: str | None = None,
) -> Figure:
    """Two models' head-space diagrams overlaid (model A filled blue, model B hollow orange;
    one marker per homology dimension; infinite bars on the dashed ∞ line).

    The default title gives the bottleneck distance per dimension and, when the comparison
    has a bootstrap, its p-value.

    Parameters
    ----------
    comparison : ModelComparison
    ax : matplotlib Axes, optional
    dims : list of int, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not all(hasattr(comparison, a) for a in ("a", "b", "bottleneck", "wasserstein")):
        raise InvalidInputError(
            "expected a ModelComparison (from "
            f"attntopo.compare_models), got {type(comparison).__name__}"
        )
    da, db = comparison.a.diagram, comparison.b.diagram
    maxdim = min(da.maxdim, db.maxdim)
    dims = list(range(maxdim + 1)) if dims is None else [int(d) for d in dims]
    for d in dims:
        if not 0 <= d <= maxdim:
            raise InvalidInputError(f"dims must be in 0..{maxdim}, got {d}")
    names = (comparison.a.model, comparison.b.model)
    fig, ax = _overlay_diagrams(
        ax,
        (da, db),
        names,
        _MODEL_COLORS,
        dims,
        figsize=(5.0, 4.8),
        sizes=(28, 40),
        linewidth=1.1,
        alpha=0.8,
    )
    _style(ax)
    ax.legend(fontsize=S.FONT["legend"], frameon=False, loc="lower right")
    if title is None:
        parts = []
        pv = comparison.p_values(name="bottleneck") if getattr(comparison, "n_boot", 0) else None
        for d in dims:
            s = f"H{d} {comparison.bottleneck[d]:.3g}"
            if pv is not None:
                s += f" (p={pv[d]:.2g})"
            parts.append(s)
        title = f"{names[0]} vs {names[1]} head spaces\nbottleneck " + ", ".join(parts)
    ax.set_title(title, fontsize=S.FONT["title"])
    return fig
