"""The explorer page in a real browser: Playwright (sync API) driving Debian's Chromium
headless against a real uvicorn server on a free localhost port.

Skipped, loudly, when Chromium or Playwright is missing (``make test`` installs Chromium
with apt where it can).
"""

from __future__ import annotations

import warnings
from urllib.parse import urlparse

import pytest

pytest.importorskip(
    "fastapi", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)
pytest.importorskip(
    "uvicorn", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)

from _live import chromium_browser, chromium_missing_reason, live_server  # noqa: E402
from web_helpers import TEXT_A, TEXT_B  # noqa: E402

_MISSING = chromium_missing_reason()
if _MISSING:
    warnings.warn(f"BROWSER TESTS SKIPPED: {_MISSING}", stacklevel=1)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.model,  # the live server runs MiniLM (and SmolLM2)
    pytest.mark.xdist_group("web_browser"),
    pytest.mark.skipif(_MISSING is not None, reason=f"BROWSER TESTS SKIPPED: {_MISSING}"),
]

TIMEOUT_MS = 120_000  # first model load included, on a busy 2-core machine


@pytest.fixture(scope="module")
def server():
    with live_server() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium_browser() as b:
        yield b


class Watch:
    """Every request and console error of a page."""

    def __init__(self, page):
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        # the browser logs every 4xx answer as "Failed to load resource": those are expected here
        page.on(
            "console",
            lambda m: (
                self.errors.append(m.text)
                if m.type == "error" and not m.text.startswith("Failed to load resource")
                else None
            ),
        )
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def api_calls(self) -> list[str]:
        return [u for u in self.requests if urlparse(u).path.startswith("/api/")]

    def assert_local(self, base: str) -> None:
        host = urlparse(base).netloc
        foreign = [
            u
            for u in self.requests
            if not (urlparse(u).netloc == host or u.startswith(("data:", "blob:")))
        ]
        assert not foreign, f"requests left the server: {foreign}"
        assert not self.errors, f"console errors: {self.errors}"


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = ctx.new_page()
    p.set_default_timeout(TIMEOUT_MS)
    watch = Watch(p)
    p.goto(server)
    p.wait_for_selector("body[data-ready='1']")
    yield p, watch
    watch.assert_local(server)
    ctx.close()


def renders(p) -> int:
    return int(p.get_attribute("body", "data-renders") or 0)


def wait_render(p, n: int) -> None:
    p.wait_for_selector(f"body[data-renders='{n}'], body[data-state='error']")
    assert p.get_attribute("body", "data-state") == "done", p.text_content("#error")


def edges(p, which: str = "a") -> int:
    return int(p.get_attribute(f"#graph-{which}", "data-edges"))


def drawn_segments(p, which: str = "a") -> int:
    """Edge segments in the plot's own data (trace 2 holds the edges, 3 points per edge)."""
    xs = p.evaluate(f"document.getElementById('graph-{which}').data[2].x.length")
    return xs // 3


