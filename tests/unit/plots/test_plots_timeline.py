"""Figures of a Timeline, on a synthetic causal attention (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

from matplotlib.figure import Figure  # noqa: E402

import attntopo as at  # noqa: E402
from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.plots import timeline as P  # noqa: E402
from attntopo.plots.export import figure_to_bytes  # noqa: E402


def _causal_attention(n: int = 14, seed: int = 0) -> at.Attention:
    rng = np.random.default_rng(seed)
    words = "the cat sat on the mat and then it ran far away from all of us".split()[:n]
    text = " ".join(words)
    offsets, pos = [], 0
    for w in words:
        offsets.append((pos, pos + len(w)))
        pos += len(w) + 1
    logits = rng.normal(scale=2.0, size=(2, 2, n, n))
    logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return at.Attention(
        weights=w.astype(np.float32),
        tokens=words,
        offsets=offsets,
        special=np.zeros(n, bool),
        causal=True,
        model="synthetic",
        text=text,
    )


@pytest.fixture(scope="module")
def tl():
    return at.timeline(_causal_attention(), layers=1, heads=0, n_jobs=1)


def _renders(fig) -> None:
    assert isinstance(fig, Figure)
    assert figure_to_bytes(fig, "png")[:4] == b"\x89PNG"


def test_timeline_from_attention_is_growing(tl):
    assert tl.growing and tl.one_pass and tl.times.tolist() == list(range(1, 15))
    assert tl.hilbert().values.shape[2] == 14


def test_small_multiples(tl):
    fig = P.plot_timeline_diagrams(tl, max_panels=6, ncols=3, title="diagrams")
    assert len([a for a in fig.axes if a.axison]) == 6
    _renders(fig)
    fig = P.plot_timeline_diagrams(tl, times=[2, 5], dims=1)
    assert [a.get_title() for a in fig.axes if a.axison][0].startswith("t=2")
    with pytest.raises(InvalidInputError, match="dims"):
        P.plot_timeline_diagrams(tl, dims=3)
    with pytest.raises(InvalidInputError, match="Timeline"):
        P.plot_timeline_diagrams("not a timeline")


def test_coherence_curve_has_token_labels(tl):
    fig = P.plot_coherence(tl, metric="wasserstein", combined=True)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "cat" in labels and "sat" in labels
    assert len(ax.lines) >= 3  # H0, H1, combined
    _renders(fig)
    with pytest.raises(InvalidInputError, match="metric"):
        P.plot_coherence(tl, metric="euclid")


def test_draws_into_given_axes(tl):
    fig = Figure()
    ax = fig.add_subplot()
    assert P.plot_coherence(tl, ax=ax) is fig
    fig2 = Figure()
    ax2 = fig2.add_subplot()
    assert P.plot_vineyard(tl, dim=0, ax=ax2) is fig2
    fig3 = Figure()
    assert P.plot_betti_heatmap(tl, dim=1, ax=fig3.add_subplot()) is fig3


def test_betti_heatmap(tl):
    fig = P.plot_betti_heatmap(tl, dim=0, scales=20)
    mesh = fig.axes[0].collections[0]
    B = tl.betti_curves(scales=20).betti(0)
    np.testing.assert_array_equal(np.asarray(mesh.get_array()).reshape(B.shape), B)
    _renders(fig)
    _renders(P.plot_betti_heatmap(tl.hilbert(), dim=1, colorbar=False))
    with pytest.raises(InvalidInputError, match="Timeline or a HilbertFunction"):
        P.plot_betti_heatmap(np.zeros((3, 3)))


def test_vineyard(tl):
    for d in (0, 1):
        _renders(P.plot_vineyard(tl, dim=d, top=None))
    fig = P.plot_vineyard(tl, dim=0, top=2)
    assert "2 vines" in fig.axes[0].get_title()
    with pytest.raises(InvalidInputError, match="dim"):
        P.plot_vineyard(tl, dim=2)


def test_overview(tl):
    fig = P.plot_timeline_overview(tl)
    assert len(fig.axes) >= 3
    _renders(fig)


def test_no_global_style_change(tl):
    before = dict(matplotlib.rcParams)
    P.plot_timeline_overview(tl)
    P.plot_timeline_diagrams(tl)
    after = dict(matplotlib.rcParams)
    assert before == after


def test_plotly_animation_is_standalone(tl):
    pytest.importorskip("plotly")
    fig = P.iplot_timeline(tl)
    assert len(fig.frames) == len(tl.slices)
    assert len(fig.layout.sliders[0].steps) == len(tl.slices)
    html = figure_to_bytes(fig, "html").decode()
    # plotly.js inlined (megabytes), no script fetched from a CDN
    assert len(html) > 1_000_000
    assert '<script src="http' not in html
