"""The pages' figure scheduler (``plots/assets/defer.js``, issue 15 item 1: a 512-token report
must open fast): figures are drawn one per browser task after the page has parsed, figures on
screen first, an error in one figure stops none of the others; and plotly_div's fragments use it.
Checked in Debian's Chromium (Playwright) with the real script."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("plotly")

from _live import chromium_missing_reason  # noqa: E402
from attntopo.plots.interactive import _asset_js  # noqa: E402

_MISSING = chromium_missing_reason()
if _MISSING:
    warnings.warn(f"BROWSER TESTS SKIPPED: {_MISSING}", stacklevel=1)
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"BROWSER TESTS SKIPPED: {_MISSING}")


@pytest.fixture(scope="module")
def browser():
    from _live import chromium_browser

    with chromium_browser() as b:
        yield b


def _figure(k: int, top: int, throws: bool = False) -> str:
    """A stand-in figure at a fixed position: its 'drawing' records its number."""
    body = "throw new Error('figure 2 is broken');" if throws else f"window.drawn.push({k});"
    return (
        f'<div style="position:absolute;top:{top}px;left:0;height:200px;width:300px">'
        f'<div class="plotly-graph-div" id="f{k}"></div>'
        f"<script>window.attntopoDefer(function () {{ {body} }});</script></div>"
    )


def _page(tmp_path, figures: str):
    html = (
        "<!DOCTYPE html><html><head><script>window.drawn = [];</script>"
        f"<script>{_asset_js('defer.js')}</script></head>"
        f'<body style="margin:0;height:20000px">{figures}'
        "<script>window.parsedBeforeDrawing = window.drawn.length === 0;</script></body></html>"
    )
    path = tmp_path / "page.html"
    path.write_text(html, encoding="utf-8")
    return path.resolve().as_uri()


def test_figures_on_screen_are_drawn_first_then_document_order(browser, tmp_path):
    # figures 1, 2, 4, 5 far below the fold, figure 3 at the top of the viewport
    figs = "".join(
        _figure(k, top) for k, top in ((1, 3000), (2, 4000), (3, 10), (4, 5000), (5, 6000))
    )
    page = browser.new_page(viewport={"width": 800, "height": 600})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(_page(tmp_path, figs))
    page.wait_for_function("() => window.drawn.length === 5")
    assert page.evaluate("() => window.drawn") == [3, 1, 2, 4, 5]
    assert page.evaluate("() => window.parsedBeforeDrawing") is True  # nothing drawn while parsing
    assert not errors
    page.close()


def test_a_broken_figure_stops_no_other_and_its_error_is_reported(browser, tmp_path):
    figs = "".join(_figure(k, 10 + 300 * k, throws=(k == 2)) for k in (1, 2, 3, 4))
    page = browser.new_page(viewport={"width": 800, "height": 600})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(_page(tmp_path, figs))
    page.wait_for_function("() => window.drawn.length === 3")
    assert sorted(page.evaluate("() => window.drawn")) == [1, 3, 4]
    assert any("figure 2 is broken" in e for e in errors)
    page.close()


def test_plotly_div_fragments_draw_through_the_scheduler(browser, tmp_path):
    import plotly.graph_objects as go

    from attntopo.plots.export import figures_to_html

    figs = [(f"figure {k}", go.Figure(go.Scatter(x=[0, 1], y=[k, k + 1]))) for k in range(4)]
    html = figures_to_html(figs).decode("utf-8")
    assert html.count("attntopoDefer") >= 4 and html.count("Plotly.newPlot") == 4
    path = tmp_path / "figs.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.plotly-graph-div'))"
        ".every((d) => d._fullLayout)"
    )
    ys = page.evaluate(
        "() => Array.from(document.querySelectorAll('.plotly-graph-div')).map((d) "
        "=> d.data[0].y[0])"
    )
    assert ys == [0, 1, 2, 3] and not errors
    page.close()
