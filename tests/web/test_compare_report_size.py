"""Comparison reports stay small and their two-text graphs show what the old frames showed
(issue 15 item 1).

Before, ``iplot_compare_graphs`` stored one plotly frame per slider step with every edge and
triangle of both texts (a 128-token pair's report: see docs/web.md).  Now each text's matrix
travels once (per pair, the first slider step that reaches it) and
``plots/assets/compare_graphs.js`` draws each step in the page.  These tests check, in Debian's
Chromium, that after moving the figure's plotly slider the page draws exactly what the frame
of that step drew (computed here in Python from :func:`attntopo.complex_at` and
:meth:`Comparison.shared_simplices`, the functions the frames were built from), and that a
128-token pair's report is small.  Times are printed (``-s``), never asserted.
"""

from __future__ import annotations

import numpy as np
import pytest

import attntopo as at

pytest.importorskip("plotly")

from attntopo.plots import iplot_compare_graphs, save_figure  # noqa: E402
from attntopo.plots.interactive import MAX_DRAWN_TRIANGLES  # noqa: E402
from attntopo.report import report_html, write_report  # noqa: E402

from report_page import needs_browser, open_page  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("web_browser")]
needs_browser = needs_browser()

MB = 1_000_000
A_TEXT = ("Information theory studies how much a message can be compressed and how reliably it can "
          "be sent over a noisy channel. Entropy measures the average surprise of a source, and mutual "
          "information tells us how much one variable reveals about another.")
B_TEXT = ("Quantum information theory allows us to study attention using entanglement, and it gives a "
          "language for correlations that classical probability cannot express. Entropy and mutual "
          "information describe how much one part of a system reveals about another.")
LAYER, HEAD = 2, 4


def _fit(text: str, n: int, model) -> str:
    """The longest prefix (in words) of ``text`` repeated that MiniLM reads as ``n`` tokens."""
    words = (" ".join([text] * 4)).split()
    for k in range(len(words), 0, -1):
        t = " ".join(words[:k])
        if len(model.tokenizer(t)["input_ids"]) == n:
            return t
    raise AssertionError(f"no prefix of {n} tokens")


@pytest.fixture(scope="module")
def pair(minilm):
    """Two 128-token texts on MiniLM, four heads."""
    c = at.compare(_fit(A_TEXT, 128, minilm), _fit(B_TEXT, 128, minilm), minilm, layer=[0, LAYER],
                   head=[1, HEAD], progress=False)
    assert c.a.attention.n_tokens == c.b.attention.n_tokens == 128 and len(c.shared_tokens) >= 10
    return c


@pytest.fixture(scope="module")
def browser():
    from _live import chromium_browser

    with chromium_browser() as b:
        yield b


