"""Figures fit for a paper (issue 15, item 7) on the real models' attention.

The unit tests (tests/unit/plots_paper/test_paper_figures.py) measure each defect on
real-like synthetic attention; here the same measures run on what MiniLM and SmolLM2 produce:
the dense clusters of real sink heads, byte-level tokens with a trailing line break, and
SmolLM2's 30 layers.
"""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import re

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
import attntopo as at  # noqa: E402
from _paper_figures import drawn, overlapping_pairs, token_labels_of  # noqa: E402
from attntopo import plots  # noqa: E402

pytestmark = pytest.mark.slow

PARAGRAPH = (
    "Persistent homology summarises the shape of a point cloud across every scale at once. "
    "Applied to the rows of an attention matrix, it tells which tokens a head treats alike, "
    "which groups stay apart for long, and whether the head draws loops through the sentence."
)
_RAW = re.compile(r"Ġ|Ċ|^##")


def test_minilm_threshold_graphs_have_no_colliding_labels(minilm):
    """Three MiniLM heads on a 60-token paragraph, each at its suggested scale: every token
    labelled, no two labels overlapping."""
    a = at.analyze(PARAGRAPH, minilm, layers=[0, 3, 5], heads=[0], n_jobs=1)
    assert a.attention.n_tokens > 50
    for layer in a.layers:
        D, dgm = a.distance_matrix(layer, 0), a.diagram(layer, 0)
        fig = plots.plot_threshold_graph(
            D, plots.suggest_scale(dgm, D), labels=a.attention.labels, special=a.attention.special
        )
        r = drawn(fig)
        ax = fig.axes[0]
        assert len(token_labels_of(ax)) == a.attention.n_tokens
        assert overlapping_pairs(token_labels_of(ax), r) == [], layer


@pytest.mark.smollm2
def test_smollm2_figures_show_labels_and_key_30_layers(smollm2):
    text = "The cat sat on the mat.\nIt purred, then it slept.\n"
    a = at.analyze(text, smollm2, layers=[0], heads=[0, 1], n_jobs=1)
    att = a.attention
    assert any("Ċ" in t for t in att.tokens) and any("Ġ" in t for t in att.tokens)  # raw pieces
    D = a.distance_matrix(0, 0)
    for labels in (att.labels, att.tokens):  # display labels, or the raw tokens handed in by a user
        for fig in (
            plots.plot_distance_matrix(D, labels=labels),
            plots.plot_threshold_graph(D, 0.3, labels=labels),
        ):
            texts = [
                t.get_text()
                for ax in fig.axes
                for t in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts
            ]
            assert not [t for t in texts if _RAW.search(t)], texts
            assert any("↵" in t for t in texts)
    hs = at.head_space(["The cat sat on the mat.", "A dog ran in the park."], smollm2)
    fig = plots.plot_head_distances(hs)
    drawn(fig)
    bars = [c for c in fig.axes[0].child_axes if c.get_ylabel().startswith("layer")]
    assert len(bars) == 1
    mesh = next(col for col in bars[0].collections if type(col).__name__ == "QuadMesh")
    assert mesh.cmap.N == 30 == len(hs.layers)
    assert np.isfinite(hs.distances).all()
