"""Saving figures: one function for matplotlib and plotly, chosen by the file suffix.

=============  ===================================  ==================================
suffix         matplotlib Figure                    plotly Figure
=============  ===================================  ==================================
``.png``       raster (``dpi``, default 150)        needs kaleido
``.svg``       vector, text as paths                needs kaleido
``.pdf``       vector, TrueType fonts (editable)    needs kaleido
``.html``      —                                    standalone, plotly.js inlined
=============  ===================================  ==================================

Files are written atomically (temporary file, then rename): a crash never leaves half a figure.
"""

from __future__ import annotations

import importlib.util
import io
import os
import warnings
from pathlib import Path
from typing import Any

from ..constants import PLOT_FORMATS
from ..errors import InvalidInputError, MissingDependencyError
from ..io import atomic_write_bytes

__all__ = [
    "save_figure",
    "figure_to_bytes",
    "figures_to_html",
    "plotly_div",
    "FORMATS",
    "MATPLOTLIB_FORMATS",
    "PLOTLY_FORMATS",
]

MATPLOTLIB_FORMATS = ("png", "svg", "pdf")
PLOTLY_FORMATS = ("html", "png", "svg", "pdf")
FORMATS = PLOT_FORMATS

# reproducible files: no creation dates, stable SVG ids, editable PDF text
_MPL_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}}
_MPL_RC = {"svg.hashsalt": "attntopo", "pdf.fonttype": 42}
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


def _kind(fig: Any) -> str:
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - plots needs matplotlib
        Figure = ()  # type: ignore[assignment]
    if Figure and isinstance(fig, Figure):
        return "matplotlib"
    mod = type(fig).__module__ or ""
    if mod.startswith("plotly") and hasattr(fig, "to_html"):
        return "plotly"
    raise InvalidInputError(
        f"save_figure takes a matplotlib Figure or a plotly Figure, got {type(fig).__name__}"
    )


def _format(fmt: str) -> str:
    f = str(fmt).lower().lstrip(".")
    if f not in FORMATS:
        raise InvalidInputError(
            f"unknown figure format {fmt!r}; allowed: {', '.join('.' + x for x in FORMATS)}"
        )
    return f


