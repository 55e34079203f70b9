"""Comparison reports stay small and their two-text graphs show what the old frames showed
(issue 15 item 1).

Before, ``iplot_compare_graphs`` stored one plotly frame per slider step with every edge and
triangle of both texts (a 128-token pair's report: see docs/web.md).  Now each text's matrix
travels once (per pair, the first slider step that reaches it) and
``plots/assets/compare_graphs.js`` draws each step in the page, under attntopo's one ε slider
(``plots/assets/scale_slider.js``, the threshold graph's and the explorer's widget; issue 29
item 5: no plotly slider any more).  These tests check, in Debian's
Chromium, that after moving the slider the page draws exactly what the frame
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
from report_page import expected_frame, move_slider, needs_browser, open_page  # noqa: E402
from report_page import two_text_state as drawn  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("web_browser")]
needs_browser = needs_browser()

MB = 1_000_000
A_TEXT = (
    "Information theory studies how much a message can be compressed and how reliably it can "
    "be sent over a noisy channel. Entropy measures the average surprise of a source, and mutual "
    "information tells us how much one variable reveals about another."
)
B_TEXT = (
    "Quantum information theory allows us to study attention using entanglement, and it gives a "
    "language for correlations that classical probability cannot express. Entropy and mutual "
    "information describe how much one part of a system reveals about another."
)
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
    c = at.compare(
        _fit(A_TEXT, 128, minilm),
        _fit(B_TEXT, 128, minilm),
        minilm,
        layers=[0, LAYER],
        heads=[1, HEAD],
        progress=False,
    )
    assert c.a.attention.n_tokens == c.b.attention.n_tokens == 128 and len(c.shared_tokens) >= 10
    return c


@pytest.fixture(scope="module")
def browser():
    from _live import chromium_browser

    with chromium_browser() as b:
        yield b


def test_figure_carries_no_frames_and_opens_at_the_comparison_scale(pair):
    fig = iplot_compare_graphs(pair, layer=LAYER, head=HEAD)
    m = fig.layout.meta["attntopo"]
    assert (
        not fig.frames and not fig.layout.sliders and m["kind"] == "compare_graphs"
    )  # no plotly slider
    base = float(pair.scales[pair.layers.index(LAYER), pair.heads.index(HEAD)])
    assert m["start"] == int(np.argmin(np.abs(np.asarray(m["scales"]) - base)))
    # the figure itself (fig.show(), before any script) holds the opening frame
    eps = m["scales"][m["start"]]
    want = expected_frame(pair, LAYER, HEAD, eps)
    assert fig.layout.title.text == want["title"]
    assert len(fig.data[2].x) == 3 * len(want["edges"][0]) and len(fig.data[6].x) == 3 * len(
        want["edges"][1]
    )
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
    """The JS-computed state after moving the ε slider equals the Python frame of that step."""
    fig = iplot_compare_graphs(pair, layer=LAYER, head=HEAD, highlight="information")
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
            assert want["title"].endswith(state["label"])  # the slider's label: ε and the counts
            for name in ("edges", "sh_edges", "sh_tris"):
                assert state[name] == want[name], (k, name)
            capped = any(len(want["tris"][s]) > MAX_DRAWN_TRIANGLES for s in (0, 1))
            if not capped:
                assert state["tris"] == want["tris"] and state["note"] == "", k
            else:
                # too many to draw: an earlier step's triangles, said so; the title's counts exact
                assert "Too many to draw" in state["note"]
                for s in (0, 1):
                    assert state["tris"][s] <= want["tris"][s]
                    assert len(state["tris"][s]) <= MAX_DRAWN_TRIANGLES
            seen.add(len(want["edges"][0]))
        assert len(seen) >= 3, "the slider changes what is drawn"


@needs_browser
def test_comparison_report_in_the_browser(pair, browser, tmp_path):
    """The whole report: its two-text graphs draw their opening frames; no request, no error."""
    path = write_report(
        tmp_path / "cmp.html", report_html(pair.a, comparison=pair, heads=[(LAYER, HEAD)])
    )
    with open_page(browser, path) as page:
        print(f"\ncomparison report interactive after {page.load_seconds:.1f} s")
        scope = f"#cmp-L{LAYER}H{HEAD}"
        state = drawn(page, scope)
        m = iplot_compare_graphs(pair, layer=LAYER, head=HEAD).layout.meta["attntopo"]
        want = expected_frame(pair, LAYER, HEAD, m["scales"][m["start"]])
        assert state["title"] == want["title"] and state["edges"] == want["edges"]
        k = m["start"] + 1
        state = move_slider(page, scope, k)
        assert state["title"] == expected_frame(pair, LAYER, HEAD, m["scales"][k])["title"]
