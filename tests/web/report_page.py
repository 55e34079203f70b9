"""Helpers of the report tests that open a written HTML file in Chromium (Playwright).

The page is opened from disk (``file://``): it must need nothing else.  ``open_page`` fails
the test on any console error, page error or request that is not the file itself or a
``data:`` URL.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Iterator

import attntopo as at

READY = ".attntopo-eps[data-ready='1']"
TIMEOUT_MS = 120_000  # generous: a functional bound on a busy 2-core machine, not a benchmark


@contextlib.contextmanager
def open_page(browser, path: Path, *, viewport=(1400, 1000)) -> Iterator:
    """A page showing the file, once every threshold graph (and two-text graph) has drawn;
    ``page.load_seconds`` holds how long that took (measured, never asserted)."""
    ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    url = Path(path).resolve().as_uri()
    t0 = time.perf_counter()
    page.goto(url)
    n_graphs = page.evaluate("() => document.querySelectorAll('.plotly-graph-div').length")
    assert n_graphs > 0, "no figure in the page"
    # every figure with a slider (threshold graphs, two-text graphs) has attached the one ε
    # slider (plots/assets/scale_slider.js) and drawn its opening step
    page.wait_for_function(
        "() => { const all = Array.from(document.querySelectorAll('.plotly-graph-div'))"
        ".filter((d) => d.layout && d.layout.meta && d.layout.meta.attntopo); "
        "const att = (d) => d.dataset.attntopoEps === '1' || d.dataset.attntopoCompare === '1'; "
        "return all.length > 0 && all.every(att) && "
        f'document.querySelectorAll("{READY}").length === all.length; }}'
    )
    page.load_seconds = time.perf_counter() - t0
    try:
        yield page
        foreign = [u for u in requests if u != url and not u.startswith("data:")]
        assert not foreign, f"the page made requests: {foreign[:5]}"
        assert not errors, f"console errors: {errors[:5]}"
    finally:
        ctx.close()


def slider_state(page, k: int, within: str = "") -> dict:
    """The k-th ε slider in page order, of a threshold graph or two-text graph (``within``: a
    CSS scope such as ``#L1H2``): its data attributes (step, eps; a threshold graph's edges,
    triangles, drawnEdges, drawnTriangles) and the visible label."""
    box = page.locator(f"{within} .attntopo-eps".strip()).nth(k)
    state = box.evaluate("(b) => Object.assign({}, b.dataset)")
    state["label"] = box.locator(".attntopo-eps-label").inner_text()
    return state


def step_to(page, k: int, step: int, within: str = "") -> dict:
    """Move the k-th slider to ``step`` with the keyboard, as a reader would (Home, End,
    arrow keys), and return its state once the page has redrawn."""
    box = page.locator(f"{within} .attntopo-eps".strip()).nth(k)
    slider = box.locator("input[type=range]")
    slider.focus()
    last = int(slider.get_attribute("max"))
    now = int(box.get_attribute("data-step"))
    if step == 0:
        slider.press("Home")
    elif step == last:
        slider.press("End")
    else:
        for _ in range(abs(step - now)):
            slider.press("ArrowRight" if step > now else "ArrowLeft")
    page.wait_for_function(
        "([b, s]) => b.dataset.step === String(s)", arg=[box.element_handle(), step]
    )
    return slider_state(page, k, within)


def _plural(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def expected_frame(c, layer: int, head: int, eps: float) -> dict:
    """What the frame of scale ``eps`` held: per text its edges and triangles (complex_at), the
    edges and triangles among shared tokens present in both texts (shared_simplices), and
    the title (counts)."""
    i, j = c.layers.index(layer), c.heads.index(head)
    both = c.shared_simplices(layer, head, scale=eps)
    out = {"edges": [], "tris": [], "sh_edges": [], "sh_tris": []}
    for side, an in (("a", c.a), ("b", c.b)):
        cx = at.complex_at(an.distances[i, j], eps)
        pos = {s.key: getattr(s, side) for s in c.shared_tokens}
        out["edges"].append({tuple(e) for e in cx.simplices(1).tolist()})
        out["tris"].append({tuple(t) for t in cx.simplices(2).tolist()})
        out["sh_edges"].append(
            {tuple(sorted(pos[k] for k in s["tokens"])) for s in both if len(s["tokens"]) == 2}
        )
        out["sh_tris"].append(
            {tuple(sorted(pos[k] for k in s["tokens"])) for s in both if len(s["tokens"]) == 3}
        )
    et = [
        f"{_plural(len(out['edges'][s]), 'edge')}, {_plural(len(out['tris'][s]), 'triangle')}"
        for s in (0, 1)
    ]
    sh = (
        f"{_plural(len(out['sh_edges'][0]), 'edge')}, {_plural(len(out['sh_tris'][0]), 'triangle')}"
    )
    out["title"] = (
        f"layer {layer}, head {head} · ε = {eps:.3g} · A: {et[0]} · B: {et[1]} · in both: {sh}"
    )
    return out


def two_text_state(page, scope: str) -> dict:
    """The two-text graph's state in the page: its slider's step and ε, the title, and per trace
    the drawn simplices as token index tuples (decoded from the node coordinates)."""
    state = page.evaluate(
        """(scope) => { const gd = document.querySelector(scope + ' .plotly-graph-div');
             const m = gd.layout.meta.attntopo;
             const box = gd.parentNode.querySelector('.attntopo-eps');
             const arr = (a) => Array.from(a || [])
                 .map((v) => (v === null || Number.isNaN(v)) ? null : v);
             return { step: box.dataset.step, eps: box.dataset.eps, title: gd.layout.title.text,
                      active: +box.querySelector('input[type=range]').value,
                      label: box.querySelector('.attntopo-eps-label').textContent,
                      note: gd.parentNode.querySelector('.attntopo-compare-note').textContent,
                      traces: m.traces.dynamic.map((t) => [arr(gd.data[t].x), arr(gd.data[t].y)]),
                      nodes: m.traces.nodes.map((t) => [arr(gd.data[t].x), arr(gd.data[t].y)]),
             }; }""",
        scope,
    )
    out = {k: state[k] for k in ("step", "eps", "title", "active", "label", "note")}
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
    """Move the graph's ε slider to ``step`` with the keyboard (as a reader would) and wait for
    the redraw: the same helper as the threshold graph's."""
    page.locator(f"{scope} .attntopo-eps").first.scroll_into_view_if_needed()
    step_to(page, 0, step, within=scope)
    page.wait_for_function(
        "([s, k]) => { const b = document.querySelector(s + ' .attntopo-eps');"
        " return b.dataset.ready === '1' && b.dataset.step === String(k); }",
        arg=[scope, step],
    )
    return two_text_state(page, scope)


def needs_browser():
    """The skip mark of the browser tests here (a warning says why they are skipped)."""
    import warnings

    import pytest

    from _live import chromium_missing_reason

    missing = chromium_missing_reason()
    if missing:
        warnings.warn(f"BROWSER TESTS SKIPPED: {missing}", stacklevel=2)
    return pytest.mark.skipif(missing is not None, reason=f"BROWSER TESTS SKIPPED: {missing}")
