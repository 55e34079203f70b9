"""Take the explorer screenshot of the docs: ``python tools/make_screenshot.py [OUT.png]``.

Starts the explorer on a free localhost port, compares two texts on MiniLM in Debian's
Chromium (headless) and saves the top of the page (default ``docs/img/explorer.png``), as
a palette PNG under 400 KB.  The server and the browser come from the browser tests'
helpers (tests/web/_live.py), so the picture shows the page those tests check.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "web"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _live import chromium_browser, chromium_missing_reason, live_server  # noqa: E402

TEXT_A = "Quantum information theory allows us to study attention using entanglement"
TEXT_B = "Classical information theory studies entropy and the limits of communication"
MAX_BYTES = 400 * 1024


def main(
    out: str = "docs/img/explorer.png",
    layer: int | None = None,
    head: int | None = None,
    eps: str | None = None,
) -> Path:
    """Layer, head and ε default to what the page picks (the most persistent head of text A,
    its suggested scale)."""
    why = chromium_missing_reason()
    if why:
        raise SystemExit(f"cannot take the screenshot: {why}")
    target = Path(out)
    with live_server() as url, chromium_browser() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 1330}, device_scale_factor=1)
        page.set_default_timeout(180_000)
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        page.fill("#text-a", TEXT_A)
        page.fill("#text-b", TEXT_B)
        page.click("#run")
        page.wait_for_selector("body[data-renders='1']")
        n = 1
        for sel, value in (("#layer", layer), ("#head", head)):
            if value is not None and page.input_value(sel) != str(value):
                page.select_option(sel, str(value))
                n += 1
                page.wait_for_selector(f"body[data-renders='{n}']")
        if eps is not None:
            page.fill("#eps", eps)
        page.wait_for_timeout(800)
        png = page.screenshot(full_page=False)
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    for colors in (256, 128, 64):
        buf = io.BytesIO()
        img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(
            buf, format="PNG", optimize=True
        )
        if buf.tell() <= MAX_BYTES:
            break
    target.parent.mkdir(parents=True, exist_ok=True)
    from attntopo.io import atomic_write_bytes

    atomic_write_bytes(target, buf.getvalue())
    print(f"wrote {target} ({buf.tell() // 1024} KB, {img.width}×{img.height})")
    return target


if __name__ == "__main__":
    main(*sys.argv[1:2], eps=os.environ.get("ATTNTOPO_SCREENSHOT_EPS", "0.3"))
