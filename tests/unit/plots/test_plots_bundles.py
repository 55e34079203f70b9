"""Figure bundles (attntopo.plots.bundles) on synthetic attention: names, files, formats, the
same figures in the CLI's files and the HTML report."""

from __future__ import annotations

import io
import re

import pytest

from _synthetic import text_attention

pytest.importorskip("matplotlib")
pytest.importorskip("plotly")

import matplotlib.image  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import attntopo as at  # noqa: E402
from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.plots import (  # noqa: E402
    analysis_bundle,
    comparison_bundle,
    head_space_bundle,
    head_tag,
    timeline_bundle,
)
from attntopo.report import default_heads, report_html  # noqa: E402

_SCRIPT_SRC = re.compile(r"<script[^>]*\bsrc=", re.I)
PER_HEAD = ("attention", "barcode", "diagram", "distances", "graph", "overview")

A_TEXT = "quantum information theory allows us to study the attention"
B_TEXT = "classical information theory studies the entropy of attention"


@pytest.fixture(scope="module")
def analysis():
    return at.analyze(text_attention(A_TEXT, seed=1), n_jobs=1)


@pytest.fixture(scope="module")
def comparison():
    return at.compare(text_attention(A_TEXT, seed=1), text_attention(B_TEXT, seed=2), n_jobs=1)


def test_head_tag():
    assert head_tag(1, 2) == "L01_H02" and head_tag(12, 0) == "L12_H00"


def test_analysis_bundle_names_and_files(analysis):
    b = analysis_bundle(analysis, heads=[(1, 2), (-2, 0)], stat="total_persistence_h0")
    assert b.heads == [(1, 2), (0, 0)]  # negatives resolved, model indices
    static = b.figures()
    want = {"head_grid", "heads_total_persistence_h0"} | {
        f"{head_tag(lay, hd)}_{k}" for lay, hd in b.heads for k in PER_HEAD
    }
    assert set(static) == want
    assert all(isinstance(f, Figure) for f in static.values())
    interactive = b.figures(interactive=True)
    assert set(interactive) == {"head_grid"} | {
        f"{head_tag(lay, hd)}_{k}" for lay, hd in b.heads for k in ("diagram", "distances", "graph")
    }
    assert all(type(f).__module__.startswith("plotly") for f in interactive.values())

    files = b.files(formats=["png", "svg", "html"])
    assert set(files) == {f"figures/{n}.{f}" for n in want for f in ("png", "svg")} | {
        "figures/report.html"
    }
    png = matplotlib.image.imread(io.BytesIO(files["figures/L01_H02_diagram.png"]), format="png")
    assert png.ndim == 3 and png.shape[0] > 100
    assert files["figures/L01_H02_graph.svg"].lstrip().startswith(b"<?xml")
    page = files["figures/report.html"].decode("utf-8")
    assert not _SCRIPT_SRC.search(page) and page.count("Plotly.newPlot") == len(interactive)
    # only what is asked for is drawn, and the folder is the caller's
    assert set(b.files(formats=["html"], folder="")) == {"report.html"}
    assert set(b.files(formats=["pdf"], folder="figs")) == {f"figs/{n}.pdf" for n in want}


def test_analysis_bundle_default_heads_follow_the_report(analysis):
    for n in (0, 1, 4):
        assert analysis_bundle(analysis, n_heads=n).heads == default_heads(analysis, n=n)


def test_single_head_and_no_heads(analysis):
    one = at.analyze(analysis.attention, layers=[1], heads=[2], n_jobs=1)
    b = analysis_bundle(one, heads=[(1, 2)])
    assert set(b.figures()) == {f"L01_H02_{k}" for k in PER_HEAD}  # no grid of one head
    assert (
        analysis_bundle(one, heads=[]).files(formats=["png", "html"]) == {}
    )  # nothing to draw: no page either


@pytest.mark.parametrize("bad, fragment", [(["png", "gif"], "gif"), (["tiff"], "allowed")])
def test_unknown_format_is_refused(analysis, bad, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        analysis_bundle(analysis, heads=[]).files(formats=bad)


def test_bad_heads_are_refused(analysis):
    with pytest.raises(InvalidInputError, match="pairs"):
        analysis_bundle(analysis, heads=[3])
    with pytest.raises(at.OutOfRangeError):
        analysis_bundle(analysis, heads=[(5, 0)])


def test_comparison_bundle(comparison):
    c = comparison
    b = comparison_bundle(c, n_heads=2, highlight=["information"])
    assert b.heads == [(lay, hd) for lay, hd, _ in c.most_similar_heads(k=2)]
    tags = [head_tag(lay, hd) for lay, hd in b.heads]
    assert set(b.figures()) == {
        "heads_bottleneck_h0",
        "heads_bottleneck_h1",
        "heads_shared_edges",
    } | {f"{t}_{k}" for t in tags for k in ("graphs", "diagrams")}
    assert set(b.figures(interactive=True)) == {"heads"} | {
        f"{t}_{k}" for t in tags for k in ("graphs", "diagrams")
    }
    assert comparison_bundle(c, heads=[(-1, -1)]).heads == [(1, 2)]
    assert comparison_bundle(c, n_heads=0).heads == []


def test_timeline_bundle():
    tl = at.timeline(
        text_attention("the cat sat on the mat and ran", causal=True), layers=1, heads=0, n_jobs=1
    )
    b = timeline_bundle(tl)
    names = {
        "timeline_overview",
        "timeline_diagrams",
        "coherence_bottleneck",
        "coherence_wasserstein",
        "vineyard_h0",
        "vineyard_h1",
        "betti_h0",
        "betti_h1",
    }
    assert set(b.figures()) == names
    files = b.files(formats=["png", "html"])
    assert set(files) == {f"figures/{n}.png" for n in names} | {"figures/timeline.html"}


def test_head_space_bundle():
    texts = ["the cat sat on the mat", "a dog ran far away", "we study attention here"]
    a = at.head_space([text_attention(t, seed=k) for k, t in enumerate(texts)])
    b = at.head_space(
        [text_attention(t, L=3, H=2, seed=10 + k, model="other/model") for k, t in enumerate(texts)]
    )
    one = head_space_bundle(a)
    assert {"head_distances", "head_mds_layer", "head_barcode"} <= set(one.figures())
    assert set(one.files(formats=["html"])) == {"figures/head_mds.html"}
    cmp = at.compare_models(None, model_a=a, model_b=b, n_boot=0)
    two = head_space_bundle([a, b], comparison=cmp).figures()
    assert "model_diagrams" in two
    assert {"synthetic_head_distances", "other_model_head_distances"} <= set(two)


def test_report_lays_out_the_bundle(analysis, comparison):
    """The report shows the bundle's figures: one section per head the bundle draws."""
    html = report_html(analysis, heads=[(1, 2)])
    assert (
        re.search(r"persistence diagram (·|\\u00b7) layer 1, head 2", html) and 'id="L1H2"' in html
    )
    assert html.count("Plotly.newPlot") == len(
        analysis_bundle(analysis, heads=[(1, 2)]).figures(interactive=True)
    )
    html = report_html(comparison.a, comparison=comparison, n_heads=1)
    ((lay, hd),) = comparison_bundle(comparison, n_heads=1).heads
    assert f'id="cmp-L{lay}H{hd}"' in html
