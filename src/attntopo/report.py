"""Self-contained HTML: reports to send to a colleague, and rich display in notebooks.

* :func:`analysis_html` and :func:`comparison_html` return compact HTML fragments (a
  heads grid coloured by a statistic and a table of the top heads; no JavaScript, no
  external resources).  ``Analysis._repr_html_`` and ``Comparison._repr_html_`` show them.
  They live in :mod:`attntopo._html` (numpy only) and are re-exported here.
* :func:`report_html` returns one whole page with those tables and the interactive figures
  of :mod:`attntopo.plots.bundles` (the all-heads grid, and per chosen head the persistence
  diagram, the distance matrix and the threshold graph with its slider; for a comparison the
  per-head grid, both threshold graphs and both diagrams) — the same figures ``attntopo
  analyze/compare --plots --plot-format html`` writes.  plotly.js is inlined once: the file
  opens offline and makes no request.  :func:`write_report` writes it atomically.

>>> import attntopo as at
>>> from attntopo.report import report_html, write_report
>>> a = at.analyze("Quantum information theory allows us to study attention")
>>> write_report("report.html", report_html(a))              # doctest: +SKIP
>>> c = at.compare("Information theory studies entropy", "Quantum information theory")
>>> write_report("cmp.html", report_html(c.a, comparison=c))  # doctest: +SKIP

This module is a leaf of the package (it assembles; nothing in attntopo imports it but the
command line, the explorer and the notebook hook).  The figures need the ``plots`` extra; the
HTML fragments need nothing beyond numpy.
"""

from __future__ import annotations

import datetime as _dt
from html import escape
from pathlib import Path
from typing import Sequence

import numpy as np

from ._html import analysis_html, check_result, comparison_html, default_heads
from .errors import InvalidInputError

__all__ = [
    "analysis_html",
    "comparison_html",
    "report_html",
    "write_report",
    "default_heads",
]


