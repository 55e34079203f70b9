"""Reports of real texts stay small and open at the suggested ε (issue 15 item 1).

Before: an 86-token paragraph's report was 298 MB (every slider frame held its edges and
triangles), and the text's "suggested scale" was not the scale the graph opened at.  Now each
head's matrix travels once (the page computes the complex), so a report grows as n² per
head.  Sizes are asserted; times are measured and printed (``-s``), never asserted: see
docs/web.md for the measured values.
"""

from __future__ import annotations

import re
import warnings

import pytest

import attntopo as at

pytest.importorskip("plotly")

from _live import chromium_missing_reason  # noqa: E402
from attntopo.plots import analysis_bundle, suggest_scale  # noqa: E402
from attntopo.report import default_heads, report_html, write_report  # noqa: E402
from report_page import open_page, slider_state, step_to  # noqa: E402

_MISSING = chromium_missing_reason()
if _MISSING:
    warnings.warn(f"BROWSER TESTS SKIPPED: {_MISSING}", stacklevel=1)
needs_browser = pytest.mark.skipif(
    _MISSING is not None, reason=f"BROWSER TESTS SKIPPED: {_MISSING}"
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("web_browser")]

# The first text of docs/heads.md §5 (the paragraph of the issue): 86 MiniLM tokens.
PARAGRAPH = (
    "Quantum information theory allows us to study attention using entanglement, and it gives a "
    "language for correlations that classical probability cannot express. When two systems share "
    "entangled states, measuring one tells us something about the other, no matter how far apart "
    "they are. Researchers have borrowed these ideas to describe how words in a sentence depend on "
    "each other, treating the attention matrix of a transformer as a kind of density operator."
)
MB = 1_000_000
REPORT_LIMIT = 10 * MB  # the bound for this paragraph (plotly.js alone is ~4.8 MB)


@pytest.fixture(scope="module")
def paragraph(minilm):
    a = at.analyze(PARAGRAPH, minilm)
    assert a.attention.n_tokens == 86
    return a


@pytest.fixture(scope="module")
def paragraph_report(paragraph, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "paragraph.html"
    write_report(path, report_html(paragraph))
    return path


@pytest.fixture(scope="module")
def browser():
    if _MISSING:
        pytest.skip(f"BROWSER TESTS SKIPPED: {_MISSING}")
    from _live import chromium_browser

    with chromium_browser() as b:
        yield b


def test_paragraph_report_is_small(paragraph, paragraph_report):
    size = paragraph_report.stat().st_size
    print(f"\n86-token report: {size / MB:.2f} MB")
    assert size <= REPORT_LIMIT
    # `attntopo analyze --plots --plot-format html --plot-heads 1` (108 MB before)
    head = default_heads(paragraph, n=1)
    page = analysis_bundle(paragraph, heads=head).files(formats=["html"])["figures/report.html"]
    print(f"one head's figures page: {len(page) / MB:.2f} MB")
    assert len(page) <= REPORT_LIMIT


def test_paragraph_report_text_names_the_scale_the_graph_opens_at(paragraph, paragraph_report):
    html = paragraph_report.read_text(encoding="utf-8")
    for layer, head in default_heads(paragraph, n=3):
        eps = suggest_scale(paragraph.diagram(layer, head), paragraph.distance_matrix(layer, head))
        section = html.split(f'<section id="L{layer}H{head}">', 1)[1].split("</section>", 1)[0]
        assert (
            f"Suggested scale for this head: ε = {eps:.3g} (the threshold graph opens there)"
            in section
        )
        # the graph's slider data in the page: its opening value is that ε, exactly
        scales, start = re.search(r'"scales":\[([^\]]*)\],"start":(\d+)', section).groups()
        assert float(scales.split(",")[int(start)]) == eps


@needs_browser
def test_paragraph_report_in_the_browser(paragraph, paragraph_report, browser):
    """Opens at the suggested ε of each head; the slider moves to complex_at's counts."""
    with open_page(browser, paragraph_report) as page:
        print(f"\n86-token report interactive after {page.load_seconds:.1f} s")
        for layer, head in default_heads(paragraph, n=3):
            D = paragraph.distance_matrix(layer, head)
            eps = suggest_scale(paragraph.diagram(layer, head), D)
            scope = f"#L{layer}H{head}"
            state = slider_state(page, 0, scope)
            assert float(state["eps"]) == eps  # exactly the suggested value, not a nearby step
            assert state["label"].startswith(f"ε = {eps:.3g} · ")
            cx = at.complex_at(D, eps)
            assert (int(state["edges"]), int(state["triangles"])) == (
                len(cx.simplices(1)),
                len(cx.simplices(2)),
            )
        layer, head = default_heads(paragraph, n=1)[0]
        D = paragraph.distance_matrix(layer, head)
        start = int(slider_state(page, 0, f"#L{layer}H{head}")["step"])
        counts = set()
        for step in (start + 2, start - 3, start + 10):
            state = step_to(page, 0, step, f"#L{layer}H{head}")
            cx = at.complex_at(D, float(state["eps"]))
            got = (int(state["edges"]), int(state["triangles"]))
            assert got == (len(cx.simplices(1)), len(cx.simplices(2))), state
            counts.add(got)
        assert len(counts) == 3, "moving the slider changes the counts"


@needs_browser
def test_512_token_report_opens(minilm, browser, tmp_path):
    """A 512-token text (MiniLM's limit): a bounded file that becomes interactive."""
    text = " ".join([PARAGRAPH] * 7)
    a = at.analyze(text, minilm, layers=[0, 3], heads=[1, 5], truncate=True)
    assert a.attention.n_tokens == 512
    path = write_report(tmp_path / "long.html", report_html(a))
    size = path.stat().st_size
    print(f"\n512-token report (3 heads): {size / MB:.2f} MB")
    # O(n²) per head: the float32 heatmap (~2 MB as plotly escapes it) and one byte a pair
    assert size <= 5 * MB + 3 * 2.5 * MB
    with open_page(browser, path) as page:
        print(f"512-token report interactive after {page.load_seconds:.1f} s")
        layer, head = default_heads(a, n=1)[0]
        state = slider_state(page, 0, f"#L{layer}H{head}")
        D = a.distance_matrix(layer, head)
        assert float(state["eps"]) == suggest_scale(a.diagram(layer, head), D)
        assert int(state["edges"]) == len(
            at.complex_at(D, float(state["eps"]), max_simplex_dim=1).simplices(1)
        )
