"""Checks of the self-contained HTML pages attntopo writes (reports, notebook fragments), shared
by unit/test_report.py and cli/test_cli_report.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class Page(HTMLParser):
    """Tags, ids and script bodies of a page; fails on tags left open at the end."""

    VOID = {
        "meta",
        "link",
        "br",
        "img",
        "input",
        "hr",
        "source",
        "area",
        "base",
        "col",
        "embed",
        "wbr",
        "path",
        "rect",
        "circle",
        "line",
        "polygon",
    }

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.ids: set[str] = set()
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None
        self._buf: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "script":
            self._in_script, self._buf = a, []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._buf)))
            self._in_script = None
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, (
            f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        )
        self.stack.pop()

    def handle_data(self, data):
        if self._in_script is not None:
            self._buf.append(data)


def parse(html: str) -> Page:
    """The parsed page; every tag it opens is closed, in order."""
    p = Page()
    p.feed(html)
    p.close()
    assert p.stack == [], f"unclosed tags: {p.stack}"
    return p


def check_self_contained(html: str) -> Page:
    """A whole page that opens offline: no script or style loaded, plotly.js inlined once,
    every figure drawn into a div of the page."""
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, flags=re.I), (
        "a script is loaded, not inlined"
    )
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?https?:", html, flags=re.I)
    assert not re.search(r"<script src=[\"']?http", html, flags=re.I)
    p = parse(html)
    bodies = [body for _, body in p.scripts]
    plotly_js = [b for b in bodies if len(b) > 1_000_000 and "plotly" in b[:5000].lower()]
    assert len(plotly_js) == 1, "plotly.js must be inlined exactly once"
    drawn = re.findall(r'Plotly\.newPlot\(\s*"([^"]+)"', html)
    assert drawn and all(d in p.ids for d in drawn)
    return p