def _plural(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def expected_frame(c, layer: int, head: int, eps: float) -> dict:
    """What the frame of scale ``eps`` held: per text its edges and triangles (complex_at), the
    edges and triangles among shared tokens present in both texts (shared_simplices), and
    the title (counts)."""
    i, j = c.layers.index(layer), c.heads.index(head)
    both = c.shared_simplices(layer, head, eps=eps)
    out = {"edges": [], "tris": [], "sh_edges": [], "sh_tris": []}
    for side, an in (("a", c.a), ("b", c.b)):
        cx = at.complex_at(an.distances[i, j], eps)
        pos = {s.key: getattr(s, side) for s in c.shared_tokens}
        out["edges"].append({tuple(e) for e in cx.simplices(1).tolist()})
        out["tris"].append({tuple(t) for t in cx.simplices(2).tolist()})
        out["sh_edges"].append({tuple(sorted(pos[k] for k in s["tokens"])) for s in both if len(s["tokens"]) == 2})
        out["sh_tris"].append({tuple(sorted(pos[k] for k in s["tokens"])) for s in both if len(s["tokens"]) == 3})
    et = [f"{_plural(len(out['edges'][s]), 'edge')}, {_plural(len(out['tris'][s]), 'triangle')}" for s in (0, 1)]
    sh = f"{_plural(len(out['sh_edges'][0]), 'edge')}, {_plural(len(out['sh_tris'][0]), 'triangle')}"
    out["title"] = f"layer {layer}, head {head} · ε = {eps:.3g} · A: {et[0]} · B: {et[1]} · in both: {sh}"
    return out


def drawn(page, scope: str) -> dict:
    """The two-text graph's state in the page: its slider step and ε, the title, and per trace
    the drawn simplices as token index tuples (decoded from the node coordinates)."""
    state = page.evaluate(
        """(scope) => { const gd = document.querySelector(scope + ' .plotly-graph-div');
             const m = gd.layout.meta.attntopo;
             const arr = (a) => Array.from(a || []).map((v) => (v === null || Number.isNaN(v)) ? null : v);
             return { step: gd.dataset.attntopoCompareStep, eps: gd.dataset.attntopoCompareEps,
                      title: gd.layout.title.text, active: gd.layout.sliders[0].active,
                      note: gd.nextElementSibling.textContent,
                      traces: m.traces.dynamic.map((t) => [arr(gd.data[t].x), arr(gd.data[t].y)]),
                      nodes: m.traces.nodes.map((t) => [arr(gd.data[t].x), arr(gd.data[t].y)]) }; }""",
        scope)
    out = {k: state[k] for k in ("step", "eps", "title", "active", "note")}
    names = ("tris", "sh_tris", "edges", "sh_edges")
    for side in (0, 1):
        index = {xy: t for t, xy in enumerate(zip(*state["nodes"][side]))}
        assert len(index) == len(state["nodes"][side][0]), "node positions are distinct"
        for k, name in enumerate(names):
            xs, ys = state["traces"][4 * side + k]
            groups, cur = [], []
            for x, y in zip(xs, ys):
                if x is None:
                    groups.append(cur)
                    cur = []
                else:
                    cur.append(index[(x, y)])
            assert not cur, "every polyline ends in a gap"
            if name.endswith("tris"):
                assert all(len(g) == 4 and g[0] == g[3] for g in groups)
                groups = [g[:3] for g in groups]
            simplices = [tuple(sorted(g)) for g in groups]
            assert len(set(simplices)) == len(simplices), f"{name} drawn twice"
            out.setdefault(name, []).append(set(simplices))
    return out


def move_slider(page, scope: str, step: int) -> dict:
    """Click the plotly slider's tick of ``step`` (as a reader would) and wait for the redraw."""
    rail = page.locator(f"{scope} .slider-container .slider-rail-touch-rect").first
    rail.scroll_into_view_if_needed()  # a click lands only within the viewport
    tick = page.locator(f"{scope} .slider-container .slider-tick-rect").nth(step).bounding_box()
    rail = rail.bounding_box()
    page.mouse.click(tick["x"] + tick["width"] / 2, rail["y"] + rail["height"] / 2)
    page.wait_for_function(
        "([s, k]) => { const gd = document.querySelector(s + ' .plotly-graph-div');"
        " return gd.dataset.attntopoCompareReady === '1' && gd.dataset.attntopoCompareStep === String(k); }",
        arg=[scope, step])
    return drawn(page, scope)


def test_figure_carries_no_frames_and_opens_at_the_comparison_scale(pair):
    fig = iplot_compare_graphs(pair, LAYER, HEAD)
    m = fig.layout.meta["attntopo"]
    assert not fig.frames and m["kind"] == "compare_graphs"
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [f"{e:.4g}" for e in m["scales"]]  # the old frames' names
    base = float(pair.scales[pair.layers.index(LAYER), pair.heads.index(HEAD)])
    assert fig.layout.sliders[0].active == m["start"] == int(np.argmin(np.abs(np.asarray(m["scales"]) - base)))
    # the figure itself (fig.show(), before any script) holds the opening frame
    eps = m["scales"][m["start"]]
    want = expected_frame(pair, LAYER, HEAD, eps)
    assert fig.layout.title.text == want["title"]
    assert len(fig.data[2].x) == 3 * len(want["edges"][0]) and len(fig.data[6].x) == 3 * len(want["edges"][1])
    assert len(fig.data[3].x) == 3 * len(want["sh_edges"][0])


def test_128_token_pair_report_is_small(pair, tmp_path):
    path = write_report(tmp_path / "cmp.html", report_html(pair.a, comparison=pair, n_heads=2))
    size = path.stat().st_size
    print(f"\n128-token pair comparison report (2 + 2 heads): {size / MB:.2f} MB")
    # plotly.js (~4.8 MB) and per head O(n²): heatmaps in float32, one byte a pair per graph
    assert size <= 8 * MB
    assert "Plotly.animate" not in path.read_text(encoding="utf-8")[-2_000_000:]


@needs_browser
def test_page_draws_the_old_frames_at_every_visited_step(pair, browser, tmp_path):
    """The JS-computed state after moving the plotly slider equals the Python frame of that step."""
    fig = iplot_compare_graphs(pair, LAYER, HEAD, highlight="information")
    scales = fig.layout.meta["attntopo"]["scales"]
    start = fig.layout.meta["attntopo"]["start"]
    path = save_figure(fig, tmp_path / "cmp.html")
    with open_page(browser, path) as page:
        print(f"\n128-token two-text graph interactive after {page.load_seconds:.1f} s")
        state = drawn(page, "body")
        assert state["step"] == str(start) and state["active"] == start
        top = len(scales) - 1
        seen = set()
        for k in [start, 0, start + 3, top]:
            state = move_slider(page, "body", k) if k != start else state
            assert state["active"] == k and float(state["eps"]) == scales[k]
            want = expected_frame(pair, LAYER, HEAD, scales[k])
            assert state["title"] == want["title"], k
            for name in ("edges", "sh_edges", "sh_tris"):
                assert state[name] == want[name], (k, name)
            capped = any(len(want["tris"][s]) > MAX_DRAWN_TRIANGLES for s in (0, 1))
            if not capped:
                assert state["tris"] == want["tris"] and state["note"] == "", k
            else:  # too many to draw: an earlier step's triangles, said so; the title's counts exact
                assert "Too many to draw" in state["note"]
                for s in (0, 1):
                    assert state["tris"][s] <= want["tris"][s]
                    assert len(state["tris"][s]) <= MAX_DRAWN_TRIANGLES
            seen.add(len(want["edges"][0]))
        assert len(seen) >= 3, "the slider changes what is drawn"


@needs_browser
def test_comparison_report_in_the_browser(pair, browser, tmp_path):
    """The whole report: its two-text graphs draw their opening frames; no request, no error."""
    path = write_report(tmp_path / "cmp.html", report_html(pair.a, comparison=pair, heads=[(LAYER, HEAD)]))
    with open_page(browser, path) as page:
        print(f"\ncomparison report interactive after {page.load_seconds:.1f} s")
        scope = f"#cmp-L{LAYER}H{HEAD}"
        state = drawn(page, scope)
        m = iplot_compare_graphs(pair, LAYER, HEAD).layout.meta["attntopo"]
        want = expected_frame(pair, LAYER, HEAD, m["scales"][m["start"]])
        assert state["title"] == want["title"] and state["edges"] == want["edges"]
        k = m["start"] + 1
        state = move_slider(page, scope, k)
        assert state["title"] == expected_frame(pair, LAYER, HEAD, m["scales"][k])["title"]