def report_html(
    analysis,
    *,
    comparison=None,
    heads: Sequence[tuple[int, int]] | None = None,
    n_heads: int = 3,
    title: str | None = None,
) -> str:
    """One self-contained HTML page: tables, the all-heads grid and interactive figures.

    Parameters
    ----------
    analysis : Analysis
        The text's analysis (for a comparison, ``comparison.a`` is a good choice: it holds
        every head of text A already).
    comparison : Comparison, optional
        Adds the comparison: shared tokens, the per-head grid of diagram distances, and
        per chosen head both threshold graphs and both diagrams.
    heads : list of (layer, head), optional
        Heads drawn in full (0-based model indices; default: the ``n_heads`` most
        persistent, and for the comparison the ``n_heads`` most similar).
    n_heads : int
        How many heads by default.
    title : str, optional

    Returns
    -------
    str
        The page (UTF-8 text; plotly.js inlined once, no external request).
    """
    check_result(analysis, "analysis")
    if comparison is not None:
        check_result(comparison, "comparison")
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 0:
        raise InvalidInputError(f"n_heads must be an int >= 0, got {n_heads!r}")
    from ._version import __version__
    from .plots import analysis_bundle, comparison_bundle, head_tag, plotly_div
    from .plots.interactive import threshold_graph_eps

    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        from .errors import MissingDependencyError

        raise MissingDependencyError(
            "HTML reports need plotly: pip install 'attntopo[plots]'"
        ) from None

    a = analysis.attention
    bundle = analysis_bundle(analysis, heads=heads, n_heads=n_heads)
    figs = bundle.figures(interactive=True)
    sections: list[str] = []
    nav: list[tuple[str, str]] = []

    def section(anchor: str, heading: str, body: str) -> None:
        nav.append((anchor, heading))
        sections.append(f'<section id="{anchor}"><h2>{escape(heading)}</h2>{body}</section>')

    section("summary", "Summary", analysis_html(analysis))
    if "head_grid" in figs:
        section(
            "heads",
            "All heads",
            plotly_div(figs["head_grid"])
            + '<p class="note">Use the menu to colour the grid by another statistic.</p>',
        )
    for layer, head in bundle.heads:
        tag = head_tag(layer, head)
        eps = threshold_graph_eps(figs[f"{tag}_graph"])  # the graph opens at the suggested scale
        body = (
            f'<p class="note">Suggested scale for this head: ε = {eps:.3g} (the threshold graph '
            "opens "
            "there). Its slider sets ε: edges join tokens at distance ≤ ε, filled triangles have "
            "all three sides ≤ ε; the page computes them from the distance matrix.</p>"
            f'<div class="row"><div>{plotly_div(figs[f"{tag}_diagram"])}</div>'
            f"<div>{plotly_div(figs[f'{tag}_distances'])}</div></div>"
            f"{plotly_div(figs[f'{tag}_graph'])}"
        )
        section(f"L{layer}H{head}", f"Layer {layer}, head {head}", body)
    if comparison is not None:
        c = comparison
        cb = comparison_bundle(c, heads=heads, n_heads=n_heads)
        cfigs = cb.figures(interactive=True)
        section("comparison", "Comparison", comparison_html(c))
        if "heads" in cfigs:
            section(
                "comparison-heads",
                "Comparison per head",
                plotly_div(cfigs["heads"]) + '<p class="note">Use the menu to show another '
                "distance or a shared-simplex count.</p>",
            )
        for layer, head in cb.heads:
            tag = head_tag(layer, head)
            body = (
                '<p class="note">The slider under the two threshold graphs sets ε; the page '
                "computes "
                "both texts' edges and triangles (green: present in both texts) from their "
                "distance matrices.</p>"
                + plotly_div(cfigs[f"{tag}_graphs"])
                + plotly_div(cfigs[f"{tag}_diagrams"])
            )
            section(f"cmp-L{layer}H{head}", f"Comparison · layer {layer}, head {head}", body)

    model = analysis.provenance.get("model", {})
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    title = title or (
        f"attntopo report · {a.model}" + (" · comparison" if comparison is not None else "")
    )
    texts = f"<p><b>Text{' A' if comparison is not None else ''}:</b> {escape(a.text)}</p>"
    if comparison is not None:
        texts += f"<p><b>Text B:</b> {escape(comparison.b.attention.text)}</p>"
    links = " · ".join(f'<a href="#{k}">{escape(v)}</a>' for k, v in nav)
    meta = (
        f"attntopo {escape(__version__)} · model {escape(str(model.get('name', a.model)))} · "
        f"metric {escape(analysis.metric)} · maxdim {analysis.maxdim} · created {created}"
    )
    css = (
        "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em "
        "auto;max-width:1280px;padding:0 1em;color:#1f2328}h1{font-size:1.35em;margin:.2em "
        "0}h2{font-size:1.1em;margin:1.6em 0 .3em;border-bottom:1px solid "
        "#d5dbe1;padding-bottom:.2em}.note,.meta{color:#59636e;font-size:13px}.row{display:flex;"
        "flex-wrap:wrap;gap:10px}nav{font-size:13px;margin:.4em 0 1em}a{color:#0072b2}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, '
        f'initial-scale=1"><title>{escape(title)}</title><style>{css}</style>'
        f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
        f'<h1>{escape(title)}</h1><div class="meta">{meta}</div>{texts}<nav>{links}</nav>'
        + "".join(sections)
        + '<p class="note">Self-contained: every script is '
        "inlined; this file makes no network request.</p>" + "</body></html>\n"
    )


def write_report(path, html: str) -> Path:
    """Write an HTML report atomically (temporary file, then rename); returns the path."""
    from .io import atomic_write_text

    p = Path(path)
    if p.is_dir():
        raise InvalidInputError(f"{str(p)!r} is a folder: give a file name such as report.html")
    return atomic_write_text(p, html)
