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
    page.wait_for_function(
        "() => { const all = Array.from(document.querySelectorAll('.plotly-graph-div'))"
        ".filter((d) => d.layout && d.layout.meta && d.layout.meta.attntopo); "
        "const g = all.filter((d) => d.layout.meta.attntopo.kind === 'threshold_graph'); "
        "const c = all.filter((d) => d.layout.meta.attntopo.kind === 'compare_graphs'); "
        "return all.length > 0 && g.every((d) => d.dataset.attntopoEps === '1') && "
        f"document.querySelectorAll(\"{READY}\").length === g.length && "
        "c.every((d) => d.dataset.attntopoCompareReady === '1'); }"
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
    """The k-th threshold graph's slider (``within``: a CSS scope such as ``#L1H2``): its data
    attributes (step, eps, edges, triangles, drawnStep) and the visible label."""
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
    page.wait_for_function("([b, s]) => b.dataset.step === String(s)", arg=[box.element_handle(), step])
    return slider_state(page, k, within)


def needs_browser():
    """The skip mark of the browser tests here (a warning says why they are skipped)."""
    import warnings

    import pytest
    from _live import chromium_missing_reason

    missing = chromium_missing_reason()
    if missing:
        warnings.warn(f"BROWSER TESTS SKIPPED: {missing}", stacklevel=2)
    return pytest.mark.skipif(missing is not None, reason=f"BROWSER TESTS SKIPPED: {missing}")
