"""Palette, sizes and label thinning shared by the static and interactive figures.

Colours are the Okabe–Ito palette (distinguishable with every common colour-vision
deficiency); every homology dimension also gets its own marker, so diagrams stay readable
in greyscale.  Continuous data use viridis (distances) and cividis (attention).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Callable, Sequence

import numpy as np

__all__ = [
    "OKABE_ITO",
    "DIM_COLORS",
    "DIM_MARKERS",
    "DIM_PLOTLY_SYMBOLS",
    "DISTANCE_CMAP",
    "ATTENTION_CMAP",
    "MAX_LABELS",
    "dim_color",
    "dim_marker",
    "label_step",
    "thin_labels",
    "short_label",
    "plural",
    "column_title",
    "metric_name",
    "wrap_title",
    "number_format",
]

#: Okabe & Ito (2008) colour-blind-safe qualitative palette.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}

#: Colour of each homology dimension (H0, H1, H2, H3).
DIM_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7")
#: Marker of each homology dimension (matplotlib).
DIM_MARKERS = ("o", "^", "s", "D")
#: Marker of each homology dimension (plotly).
DIM_PLOTLY_SYMBOLS = ("circle", "triangle-up", "square", "diamond")

DISTANCE_CMAP = "viridis"
ATTENTION_CMAP = "cividis"
NODE_COLOR = OKABE_ITO["blue"]
SPECIAL_COLOR = "#999999"
HIGHLIGHT_COLOR = OKABE_ITO["vermillion"]
EDGE_COLOR = "#4D4D4D"
TRIANGLE_COLOR = OKABE_ITO["sky_blue"]
INF_COLOR = "#666666"

#: Most tick labels drawn along one axis before thinning to every k-th.
MAX_LABELS = 40

#: Font sizes (points) used for figure elements.
FONT = {
    "title": 10,
    "label": 9,
    "tick": 7,
    "token": 7,
    "legend": 8,
    "grid_tick": 5,
    "grid_label": 7,
}


def dim_color(d: int) -> str:
    """Colour of homology dimension ``d``."""
    return DIM_COLORS[d % len(DIM_COLORS)]


def dim_marker(d: int) -> str:
    """matplotlib marker of homology dimension ``d``."""
    return DIM_MARKERS[d % len(DIM_MARKERS)]


def label_step(n: int, max_labels: int = MAX_LABELS) -> int:
    """Show every ``k``-th of ``n`` labels so that at most ``max_labels`` are drawn."""
    if n <= 0 or max_labels <= 0:
        return 1
    return max(1, math.ceil(n / max_labels))


def short_label(label: str, width: int = 14) -> str:
    """A token label cut to ``width`` characters (with an ellipsis), whitespace made visible."""
    s = str(label).replace("\n", "⏎").replace("\t", "⇥")
    if not s.strip():
        s = "␣" * max(1, len(s))
    return s if len(s) <= width else s[: width - 1] + "…"


def thin_labels(
    labels: Sequence[str] | None, n: int, *, max_labels: int = MAX_LABELS
) -> tuple[list[int], list[str]]:
    """Tick positions and texts for ``n`` tokens: every ``k``-th label, at most ``max_labels``.

    Parameters
    ----------
    labels : sequence of str of length n, or None
        Token labels; ``None`` labels the ticks with token positions.
    n : int
        Number of tokens.
    max_labels : int
        Most labels drawn.

    Returns
    -------
    positions : list of int
    texts : list of str
    """
    step = label_step(n, max_labels)
    pos = list(range(0, n, step))
    if labels is None:
        return pos, [str(i) for i in pos]
    texts = [short_label(labels[i]) for i in pos]
    if step > 1:
        texts = [f"{t} ({i})" for t, i in zip(texts, pos)]
    return pos, texts


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 edge"``, ``"2 edges"``, ``"0 edges"``: a count with its noun in the right number.

    ``many`` is the plural when it is not ``word + "s"`` (``plural(2, "vertex", "vertices")``).
    """
    n = int(n)
    return f"{n} {word if n == 1 else (many or word + 's')}"


#: Human names of the summary columns' stems (``{stem}_h{d}`` reads ``"{name} (H{d})"``).
COLUMN_NAMES = {
    "n_bars": "bars",
    "n_infinite": "infinite bars",
    "total_persistence": "total persistence",
    "max_persistence": "max persistence",
    "persistence_entropy": "persistence entropy",
    "bottleneck": "bottleneck distance",
    "wasserstein1": "Wasserstein-1 distance",
    "wasserstein2": "Wasserstein-2 distance",
    "shared_bottleneck": "bottleneck distance of the shared tokens",
    "shared_wasserstein1": "Wasserstein-1 distance of the shared tokens",
    "shared_wasserstein2": "Wasserstein-2 distance of the shared tokens",
    "shared_edges": "shared edges",
    "shared_triangles": "shared triangles",
    "edges_a": "edges among shared tokens in A",
    "edges_b": "edges among shared tokens in B",
    "triangles_a": "triangles among shared tokens in A",
    "triangles_b": "triangles among shared tokens in B",
}