def test_compare_threshold_and_head(page, server):
    p, watch = page
    p.fill("#text-a", TEXT_A)
    p.fill("#text-b", TEXT_B)
    p.click("#run")
    wait_render(p, 1)
    assert not p.is_hidden("#results") and p.is_hidden("#error")
    assert p.is_visible("#graph-b") and "layer" in p.text_content("#graph-a-title")
    calls = len(watch.api_calls())

    # the slider (attntopo's one ε slider, the reports' widget) redraws from data the page has:
    # the graph changes, nothing is requested
    box = "#eps-slider .attntopo-eps"
    top = int(p.get_attribute("#eps", "max"))  # slider steps 0..top
    p.press("#eps", "Home")
    p.wait_for_selector(f"{box}[data-ready='1'][data-step='0']")
    low_a, low_b = edges(p, "a"), edges(p, "b")
    p.fill("#eps", str(top // 2))
    p.wait_for_selector(f"{box}[data-ready='1'][data-step='{top // 2}']")
    high_a, high_b = edges(p, "a"), edges(p, "b")
    assert high_a > low_a and high_b >= low_b
    assert drawn_segments(p, "a") == high_a
    assert p.get_attribute("#graph-a", "data-eps") == p.get_attribute(box, "data-eps")
    assert p.text_content("#eps-value").startswith("ε = ")
    assert f"A: {high_a} edges" in p.text_content("#eps-value")
    p.press("#eps", "End")
    p.wait_for_selector(f"{box}[data-ready='1'][data-step='{top}']")
    n = int(p.evaluate("document.getElementById('graph-a').data[4].x.length"))  # token nodes
    assert (
        edges(p, "a") == n * (n - 1) // 2
    )  # the last scale is the largest distance: the complete graph
    assert len(watch.api_calls()) == calls, "moving the threshold must not call the server"

    # switching the head asks the server once, which reuses its cached model run
    layer = int(p.input_value("#layer"))
    new_head = "3" if p.input_value("#head") != "3" else "4"
    p.select_option("#head", new_head)
    wait_render(p, 2)
    assert f"head {new_head}" in p.text_content("#graph-a-title")
    assert f"layer {layer}" in p.text_content("#graph-a-title")
    assert "cached" in p.text_content("#status")
    assert len(watch.api_calls()) == calls + 1

    # clicking a cell of the all-heads grid opens that head
    p.evaluate("document.getElementById('head-map').emit('plotly_click', {points: [{x: 7, y: 1}]})")
    wait_render(p, 3)
    assert p.input_value("#layer") == "1" and p.input_value("#head") == "7"
    assert "shared tokens" in p.text_content("#numbers")
    assert "information" in p.text_content("#numbers")


def test_short_texts_grid_opens_at_the_ranking_dimension(page):
    """Most H1 distances are 0 on two six-token texts: the grid opens on bottleneck H0 and the
    numbers name the dimension of 'most similar'."""
    p, _ = page
    p.fill("#text-a", "The cat sat.")
    p.fill("#text-b", "A cat sat.")
    p.click("#run")
    wait_render(p, 1)
    assert p.input_value("#grid-stat") == "c:bottleneck_h0"
    assert "most similar heads by bottleneck H0: #1" in p.text_content("#numbers")


def test_empty_text_shows_a_clear_message(page):
    p, watch = page
    p.fill("#text-a", "   ")
    p.fill("#text-b", "")
    p.click("#run")
    p.wait_for_selector("body[data-errors='1']")
    assert p.is_visible("#error")
    msg = p.text_content("#error")
    assert "empty" in msg and "text" in msg
    assert "Traceback" not in msg and "{" not in msg
    # the page and the server keep working: one text is analysed alone
    p.fill("#text-a", "Attention is all you need")
    p.click("#run")
    wait_render(p, 1)
    assert p.is_hidden("#error")
    assert p.is_hidden("#graph-b-card") and edges(p, "a") >= 0
    assert "Persistence" in p.text_content("#numbers-title")


def test_too_long_text_shows_the_limit(page):
    p, _ = page
    p.fill("#text-a", "word " * 500)
    assert "over" in (p.get_attribute("#count-a", "class") or "")
    p.click("#run")
    p.wait_for_selector("body[data-errors='1']")
    msg = p.text_content("#error")
    assert "too long" in msg and "2000" in msg


def test_other_model_and_metric(page):
    p, watch = page
    p.fill("#text-a", "The cat sat on the mat")
    p.fill("#text-b", "")
    p.click("#run")
    wait_render(p, 1)
    p.select_option("#metric", "hellinger")  # a metric change re-runs the analysis
    wait_render(p, 2)
    assert "computed" in p.text_content("#status")
    options = p.eval_on_selector_all("#model option", "els => els.map(e => e.value)")
    assert options[0] == "minilm"
    if "smollm2" in options:
        p.select_option("#model", "smollm2")
        wait_render(p, 3)
        assert int(p.input_value("#layer")) < 30
        assert p.eval_on_selector_all("#layer option", "els => els.length") == 30
        assert p.eval_on_selector_all("#head option", "els => els.length") == 9


def test_api_reference_page_is_local(page, server):
    p, watch = page
    p.goto(server + "/docs")
    p.wait_for_selector("body[data-ready='1']")
    text = p.text_content("#routes")
    for route in ("/api/analyze", "/api/compare", "/api/models", "/api/health"):
        assert route in text
    assert "curl" in text


def test_report_opens_offline(browser, tmp_path):
    import attntopo as at
    from attntopo.report import report_html, write_report

    c = at.compare(TEXT_A, TEXT_B, "minilm")
    path = write_report(tmp_path / "report.html", report_html(c.a, comparison=c, n_heads=1))
    ctx = browser.new_context()
    p = ctx.new_page()
    watch = Watch(p)
    p.goto(path.as_uri())
    p.wait_for_selector(".plotly-graph-div .main-svg")
    assert p.evaluate("typeof Plotly") == "object"
    assert p.eval_on_selector_all(".plotly-graph-div", "els => els.length") >= 4
    foreign = [u for u in watch.requests if not u.startswith(("file:", "data:", "blob:"))]
    assert not foreign, f"the report made requests: {foreign}"
    assert not watch.errors
    ctx.close()


# ------------------------------------------------------------ errors and stale results
def stale(p) -> bool:
    return p.evaluate("""() => {
        const r = document.getElementById('results');
        return r.classList.contains('stale') && r.inert
            && !document.getElementById('stale-note').hidden;
    }""")


def test_error_after_a_result_marks_the_result_stale(page):
    p, watch = page
    p.fill("#text-a", TEXT_A)
    p.fill("#text-b", TEXT_B)
    p.click("#run")
    wait_render(p, 1)
    assert not stale(p) and p.is_hidden("#stale-note")

    p.fill("#text-a", "")  # an empty text: the comparison below no longer answers the form
    p.click("#run")
    p.wait_for_selector("body[data-errors='1']")
    assert "empty" in p.text_content("#error")
    assert stale(p), "the previous texts' results must be greyed and inert under the error"
    assert p.get_attribute("body", "data-stale") == "1"
    assert "previous run" in p.text_content("#stale-note")
    assert float(p.evaluate("getComputedStyle(document.getElementById('results')).opacity")) < 0.6
    # inert: clicking the stale head map opens nothing
    calls = len(watch.api_calls())
    p.mouse.click(*_center(p, "#head-map .nsewdrag"))
    p.wait_for_timeout(300)
    assert len(watch.api_calls()) == calls

    # a too-long text (over the server's character limit) does the same
    p.fill("#text-a", "word " * 500)
    p.click("#run")
    p.wait_for_selector("body[data-errors='2']")
    assert "too long" in p.text_content("#error") and stale(p)

    # a valid run replaces the stale results and lifts the grey
    p.fill("#text-a", TEXT_A)
    p.click("#run")
    wait_render(p, 2)
    assert not stale(p) and p.is_hidden("#error") and p.get_attribute("body", "data-stale") == "0"


def _center(p, selector: str) -> tuple[float, float]:
    box = p.locator(selector).bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_a_new_run_clears_the_old_error_when_it_starts(page):
    p, _ = page
    p.fill("#text-a", "  ")
    p.fill("#text-b", "")
    p.click("#run")
    p.wait_for_selector("body[data-errors='1']")
    assert p.is_visible("#error")
    p.fill("#text-a", "The cat sat on the mat")
    # click and look in the same JavaScript turn: the request has been sent, its answer cannot
    # have arrived yet (the page is still busy), and the old error is already gone
    hidden, state = p.evaluate("""() => {
        document.getElementById('run').click();
        return [document.getElementById('error').hidden, document.body.dataset.state];
    }""")
    assert state == "busy"
    assert hidden, "the previous error stayed visible while the new run was computing"
    wait_render(p, 1)
    assert p.is_hidden("#error") and not stale(p)


# ------------------------------------------------------------------------- figures
LONG_TOKENS_A = "Quantum information and communication theory describe entanglement"
LONG_TOKENS_B = "Classical information theory studies entropy and communication"

_TICK_GEOMETRY = """(id) => {
    const div = document.getElementById(id);
    const box = (el) => {
        const b = el.getBoundingClientRect();
        return [b.left, b.top, b.right, b.bottom];
    };
    const texts = (sel) => [...div.querySelectorAll(sel)].map((e) => [e.textContent, box(e)]);
    return {
        svg: box(div.querySelector('.main-svg')),
        plot: box(div.querySelector('.nsewdrag')),
        x: texts('.xtick text'), y: texts('.ytick text'),
    };
}"""


def test_heatmap_tick_labels_are_not_clipped(page):
    p, _ = page
    p.fill("#text-a", LONG_TOKENS_A)
    p.fill("#text-b", LONG_TOKENS_B)
    p.click("#run")
    wait_render(p, 1)
    p.wait_for_timeout(300)
    for heat in ("heat-a", "heat-b"):
        g = p.evaluate(_TICK_GEOMETRY, heat)
        sl, st, sr, sb = g["svg"]
        pl, pt, pr, pb = g["plot"]
        labels = [t for t, _ in g["x"]]
        assert "information" in labels and "communication" in labels, labels
        assert [t for t, _ in g["y"]] == labels
        for axis, ticks in (("x", g["x"]), ("y", g["y"])):
            for text, (left, t, r, b) in ticks:
                inside = sl - 0.5 <= left and r <= sr + 0.5 and st - 0.5 <= t and b <= sb + 0.5
                assert inside, (
                    f"{heat}: {axis} label {text!r} at "
                    f"{(left, t, r, b)} is cut by the figure {g['svg']}"
                )
                if axis == "x":
                    assert t >= pb - 0.5, f"{heat}: x label {text!r} overlaps the matrix"
                else:
                    assert r <= pl + 0.5, f"{heat}: y label {text!r} overlaps the matrix"


_LINES_OUTSIDE = """([id, areaSel]) => {
    // lines (zero lines, grid lines, shapes) drawn outside the matrix / the plot area
    const div = document.getElementById(id);
    const a = div.querySelector(areaSel).getBoundingClientRect();
    const out = [];
    const drawn = '.zerolinelayer path, .gridlayer path, .shapelayer path';
    for (const el of div.querySelectorAll(drawn)) {
        const b = el.getBoundingClientRect();
        if (b.width === 0 && b.height === 0) continue;
        if (b.left < a.left - 1 || b.right > a.right + 1
            || b.top < a.top - 1 || b.bottom > a.bottom + 1) {
            out.push([el.getAttribute('class') || 'shape', [b.left, b.top, b.right, b.bottom]]);
        }
    }
    return out;
}"""


def test_no_line_runs_outside_the_figures(page):
    """The [CLS] row of the distance heatmaps had a line through it that ran past the matrix into
    the margins (the y axis' zero line on a range widened for square cells); the diagram's
    threshold line ran into its left margin."""
    p, _ = page
    p.fill("#text-a", LONG_TOKENS_A)
    p.fill("#text-b", LONG_TOKENS_B)
    p.click("#run")
    wait_render(p, 1)
    p.wait_for_timeout(300)
    for heat in ("heat-a", "heat-b"):
        assert p.evaluate(_LINES_OUTSIDE, [heat, ".hm image"]) == [], heat
    for fig in ("diagram", "barcode", "head-map"):
        assert p.evaluate(_LINES_OUTSIDE, [fig, ".nsewdrag"]) == [], fig
    p.select_option("#heat-kind", "attention")
    p.wait_for_timeout(300)
    assert p.evaluate(_LINES_OUTSIDE, ["heat-a", ".hm image"]) == []


def test_cls_row_has_no_line_beside_the_matrix(page):
    """What the eye saw: pixels right of the matrix, in the [CLS] row, up to the colour bar."""
    Image = pytest.importorskip("PIL.Image")
    import io

    p, _ = page
    p.fill("#text-a", LONG_TOKENS_A)
    p.fill("#text-b", "")
    p.click("#run")
    wait_render(p, 1)
    p.wait_for_timeout(300)
    p.locator("#heat-a").scroll_into_view_if_needed()
    img = p.locator("#heat-a .hm image").bounding_box()
    bar = p.locator("#heat-a .colorbar").bounding_box()
    n = int(p.evaluate("document.getElementById('heat-a').data[0].z.length"))
    row_h = img["height"] / n
    x0, x1 = img["x"] + img["width"] + 2, bar["x"] - 2
    assert x1 - x0 >= 4, "no room between the matrix and the colour bar to look at"
    clip = {"x": x0, "y": img["y"] + row_h * 0.25, "width": x1 - x0, "height": row_h * 0.5}
    band = Image.open(io.BytesIO(p.screenshot(clip=clip))).convert("L")
    darkest = band.getextrema()[0]
    assert darkest > 200, (
        f"a line crosses the [CLS] row beside the matrix (darkest pixel {darkest})"
    )


# ------------------------------------------------------------------------ truncation
def test_too_many_tokens_names_the_truncate_checkbox(page, server):
    """A text over the model's token limit (not the server's character limit): the error names
    the page's checkbox as the fix, and with it ticked the text is cut to the limit."""
    import json

    p, _ = page
    text = "x. " * 300  # 900 characters, 602 MiniLM tokens; MiniLM takes 512
    p.fill("#text-a", text)
    p.fill("#text-b", "")
    p.select_option("#maxdim", "0")  # H0 only keeps 72 heads of 512 tokens quick
    p.click("#run")
    p.wait_for_selector("body[data-errors='1']")
    msg = p.text_content("#error")
    assert "602 tokens" in msg and "512" in msg, msg
    label = p.text_content("label:has(#truncate)").strip()
    assert label and label in msg, (label, msg)  # the fix named is the checkbox on this page
    assert "truncate=True" not in msg and "--truncate" not in msg, msg

    # the API says the same to a script, and names the request field
    r = p.request.post(server + "/api/analyze", data={"text": text, "maxdim": 0})
    assert r.status == 400 and '"truncate": true' in r.json()["error"], r.text()

    p.check("#truncate")
    with p.expect_request("**/api/analyze") as sent:
        p.click("#run")
    assert json.loads(sent.value.post_data)["truncate"] is True
    wait_render(p, 1)
    assert "cut to 512 tokens" in p.text_content("#status")
    assert "Truncated" in p.text_content("#numbers")
    assert p.evaluate("document.getElementById('graph-a').data[4].x.length") == 512
