"""Figures of head space, head types and model comparison (synthetic attention: no model)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from attntopo import compare_models, head_space
from attntopo.attention import Attention
from attntopo.errors import InvalidInputError
from attntopo.plots import save_figure
from attntopo.plots.heads import (
    TYPE_CODES,
    TYPE_COLORS,
    iplot_head_mds,
    plot_head_barcode,
    plot_head_distances,
    plot_head_mds,
    plot_head_types,
    plot_model_diagrams,
)

_SCRIPT_SRC = re.compile(r"<script[^>]*\bsrc=", re.I)


def _att(rng, L, H, n, conc, model, text):
    W = rng.dirichlet(np.full(n, conc), size=(L, H, n))
    special = np.zeros(n, bool)
    special[0] = special[-1] = True
    return Attention(
        weights=W,
        tokens=[f"t{i}" for i in range(n)],
        offsets=[(0, 0)] * n,
        special=special,
        causal=False,
        model=model,
        text=text,
    )


@pytest.fixture(scope="module")
def spaces():
    rng = np.random.default_rng(0)
    a = head_space([_att(rng, 3, 4, 10 + k, 0.3, "model-a", str(k)) for k in range(4)])
    b = head_space([_att(rng, 2, 5, 10 + k, 1.0, "model-b", str(k)) for k in range(4)])
    return a, b


def _rc():
    return matplotlib.rcParams.copy()


def test_heatmap_dendrogram_order_and_bands(spaces, tmp_path):
    hs, _ = spaces
    before = _rc()
    fig = plot_head_distances(hs)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    order = hs.leaf_order()
    np.testing.assert_allclose(img, hs.distances[np.ix_(order, order)])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [hs.labels[i] for i in order]
    assert len(ax.patches) == 2 * hs.n_points  # one band cell per head on each axis
    fig2 = plot_head_distances(hs, order="layer", layer_bands=False)
    np.testing.assert_allclose(fig2.axes[0].images[0].get_array(), hs.distances)
    assert not fig2.axes[0].patches
    assert save_figure(fig, tmp_path / "d.png").stat().st_size > 1000
    assert _rc() == before
    with pytest.raises(InvalidInputError):
        plot_head_distances(hs, order="random")
    with pytest.raises(InvalidInputError):
        plot_head_distances(np.zeros((3, 3)))


def test_mds_scatter_by_layer_and_type(spaces, tmp_path):
    hs, _ = spaces
    fig = plot_head_mds(hs, color_by="layer", annotate=3)
    ax = fig.axes[0]
    pts = np.vstack([c.get_offsets() for c in ax.collections])
    np.testing.assert_allclose(np.sort(pts, axis=0), np.sort(hs.embedding, axis=0))
    assert len(ax.texts) == 3
    fig = plot_head_mds(hs, color_by="type")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    counts = hs.types.counts()
    assert legend == [f"{k} ({v})" for k, v in counts.items() if v]
    assert sum(len(c.get_offsets()) for c in ax.collections) == hs.n_points
    # into a given axes, among others
    f = Figure()
    axes = f.subplots(1, 2)
    assert plot_head_mds(hs, ax=axes[1]) is f
    save_figure(fig, tmp_path / "m.svg")
    with pytest.raises(InvalidInputError):
        plot_head_mds(hs, color_by="entropy")


def test_mds_type_needs_types(spaces):
    hs, _ = spaces
    rng = np.random.default_rng(3)
    bare = head_space(_att(rng, 1, 3, 6, 1.0, "m", "x"), types=False)
    with pytest.raises(InvalidInputError, match="types"):
        plot_head_mds(bare, color_by="type")
    with pytest.raises(InvalidInputError, match="types"):
        iplot_head_mds(bare, color_by="type")
    with pytest.raises(InvalidInputError, match="another set"):
        plot_head_mds(bare, color_by="type", types=hs.types)


def test_interactive_mds_is_standalone_html(spaces, tmp_path):
    hs, _ = spaces
    for color_by in ("layer", "type"):
        fig = iplot_head_mds(hs, color_by=color_by)
        n = sum(len(tr.x) for tr in fig.data)
        assert n == hs.n_points
        texts = [t for tr in fig.data for t in tr.text]
        assert any("L0H0" in t and "nearest" in t for t in texts)
        out = save_figure(fig, tmp_path / f"mds_{color_by}.html")
        html = out.read_text(encoding="utf-8")
        assert not _SCRIPT_SRC.search(html), "plotly.js must be inlined, not loaded from a CDN"
        assert "Plotly.newPlot" in html and len(html) > 1_000_000


def test_barcode_and_type_grid(spaces, tmp_path):
    hs, _ = spaces
    fig = plot_head_barcode(hs)
    assert isinstance(fig, Figure) and "barcode" in fig.axes[0].get_title()
    fig = plot_head_types(hs)
    ax = fig.axes[0]
    labs = hs.types.labels
    assert len(ax.texts) == labs.size
    assert [t.get_text() for t in ax.texts] == [TYPE_CODES[x] for x in labs.reshape(-1)]
    img = ax.images[0].get_array()
    assert img.shape == labs.shape
    assert set(TYPE_COLORS) == set(TYPE_CODES)
    assert plot_head_types(hs.types).axes[0].get_title() == ax.get_title()
    save_figure(fig, tmp_path / "t.pdf")
    with pytest.raises(InvalidInputError):
        plot_head_types(object())


def test_model_diagram_overlay(spaces, tmp_path):
    a, b = spaces
    c = compare_models(None, model_a=a, model_b=b, n_boot=5, seed=0, n_jobs=1)
    fig = plot_model_diagrams(c)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("model-a H0") and legend[-1].startswith("model-b H1")
    assert "p=" in ax.get_title() and "bottleneck" in ax.get_title()
    n = sum(len(col.get_offsets()) for col in ax.collections)
    assert n == sum(len(d[k]) for d in (a.diagram, b.diagram) for k in (0, 1))
    c0 = compare_models(None, model_a=a, model_b=b, n_boot=0)
    assert "p=" not in plot_model_diagrams(c0, dims=[1]).axes[0].get_title()
    save_figure(fig, tmp_path / "c.png")
    with pytest.raises(InvalidInputError):
        plot_model_diagrams(c, dims=[2])
    with pytest.raises(InvalidInputError):
        plot_model_diagrams(a)