_DIM_SUFFIX = re.compile(r"^(.*)_h(\d+)$")


def column_title(name: str) -> str:
    """The title a figure shows for a result column:
    ``"max_persistence_h1"`` → ``"max persistence (H1)"``.

    One mapping (:data:`COLUMN_NAMES`) for every figure; an unknown name has its underscores
    replaced by spaces.
    """
    name = str(name)
    m = _DIM_SUFFIX.match(name)
    stem, dim = (m.group(1), int(m.group(2))) if m else (name, None)
    words = COLUMN_NAMES.get(stem, stem.replace("_", " "))
    return words if dim is None else f"{words} (H{dim})"


def wrap_title(text: str, width: float, fontsize: float) -> str:
    """Break a title into lines that fit ``width`` inches at ``fontsize`` points.

    Breaks go after the `` · `` separators of attntopo's titles first, then between words;
    existing line breaks are kept.  The width of a character is taken as 0.6 em (DejaVu Sans'
    mean is 0.55 em), so a line rather breaks early than runs over.
    """
    import textwrap

    per_line = max(8, int(width * 72.0 / (0.6 * float(fontsize))))
    out = []
    for para in str(text).split("\n"):
        line = ""
        for k, part in enumerate(para.split(" · ")):
            cand = part if not line else f"{line} · {part}"
            if len(cand) <= per_line:
                line = cand
                continue
            if line:
                out.append(line + " ·")
            pieces = textwrap.wrap(part, per_line) or [""]
            out.extend(pieces[:-1])
            line = pieces[-1]
        out.append(line)
    return "\n".join(out)


def metric_name(metric: str) -> str:
    """``"jensen_shannon"`` → ``"Jensen–Shannon"``: a token metric as figures write it (its
    label in :data:`attntopo.distances.DISTANCES`)."""
    from ..distances import DISTANCES

    d = DISTANCES.get(str(metric))
    return d.label if d is not None else str(metric).replace("_", " ")


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def number_format(values, digits: int = 2) -> tuple[Callable[[float], str], str]:
    """One number format for every value of a figure (cells and colour-bar ticks alike).

    Whole numbers are written as integers.  Otherwise, with ``m`` the largest magnitude and
    ``e = floor(log10(m))``: for ``-2 ≤ e ≤ 3`` every value gets the same number of decimals,
    enough for ``digits`` significant digits of ``m`` (``0.52``, ``0.05``, ``0.00``); outside
    that range every value is written in units of ``10^e`` with ``digits - 1`` decimals and
    the unit is returned for the axis or colour-bar label (``4.8``, ``0.3`` and ``"×10⁻⁴"``),
    never a mix of ``0.00048`` and ``2.6e-05``.

    Parameters
    ----------
    values : array-like
        Every value the figure writes (NaN and ±inf are ignored and written ``–``).
    digits : int
        Significant digits of the largest value.

    Returns
    -------
    fmt : callable float -> str
        Its attribute ``resolution`` is the value of one unit in the last written digit
        (colour-bar ticks are placed on multiples of it).
    unit : str
        ``""`` or ``"×10ⁿ"`` (the factor the written numbers are multiplied by).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    digits = max(1, int(digits))

    def wrap(f: Callable[[float], str], resolution: float = 0.0) -> Callable[[float], str]:
        def fmt(x: float) -> str:
            x = float(x)
            if not math.isfinite(x):
                return "–"
            out = f(x)
            return (
                out[1:] if out.startswith("-") and not any(c in "123456789" for c in out) else out
            )  # no "-0.00"

        fmt.resolution = (
            resolution  # the value of one unit of the last written digit (0: not fixed)
        )
        return fmt

    if v.size == 0:
        return wrap(lambda x: f"{x:.{digits}g}"), ""
    m = float(np.max(np.abs(v)))
    if np.all(v == np.round(v)) and m < 1e6:
        return wrap(lambda x: f"{x:.0f}", 1.0), ""
    e = math.floor(math.log10(m))
    if round(m, digits - 1 - e) >= 10.0 ** (e + 1):
        e += 1  # 0.0999 rounds to 0.10: the exponent of the rounded value
    if -2 <= e <= 3:
        dec = max(0, digits - 1 - e)
        return wrap(lambda x: f"{x:.{dec}f}", 10.0**-dec), ""
    # exact decimal scaling: 10.0 ** e underflows to 0 (or x / 10.0 ** e overflows) for
    # subnormal values such as 5e-324, and Decimal rounds the exact binary value once
    return (
        wrap(lambda x: f"{Decimal(x).scaleb(-e):.{digits - 1}f}", 10.0 ** (1 - digits + e)),
        f"×10{str(e).translate(_SUPERSCRIPT)}",
    )
