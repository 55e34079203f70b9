"""Checks of written figure files, shared by the figure tests of unit/plots/ and integration/."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.image

STATIC_FORMATS = ("png", "svg", "pdf")
_SCRIPT_SRC = re.compile(r"<script[^>]*\bsrc\s*=", re.IGNORECASE)


def check_figure_file(path: Path, fmt: str) -> None:
    """``path`` holds a real figure in ``fmt`` (png: an image larger than 100 × 100 pixels)."""
    data = path.read_bytes()
    assert len(data) > 500, path
    if fmt == "png":
        img = matplotlib.image.imread(path)
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    elif fmt == "svg":
        assert b"<svg" in data[:2000]
    elif fmt == "pdf":
        assert data.startswith(b"%PDF")


def check_standalone_html(path: Path) -> None:
    """``path`` is a plotly page that works offline: plotly.js inlined, no external script."""
    html = path.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<html") or html.lstrip().lower().startswith(
        "<!doctype"
    )
    assert not _SCRIPT_SRC.search(html), "no external scripts: plotly.js must be inlined"
    assert "cdn.plot.ly/plotly" not in html.split("</head>")[0]
    assert "Plotly.newPlot" in html  # the figure itself
    assert len(html) > 1_000_000  # plotly.js (several MB) is inlined
