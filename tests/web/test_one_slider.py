"""One ε slider (issue 29 item 5): the one-text threshold graph, the two-text graphs and the
explorer use one widget (``plots/assets/scale_slider.js``) and one data encoding
(``plots/slider.py``).

No model: synthetic attention (``_synthetic.text_attention``) stands in.  The explorer's
payloads are built by the functions its routes call (``head_payload``,
``compare_head_payload``) and compared with the reports' figure data; the explorer page in the
browser is in ``test_browser.py`` (it runs MiniLM).  The two-text graph's slider is driven in
Debian's Chromium here, step by step, with the threshold graph's keyboard helper.
"""

from __future__ import annotations

import re
from importlib import resources

import numpy as np
import pytest

import attntopo as at

pytest.importorskip("plotly")

from _synthetic import text_attention  # noqa: E402
from attntopo.plots import figures_to_html, iplot_compare_graphs, iplot_threshold_graph  # noqa: E402
from attntopo.plots.interactive import threshold_graph_script  # noqa: E402
from attntopo.plots.slider import decode_steps  # noqa: E402
from report_page import (
    expected_frame,
    move_slider,
    needs_browser,
    open_page,
    slider_state,
    two_text_state,
)  # noqa: E402

needs_browser = needs_browser()

RECORD = ("n", "scales", "start", "steps", "dtype", "max_edges", "max_triangles")
TWO_TEXTS = ("scales", "labels", "start", "panels", "shared", "max_edges", "max_triangles")
A_TEXT = "quantum information theory allows us to study the attention of a model with entropy"
B_TEXT = "classical information theory studies the entropy of a source and the attention of readers"


def _asset(name: str) -> str:
    return resources.files("attntopo.plots").joinpath(f"assets/{name}").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def analysis():
    return at.analyze(text_attention(A_TEXT, L=2, H=3, seed=5), progress=False)


@pytest.fixture(scope="module")
def comparison():
    return at.compare(
        text_attention(A_TEXT, L=2, H=3, seed=1),
        text_attention(B_TEXT, L=2, H=3, seed=2),
        progress=False,
    )


def _edges_and_triangles(S: np.ndarray, k: int) -> tuple[int, int]:
    A = ((S >= 0) & (S <= k)).astype(np.float64)
    return int(A.sum() // 2), int(round(np.trace(A @ A @ A) / 6))


def test_explorer_sends_the_threshold_graphs_record(analysis):
    """/api/analyze's slider is the record the report's threshold graph carries, byte for byte,
    and it opens exactly at the head's suggested scale."""
    from attntopo.web.api import head_payload

    h = head_payload(analysis, 1, 2, 1000)
    rec = h["slider"]
    assert rec["scales"][rec["start"]] == h["scale"]  # the suggested ε is a slider value
    D = analysis.distance_matrix(1, 2)
    meta = iplot_threshold_graph(D, scales=rec["scales"], start=rec["start"]).layout.meta[
        "attntopo"
    ]
    assert {k: meta[k] for k in RECORD} == {k: rec[k] for k in RECORD}
    S = decode_steps(rec, rec["n"])
    for k in sorted({0, rec["start"], len(rec["scales"]) // 3, len(rec["scales"]) - 1}):
        cx = at.complex_at(D, rec["scales"][k])
        assert _edges_and_triangles(S, k) == (len(cx.simplices(1)), len(cx.simplices(2)))


def test_explorer_sends_the_two_text_graphs_record(comparison):
    """/api/compare's head carries one record for both texts: the two-text report's."""
    from attntopo.web.api import compare_head_payload

    h = compare_head_payload(comparison, 1, 2, 1000)
    rec = h["slider"]
    assert rec["scales"][rec["start"]] == h["scale"] == comparison.scale(1, 2)
    assert h["a"]["slider"] is None and h["b"]["slider"] is None  # one record for both texts
    meta = iplot_compare_graphs(
        comparison, layer=1, head=2, scales=rec["scales"], start=rec["start"]
    ).layout.meta["attntopo"]
    assert {k: meta[k] for k in TWO_TEXTS} == {k: rec[k] for k in TWO_TEXTS}


def test_every_slider_is_the_one_widget():
    """The reports inline scale_slider.js before their figure's script and the explorer loads the
    same file; no page builds a range input or a plotly slider of its own."""
    D = np.array([[0, 0.2, 0.5], [0.2, 0, 0.4], [0.5, 0.4, 0]])
    one = iplot_threshold_graph(D)
    widget = _asset("scale_slider.js")
    assert threshold_graph_script(one).startswith(widget + "\n")
    assert not one.layout.sliders
    for name in ("threshold_graph.js", "compare_graphs.js"):
        js = _asset(name)
        assert "window.attntopoScale" in js and "slider(" in js
        assert not re.search(r"range|createElement\(\"input\"\)|plotly_slider", js), name
    static = resources.files("attntopo.web").joinpath("static")
    app_js, index = (
        static.joinpath(f).read_text(encoding="utf-8") for f in ("app.js", "index.html")
    )
    assert (
        "window.attntopoScale" in app_js
        and "Scale.slider(" in app_js
        and "Scale.Complex(" in app_js
    )
    assert not re.search(r"type=\"range\"|\.type = \"range\"", app_js + index)
    assert index.index("/static/scale_slider.js") < index.index("/static/app.js")


def test_explorer_serves_the_reports_widget():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from web_helpers import make_client

    r = make_client().get("/static/scale_slider.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert r.text == _asset("scale_slider.js")


@pytest.mark.slow
@pytest.mark.xdist_group("web_browser")
@needs_browser
def test_two_text_slider_in_the_browser(comparison, tmp_path):
    """The two-text graph's slider is the threshold graph's widget: the same keyboard helper
    moves both in one page, and at every step the two-text graph draws complex_at's and
    shared_simplices' simplices (the old plotly frames), its label naming ε and the counts."""
    from _live import chromium_browser

    lay, hd = 1, 2
    two = iplot_compare_graphs(comparison, layer=lay, head=hd, n_scales=8)
    m = two.layout.meta["attntopo"]
    one = iplot_threshold_graph(comparison.a.distances[1, 2], scales=m["scales"], start=0)
    path = tmp_path / "both.html"
    path.write_bytes(figures_to_html([("one text", one), ("two texts", two)]))
    with chromium_browser() as browser, open_page(browser, path) as page:
        boxes = page.locator(".attntopo-eps")
        assert boxes.count() == 2
        shapes = boxes.evaluate_all(
            "(bs) => bs.map((b) => [b.children.length, b.children[0].type, "
            "b.children[1].className])"
        )
        assert shapes == [[2, "range", "attntopo-eps-label"]] * 2  # one widget, twice
        scope = "div:has(> .plotly-graph-div[data-attntopo-compare='1'])"
        assert two_text_state(page, scope)["step"] == str(m["start"])
        for k in list(range(len(m["scales"]))) + [m["start"]]:
            state = move_slider(page, scope, k)
            want = expected_frame(comparison, lay, hd, m["scales"][k])
            assert float(state["eps"]) == m["scales"][k] and state["active"] == k
            assert state["title"] == want["title"] and want["title"].endswith(state["label"])
            for name in ("edges", "tris", "sh_edges", "sh_tris"):
                assert state[name] == want[name], (k, name)
        # the threshold graph's slider in the same page moved on its own
        assert slider_state(page, 0)["step"] == "0"
