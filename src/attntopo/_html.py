"""HTML fragments of results that need nothing beyond numpy: no JavaScript, no external resources.

:func:`analysis_html` and :func:`comparison_html` are the notebook views of an
:class:`~attntopo.Analysis` and a :class:`~attntopo.Comparison` (``_repr_html_``) and the
summary sections of :func:`attntopo.report.report_html`, which re-exports them with
:func:`default_heads`.  This module sits between the analyses and the figures: it reads
results, imports neither matplotlib nor plotly, and nothing below it imports it.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Sequence

import numpy as np

from .errors import InvalidInputError

__all__ = ["analysis_html", "check_result", "comparison_html", "default_heads"]

# viridis at 9 stops (matplotlib's values), for colouring table cells without matplotlib
_VIRIDIS = (
    (68, 1, 84),
    (71, 44, 122),
    (59, 81, 139),
    (44, 113, 142),
    (33, 144, 141),
    (39, 173, 129),
    (92, 200, 99),
    (170, 220, 50),
    (253, 231, 37),
)
_TABLE_CSS = (
    "border-collapse:collapse;font-size:12px;font-variant-numeric:tabular-nums;margin:4px 0 10px"
)
_CELL = "padding:2px 7px;border-bottom:1px solid #e5e7eb;text-align:right"


# ------------------------------------------------------------------------ helpers
def _viridis(t: float) -> str:
    if not math.isfinite(t):
        return "#e5e7eb"
    t = min(1.0, max(0.0, t)) * (len(_VIRIDIS) - 1)
    k = min(int(t), len(_VIRIDIS) - 2)
    f = t - k
    c = [round(a + (b - a) * f) for a, b in zip(_VIRIDIS[k], _VIRIDIS[k + 1])]
    return "#%02x%02x%02x" % tuple(c)


def _num(x: Any, digits: int = 3) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return escape(str(x))
    if math.isnan(f):
        return "–"
    if math.isinf(f):
        return "∞" if f > 0 else "−∞"
    if f.is_integer() and abs(f) < 1e9 and isinstance(x, (int, np.integer)):
        return str(int(f))
    a = abs(f)
    return (
        f"{f:.{digits}f}"
        if a < 10
        else f"{f:.2f}"
        if a < 100
        else f"{f:.1f}"
        if a < 1000
        else f"{f:.3g}"
    )


def check_result(obj: Any, kind: str) -> None:
    """Refuse with one line anything but an attntopo Analysis
    (``kind="analysis"``) or Comparison."""
    from .analyses import Analysis, Comparison

    cls = {"analysis": Analysis, "comparison": Comparison}[kind]
    if not isinstance(obj, cls):
        raise InvalidInputError(
            f"expected an attntopo {cls.__name__} (from "
            f"attntopo.{'analyze' if kind == 'analysis' else 'compare'}), got {type(obj).__name__}"
        )


def _grid_table(
    values: np.ndarray,
    layers: Sequence[int],
    heads: Sequence[int],
    label: str,
    mark: set[tuple[int, int]] | None = None,
) -> str:
    """A layers × heads table with cells coloured by value (viridis), no JavaScript."""
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    span = hi - lo if hi > lo else 1.0
    show = v.size <= 160
    head_cells = "".join(
        f'<th style="padding:1px 4px;font-weight:500;font-size:11px;color:#555">{h}</th>'
        for h in heads
    )
    rows = []
    for i, layer in enumerate(layers):
        cells = []
        for j, head in enumerate(heads):
            x = v[i, j]
            t = (x - lo) / span if math.isfinite(x) else math.nan
            fg = "#fff" if math.isfinite(t) and t < 0.6 else "#111"
            outline = (
                "outline:2px solid #c0392b;outline-offset:-2px;"
                if mark and (layer, head) in mark
                else ""
            )
            txt = _num(x, 2) if show else ""
            cells.append(
                f'<td title="layer {layer}, head {head}: {_num(x, 4)}" '
                f'style="background:{_viridis(t)};color:{fg};{outline}padding:1px '
                '4px;min-width:26px;text-align:center;font-size:10.5px">'
                f"{txt}</td>"
            )
        rows.append(
            '<tr><th style="padding:1px '
            f'6px;font-weight:500;font-size:11px;color:#555;text-align:right">{layer}</th>'
            + "".join(cells)
            + "</tr>"
        )
    return (
        f'<div style="margin:4px 0"><div style="font-size:12px;color:#555">{escape(label)} per '
        "head "
        f"(rows: layers, columns: heads; {_num(lo)} … {_num(hi)})</div>"
        '<table style="border-collapse:separate;border-spacing:1px;font-variant-numeric:'
        f'tabular-nums"><tr><th></th>{head_cells}</tr>{"".join(rows)}</table></div>'
    )


def _tokens_line(att, marked: set[int] | None = None, limit: int = 120) -> str:
    labels = att.labels
    out = []
    for t, lab in enumerate(labels[:limit]):
        s = escape(lab)
        if marked and t in marked:
            s = f'<b style="color:#00785a">{s}</b>'
        elif att.special[t]:
            s = f'<span style="color:#888">{s}</span>'
        out.append(s)
    more = f" … (+{len(labels) - limit})" if len(labels) > limit else ""
    return f'<div style="font-size:12px;color:#333;margin:2px 0 6px">{" · ".join(out)}{more}</div>'


def _stat_name(analysis) -> str:
    return f"max_persistence_h{analysis.ranking_dim}"


def default_heads(analysis, *, n: int = 3) -> list[tuple[int, int]]:
    """The ``n`` most persistent heads: largest finite bar in the analysis's
    :attr:`~attntopo.Analysis.ranking_dim` (H1, or H0 when most heads have no H1 bar)."""
    check_result(analysis, "analysis")
    if int(n) <= 0:
        return []
    return [(lay, hd) for lay, hd, _ in analysis.most_persistent_heads(k=int(n))]


# ------------------------------------------------------------------ fragments
def analysis_html(analysis, *, top: int = 10, stat: str | None = None) -> str:
    """A compact HTML view of an :class:`~attntopo.Analysis` (no JavaScript).

    Parameters
    ----------
    analysis : Analysis
    top : int
        Rows of the table of the most persistent heads.
    stat : str, optional
        Summary column that colours the heads grid (default ``max_persistence_h1``).

    Returns
    -------
    str
        An HTML fragment
        (for notebooks' ``_repr_html_`` and for :func:`attntopo.report.report_html`).
    """
    check_result(analysis, "analysis")
    a = analysis.attention
    stat = stat or _stat_name(analysis)
    table = analysis.summary()
    if stat not in table or stat in ("layer", "head"):
        allowed = ", ".join(k for k in table if k not in ("layer", "head"))
        raise InvalidInputError(f"unknown statistic {stat!r}; allowed: {allowed}")
    L, H = len(analysis.layers), len(analysis.heads)
    model = analysis.provenance.get("model", {})
    size = f"{model.get('n_layers', L)} layers × {model.get('n_heads', H)} heads"
    kind = ""
    if "causal" in model:
        kind = ", causal" if model["causal"] else ", bidirectional"
    thr = "∞" if math.isinf(analysis.threshold) else _num(analysis.threshold)
    head = (
        f'<div style="font-weight:600">attntopo Analysis · {escape(str(a.model))} '
        f'<span style="font-weight:400;color:#555">({size}{kind})</span></div>'
        f'<div style="font-size:12px;color:#555">{a.n_tokens} tokens · {L * H} heads analysed · '
        "metric "
        f"{escape(analysis.metric)}"
        f"{f' (paper: {escape(str(analysis.paper_compat))})' if analysis.paper_compat else ''} · "
        f"maxdim {analysis.maxdim} · threshold {thr} · engine "
        f"{escape(str(analysis.engine))}{' · truncated' if a.truncated else ''}</div>"
    )
    grid = ""
    if L * H > 1:
        grid = _grid_table(
            np.asarray(table[stat], dtype=np.float64).reshape(L, H),
            analysis.layers,
            analysis.heads,
            stat.replace("_", " "),
            mark=set(default_heads(analysis, n=3)),
        )
    rows = analysis.summary_rows()
    rows = sorted(rows, key=lambda r: (-float(r[stat]), r["layer"], r["head"]))[: max(1, int(top))]
    cols = ["layer", "head"]
    for d in range(analysis.maxdim + 1):
        cols += [
            f"n_bars_h{d}",
            f"max_persistence_h{d}",
            f"total_persistence_h{d}",
            f"persistence_entropy_h{d}",
        ]
    short = {
        "n_bars": "bars",
        "max_persistence": "max",
        "total_persistence": "total",
        "persistence_entropy": "entropy",
    }

    def col_name(c: str) -> str:
        if c in ("layer", "head"):
            return c
        base, d = c.rsplit("_h", 1)
        return f"H{d} {short[base]}"

    th = "".join(f'<th style="{_CELL};color:#555">{escape(col_name(c))}</th>' for c in cols)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_CELL}">{_num(r[c]) if c not in ("layer", "head") else r[c]}</td>'
            for c in cols
        )
        + "</tr>"
        for r in rows
    )
    caption = (
        f'<div style="font-size:12px;color:#555">Top {len(rows)} of {L * H} heads by '
        f"{escape(stat.replace('_', ' '))} (persistence in distance units, entropy in bits)</div>"
    )
    return (
        '<div class="attntopo-analysis" style="font-family:system-ui,sans-serif;color:#1f2328">'
        f"{head}{_tokens_line(a)}{grid}{caption}<table "
        f'style="{_TABLE_CSS}"><tr>{th}</tr>{body}</table></div>'
    )


def comparison_html(comparison, *, top: int = 10, dim: int | None = None) -> str:
    """A compact HTML view of a :class:`~attntopo.Comparison` (no JavaScript).

    Shared tokens (bold in both texts), a heads grid coloured by the bottleneck distance
    between the two texts' diagrams, and the ``top`` most similar heads with their
    distances and shared simplices.
    """
    check_result(comparison, "comparison")
    c = comparison
    d = c._dim(dim)
    A, B = c.a.attention, c.b.attention
    L, H = len(c.layers), len(c.heads)
    shared = ", ".join(escape(k) for k in c.keys) or "none"
    scale = (
        "per head (median H0 death of both texts), "
        f"{_num(float(np.nanmin(c.scales)))}–{_num(float(np.nanmax(c.scales)))}"
        if c.given_scale is None
        else _num(c.given_scale)
    )
    head = (
        f'<div style="font-weight:600">attntopo Comparison · {escape(str(A.model))}</div>'
        f'<div style="font-size:12px;color:#555">{A.n_tokens} / {B.n_tokens} tokens · {L * H} '
        "heads · "
        f"metric {escape(c.metric)} · maxdim {c.maxdim} · scale ε {scale}</div>"
        '<div style="font-size:12px;margin-top:4px"><b>A</b></'
        f"div>{_tokens_line(A, set(c.index_a.tolist()))}<div "
        f'style="font-size:12px"><b>B</b></div>{_tokens_line(B, set(c.index_b.tolist()))}<div '
        f'style="font-size:12px;color:#333">shared tokens ({len(c.keys)}): {shared}</div>'
    )
    r = c.ranking(by="bottleneck", dim=d)
    grid = ""
    if L * H > 1:
        marks = {(int(r["layer"][t]), int(r["head"][t])) for t in np.flatnonzero(r["rank"] <= 3)}
        grid = _grid_table(
            c.grid(name="bottleneck", dim=d),
            c.layers,
            c.heads,
            f"bottleneck H{d} between the texts (outlined: ranked 1–3, ties included)",
            mark=marks,
        )
    n_top = max(1, min(int(top), L * H))
    cols = (
        ["rank", "layer", "head", "ε"]
        + [f"bottl. H{k}" for k in range(c.maxdim + 1)]
        + [f"W1 H{k}" for k in range(c.maxdim + 1)]
        + ["shared edges", "shared triangles"]
    )
    th = "".join(f'<th style="{_CELL};color:#555">{escape(x)}</th>' for x in cols)
    body = []
    for t in range(n_top):
        lay, hd = int(r["layer"][t]), int(r["head"][t])
        i, j = c.layers.index(lay), c.heads.index(hd)
        cells = [
            f"{r['rank'][t]}{'=' if r['n_tied'][t] > 1 else ''}",
            str(lay),
            str(hd),
            _num(c.scales[i, j]),
        ]
        cells += [_num(c.diagram_distances["bottleneck"][i, j, k]) for k in range(c.maxdim + 1)]
        cells += [_num(c.diagram_distances["wasserstein1"][i, j, k]) for k in range(c.maxdim + 1)]
        cells += [
            str(int(c.counts["shared_edges"][i, j])),
            str(int(c.counts["shared_triangles"][i, j])),
        ]
        body.append("<tr>" + "".join(f'<td style="{_CELL}">{x}</td>' for x in cells) + "</tr>")
    why = "" if dim is not None else ", the highest dimension without a majority tie"
    caption = (
        f'<div style="font-size:12px;color:#555">The {n_top} most similar of {L * H} heads '
        f"(smallest bottleneck H{d}{why}; “1=”: tied ranks); diagram distances in distance units; "
        f"shared edges/triangles: among shared tokens, present in both texts at ε</div>"
    )
    return (
        '<div class="attntopo-comparison" style="font-family:system-ui,sans-serif;color:#1f2328">'
        f'{head}{grid}{caption}<table style="{_TABLE_CSS}"><tr>{th}</tr>{"".join(body)}'
        "</table></div>"
    )
