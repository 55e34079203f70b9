"""Figures of a Comparison and a PhraseTopology (synthetic attention: no model needed)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from _synthetic import text_attention
from attntopo import compare, phrase_topology
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
    return compare(A, B, scale=0.6)


def _rc_snapshot():
    return dict(matplotlib.rcParams)


def test_threshold_graphs_side_by_side(cmp, tmp_path):
    before = _rc_snapshot()
    fig = plot_compare_graphs(cmp, layer=1, head=2, highlight="information theory")
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
    out = plot_compare_graph(cmp, side="b", layer=0, head=0, scale=0.3, ax=ax)
    assert out is fig and ax.get_title().startswith("B:")
    with pytest.raises(InvalidInputError, match="side"):
        plot_compare_graph(cmp, side="c", layer=0, head=0)
    with pytest.raises(InvalidInputError, match="not a shared token"):
        plot_compare_graphs(cmp, layer=0, head=0, highlight=["entropy"])
    with pytest.raises(InvalidInputError, match="layer= and head="):
        plot_compare_graphs(cmp)
    with pytest.raises(InvalidInputError, match="Comparison"):
        plot_compare_graphs(object(), layer=0, head=0)
    with pytest.raises(InvalidInputError, match="pair"):
        plot_compare_graphs(cmp, layer=0, head=0, axes=[ax])


def _decoded(part: dict, n: int) -> np.ndarray:
    """(n, n) matrix of each pair's first slider step,
    from the figure's base64 bytes (upper triangle)."""
    import base64

    codes = np.frombuffer(
        base64.b64decode(part["steps"]), dtype=np.uint8 if part["dtype"] == "u1" else "<u2"
    )
    S = np.full((n, n), -1, dtype=np.int64)
    S[np.triu_indices(n, 1)] = codes
    return S


def test_interactive_graphs_standalone_html(cmp, tmp_path):
    """No frames: per-pair slider steps from which every step's edges follow (issue 15 item 1)."""
    from attntopo.topology.complex import complex_at

    fig = iplot_compare_graphs(cmp, layer=1, head=2, highlight=["information"], n_scales=5)
    m = fig.layout.meta["attntopo"]
    # no plotly frames, no plotly slider:
    # the page's one ε slider (assets/scale_slider.js) reads meta
    assert not fig.frames and not fig.layout.sliders and len(m["scales"]) >= 5
    assert m["start"] == int(np.argmin(np.abs(np.array(m["scales"]) - 0.6)))
    shared = _decoded(m["shared"], m["shared"]["m"])
    for k, eps in enumerate(m["scales"]):
        # a text's edges at step k are complex_at's; the shared ones are shared_simplices'
        for side, an in enumerate((cmp.a, cmp.b)):
            S = _decoded(m["panels"][side], m["panels"][side]["n"])
            got = {tuple(e) for e in np.argwhere((S >= 0) & (S <= k)).tolist()}
            assert got == {
                tuple(e) for e in complex_at(an.distances[1, 2], eps).simplices(1).tolist()
            }
        keys = cmp.keys
        got = {(keys[x], keys[y]) for x, y in np.argwhere((shared >= 0) & (shared <= k)).tolist()}
        assert got == {s["tokens"] for s in cmp.shared_simplices(1, 2, scale=eps, dim=1)}
    # the opening frame is in the figure itself (fig.show() shows it)
    n_shared = sum(
        len(s["tokens"]) == 2 for s in cmp.shared_simplices(1, 2, scale=m["scales"][m["start"]])
    )
    assert len(fig.data[3].x or ()) == 3 * n_shared
    path = save_figure(fig, tmp_path / "compare.html")
    html = path.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=", html)  # nothing loaded from a CDN
    assert len(html) > 1_000_000  # plotly.js inlined
    assert "attntopoCompareGraphs(document.getElementById(" in html


def test_diagrams_overlaid(cmp):
    fig = plot_compare_diagrams(cmp, layer=1, head=1)
    ax = fig.axes[0]
    leg = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("A H0") for t in leg) and any(t.startswith("B H1") for t in leg)
    assert "bottleneck" in ax.get_title()
    fig2 = plot_compare_diagrams(cmp, layer=1, head=1, scope="shared", dims=[0])
    assert len(fig2.axes[0].get_legend().get_texts()) == 2
    with pytest.raises(InvalidInputError, match="scope"):
        plot_compare_diagrams(cmp, layer=1, head=1, scope="nope")
    f = iplot_compare_diagrams(cmp, layer=1, head=1)
    assert any(tr.name and tr.name.startswith("B H1") for tr in f.data)


def test_heads_heatmap(cmp):
    fig = plot_compare_heads(cmp, name="bottleneck", dim=0)
    ax = fig.axes[0]
    img = ax.images[0].get_array()
    np.testing.assert_allclose(np.asarray(img), cmp.grid(name="bottleneck", dim=0))
    assert len(ax.texts) == 6 and len(ax.patches) == 3
    fig2 = plot_compare_heads(cmp, name="shared_edges", annotate=False, mark=0)
    assert len(fig2.axes[0].texts) == 0
    with pytest.raises(InvalidInputError, match="unknown table"):
        plot_compare_heads(cmp, name="nope")
    f = iplot_compare_heads(cmp, name="wasserstein1", dim=1)
    assert len(f.layout.updatemenus[0].buttons) == 3 * 2 + 6
    np.testing.assert_allclose(
        np.asarray(f.data[0].z, dtype=float), cmp.grid(name="wasserstein1", dim=1)
    )


def test_heads_outline_short_texts_uses_h0_and_shows_ties():
    """Three-token texts have no H1: the default heatmap and outline use H0 and say so; with
    H1 asked for, every head ties at rank 1 and all are outlined, the title says so."""
    c = compare(text_attention("the cat", seed=3), text_attention("a cat", seed=4))
    assert (c.grid(name="bottleneck", dim=1) == 0).all() and c.ranking_dim == 0
    ax = plot_compare_heads(c).axes[0]
    np.testing.assert_allclose(
        np.asarray(ax.images[0].get_array()), c.grid(name="bottleneck", dim=0)
    )
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
    fig = plot_phrase_distances(p, layer=0, head=1)
    ax = fig.axes[0]
    np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), p.matrix(0, 1, dim=0))
    assert "the theory of" in ax.get_title()
    with pytest.raises(InvalidInputError, match="PhraseTopology"):
        plot_phrase_distances(object())