def figure_to_bytes(fig: Any, fmt: str, *, dpi: int = 150) -> bytes:
    """Render a figure to the bytes of a file of format
    ``fmt`` (``png``, ``svg``, ``pdf``, ``html``).

    Parameters
    ----------
    fig : matplotlib.figure.Figure or plotly.graph_objects.Figure
    fmt : str
        File format (with or without the leading dot).
    dpi : int
        Resolution of matplotlib PNGs.

    Raises
    ------
    InvalidInputError
        Unknown format, or ``html`` for a matplotlib figure.
    MissingDependencyError
        A static format for a plotly figure without kaleido installed.
    """
    fmt = _format(fmt)
    kind = _kind(fig)
    if kind == "matplotlib":
        if fmt not in MATPLOTLIB_FORMATS:
            raise InvalidInputError(
                f"matplotlib figures save as {', '.join('.' + x for x in MATPLOTLIB_FORMATS)}; "
                f"use the plotly twins (attntopo.plots.iplot_*) for .html"
            )
        import matplotlib

        buf = io.BytesIO()
        with matplotlib.rc_context(_MPL_RC), warnings.catch_warnings():
            # tokens in scripts the font lacks (CJK, emoji) draw as boxes; no warning per glyph
            warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
            warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
            fig.savefig(buf, format=fmt, dpi=dpi, metadata=_MPL_METADATA[fmt], facecolor="white")
        return buf.getvalue()
    # plotly
    if fmt == "html":
        fig, script = _for_page(fig)
        html = fig.to_html(
            include_plotlyjs=True,
            full_html=True,
            auto_play=False,
            config=_PLOTLY_CONFIG,
            post_script=script,
        )
        return html.encode("utf-8")
    if importlib.util.find_spec("kaleido") is None:
        raise MissingDependencyError(
            f"saving a plotly figure as .{fmt} needs kaleido: pip install kaleido "
            f"(or save as .html, which needs nothing more)"
        )
    try:
        return fig.to_image(format=fmt)
    except Exception as e:  # noqa: BLE001 - kaleido failures (no Chrome, …) are environment problems
        raise MissingDependencyError(
            f"kaleido could not render .{fmt}: "
            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None


def save_figure(fig: Any, path: str | os.PathLike, *, dpi: int = 150) -> Path:
    """Save a matplotlib or plotly figure; the format follows the suffix of ``path``.

    ``.png``, ``.svg``, ``.pdf`` for matplotlib figures; ``.html`` for plotly figures
    (a standalone page with plotly.js inlined: opens offline, loads nothing from a CDN);
    ``.png``/``.svg``/``.pdf`` for plotly figures when kaleido is installed.  The file is
    written atomically; missing parent folders are created.

    Parameters
    ----------
    fig : matplotlib.figure.Figure or plotly.graph_objects.Figure
    path : str or path-like
    dpi : int
        Resolution of matplotlib PNGs.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    InvalidInputError
        Unknown suffix (the message lists the allowed ones) or a format the figure's
        library cannot write.
    MissingDependencyError
        Static export of a plotly figure without kaleido.
    """
    p = Path(path)
    if not p.suffix:
        raise InvalidInputError(
            f"cannot tell the format of {str(p)!r}: give a suffix, one of "
            f"{', '.join('.' + x for x in FORMATS)}"
        )
    data = figure_to_bytes(fig, p.suffix, dpi=dpi)
    return atomic_write_bytes(p, data)


def plotly_div(fig: Any, *, include_plotlyjs: bool = False) -> str:
    """A plotly figure as an HTML ``<div>`` for a page of several (plotly.js not included unless
    asked: the page inlines it once)."""
    if _kind(fig) != "plotly":
        raise InvalidInputError("plotly_div takes a plotly figure (the iplot_* functions)")
    fig, script = _for_page(fig)
    html = fig.to_html(
        include_plotlyjs=include_plotlyjs,
        full_html=False,
        auto_play=False,
        config=_PLOTLY_CONFIG,
        post_script=script,
    )
    return _deferred(html)


def _deferred(html: str) -> str:
    """Plotly's figure HTML with its drawing handed to ``attntopoDefer`` (``assets/defer.js``,
    inlined with it): a page of many figures parses at once and draws them one by one, figures
    on screen first, instead of freezing until the last is drawn.  The figure's own script is
    the last ``<script>`` of the fragment (plotly.js, when included, comes before it)."""
    from .interactive import _asset_js

    start = html.rfind("<script")
    end = html.rfind("</script>")
    if start < 0 or end < start:
        return html
    body = html.index(">", start) + 1
    return (
        html[:body]
        + _asset_js("defer.js")
        + "\n(window.attntopoDefer || function (draw) { draw(); })(function () {"
        + html[body:end]
        + "\n});"
        + html[end:]
    )


def _for_page(fig: Any) -> tuple[Any, str | None]:
    """The figure as a page holds it and the inlined script it needs there (the threshold
    graph's ε slider; None for other figures)."""
    from .interactive import threshold_graph_page

    return threshold_graph_page(fig)


def figures_to_html(figures: Any, *, title: str = "attntopo figures") -> bytes:
    """One standalone HTML page holding several plotly figures (plotly.js inlined once).

    Parameters
    ----------
    figures : sequence of plotly Figure or of (heading, plotly Figure)
    title : str
        Page title and top heading.

    Returns
    -------
    bytes
        UTF-8 HTML; write it with :func:`attntopo.io.atomic_write_bytes` or open it offline.
    """
    from html import escape

    items = [f if isinstance(f, tuple) else (None, f) for f in figures]
    if not items:
        raise InvalidInputError("figures_to_html needs at least one plotly figure")
    sections = []
    for k, (heading, fig) in enumerate(items):
        if _kind(fig) != "plotly":
            raise InvalidInputError("figures_to_html takes plotly figures (the iplot_* functions)")
        div = plotly_div(fig, include_plotlyjs=(k == 0))
        h = f"<h2>{escape(str(heading))}</h2>" if heading else ""
        sections.append(f"<section>{h}{div}</section>")
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
        "h1{font-size:1.3em}h2{font-size:1.05em;margin:1.6em 0 .2em}</style></head><body>"
        f"<h1>{escape(title)}</h1>" + "".join(sections) + "</body></html>\n"
    )
    return page.encode("utf-8")
