"""Figures of a Comparison and a PhraseTopology (synthetic attention: no model needed)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest
from _synthetic import text_attention
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from attntopo.analyses.compare import compare, phrase_topology
from attntopo.errors import InvalidInputError
from attntopo.plots import save_figure
from attntopo.plots.compare import (
    iplot_compare_diagrams,
    iplot_compare_graphs,
    iplot_compare_heads,
    plot_compare_diagrams,
    plot_compare_graph,
    plot_compare_graphs,
    plot_compare_heads,
    plot_phrase_distances,
)


@pytest.fixture(scope="module")
def cmp():
    A = text_attention("quantum information theory allows us to study the attention", seed=1)
    B = text_attention("classical information theory studies the entropy of attention", seed=2)
    return compare(A, B, threshold=0.6)


def _rc_snapshot():
    return dict(matplotlib.rcParams)


def test_threshold_graphs_side_by_side(cmp, tmp_path):
    before = _rc_snapshot()
    fig = plot_compare_graphs(cmp, 1, 2, highlight="information theory")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    ax = fig.axes[0]
    # the shared edges/triangles drawn equal the comparison's shared simplices
    both = cmp.shared_simplices(1, 2)
    n_edges = sum(len(s["tokens"]) == 2 for s in both)
    n_tris = sum(len(s["tokens"]) == 3 for s in both)
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    polys = [c for c in ax.collections if type(c) is PolyCollection]
    # collections: all triangles, shared triangles (if any), all edges, shared edges (if any)
    if n_edges:
        assert len(lines) == 2 and len(lines[1].get_segments()) == n_edges
    if n_tris:
        assert len(polys) == 2 and len(polys[1].get_paths()) == n_tris
    labels = [t.get_text() for t in ax.texts]
    assert "information" in labels and "theory" in labels
    assert "ε = 0.6" in ax.get_title()
    assert dict(matplotlib.rcParams) == before
    assert save_figure(fig, tmp_path / "graphs.png").stat().st_size > 10_000


def test_single_panel_into_ax_and_errors(cmp):
    fig = Figure()
    ax = fig.add_subplot()
    out = plot_compare_graph(cmp, "b", 0, 0, eps=0.3, ax=ax)
    assert out is fig and ax.get_title().startswith("B:")
    with pytest.raises(InvalidInputError, match="side"):
        plot_compare_graph(cmp, "c", 0, 0)
    with pytest.raises(InvalidInputError, match="not a shared token"):
        plot_compare_graphs(cmp, 0, 0, highlight=["entropy"])
    with pytest.raises(InvalidInputError, match="layer= and head="):
        plot_compare_graphs(cmp)
    with pytest.raises(InvalidInputError, match="Comparison"):
        plot_compare_graphs(object(), 0, 0)
    with pytest.raises(InvalidInputError, match="pair"):
        plot_compare_graphs(cmp, 0, 0, axes=[ax])


def test_interactive_graphs_standalone_html(cmp, tmp_path):
    fig = iplot_compare_graphs(cmp, 1, 2, highlight=["information"], n_scales=5)
    assert len(fig.frames) >= 5
    assert fig.layout.sliders[0].active == int(np.argmin(np.abs(np.array([float(s.label) for s in fig.layout.sliders[0].steps]) - 0.6)))
    # every frame's shared-edge trace matches the comparison at that scale
    for fr in fig.frames:
        eps = float(fr.name)
        n_shared = sum(len(s["tokens"]) == 2 for s in cmp.shared_simplices(1, 2, eps=eps))
        xs = fr.data[3].x or ()
        assert len(xs) == 3 * n_shared
    path = save_figure(fig, tmp_path / "compare.html")
    html = path.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", html)  # nothing loaded from a CDN
    assert len(html) > 1_000_000  # plotly.js inlined


def test_diagrams_overlaid(cmp):
    fig = plot_compare_diagrams(cmp, 1, 1)
    ax = fig.axes[0]
    leg = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("A H0") for t in leg) and any(t.startswith("B H1") for t in leg)
    assert "bottleneck" in ax.get_title()
    fig2 = plot_compare_diagrams(cmp, 1, 1, scope="shared", dims=[0])
    assert len(fig2.axes[0].get_legend().get_texts()) == 2
    with pytest.raises(InvalidInputError, match="scope"):
        plot_compare_diagrams(cmp, 1, 1, scope="nope")
    f = iplot_compare_diagrams(cmp, 1, 1)
    assert any(tr.name and tr.name.startswith("B H1") for tr in f.data)


def test_heads_heatmap(cmp):
    fig = plot_compare_heads(cmp, "bottleneck", dim=0)
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    np.testing.assert_allclose(np.asarray(img), cmp.grid("bottleneck", dim=0))
    assert len(ax.texts) == 6 and len(ax.patches) == 3
    fig2 = plot_compare_heads(cmp, "shared_edges", annotate=False, mark=0)
    assert len(fig2.axes[0].texts) == 0
    with pytest.raises(InvalidInputError, match="unknown table"):
        plot_compare_heads(cmp, "nope")
    f = iplot_compare_heads(cmp, "wasserstein1", dim=1)
    assert len(f.layout.updatemenus[0].buttons) == 3 * 2 + 6
    np.testing.assert_allclose(np.asarray(f.data[0].z, dtype=float), cmp.grid("wasserstein1", dim=1))


def test_heads_outline_short_texts_uses_h0_and_shows_ties():
    """Three-token texts have no H1: the default heatmap and outline use H0 and say so; with
    H1 asked for, every head ties at rank 1 and all are outlined, the title says so."""
    c = compare(text_attention("the cat", seed=3), text_attention("a cat", seed=4))
    assert (c.grid("bottleneck", dim=1) == 0).all() and c.ranking_dim == 0
    ax = plot_compare_heads(c).axes[0]
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), c.grid("bottleneck", dim=0))
    assert "bottleneck H0" in ax.get_title() and "most similar by bottleneck H0" in ax.get_title()
    assert len(ax.patches) == 3
    ax1 = plot_compare_heads(c, dim=1).axes[0]
    assert len(ax1.patches) == 6 and "6 with ties" in ax1.get_title()
    assert iplot_compare_heads(c).data[0].colorbar.title.text == "bottleneck H0"
    from attntopo._html import comparison_html

    html = comparison_html(c)
    assert "smallest bottleneck H0, the highest dimension without a majority tie" in html
    assert comparison_html(c, dim=1).count(">1=</td>") == 6  # six heads tied first in H1


def test_phrase_figure():
    ctx = [text_attention("the cat and the theory of mind", seed=k) for k in range(3)]
    p = phrase_topology("the theory of", ctx)
    fig = plot_phrase_distances(p, 0, 1)
    ax = fig.axes[0]
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), p.matrix(0, 1, dim=0))
    assert "the theory of" in ax.get_title()
    with pytest.raises(InvalidInputError, match="PhraseTopology"):
        plot_phrase_distances(object())
