"""Palette, sizes and label thinning shared by the static and interactive figures.

Colours are the Okabe–Ito palette (distinguishable with every common colour-vision
deficiency); every homology dimension also gets its own marker, so diagrams stay readable
in greyscale.  Continuous data use viridis (distances) and cividis (attention).
"""

from __future__ import annotations

import math
from typing import Sequence

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
FONT = {"title": 10, "label": 9, "tick": 7, "token": 7, "legend": 8, "grid_tick": 5, "grid_label": 7}


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
    labels: Sequence[str] | None, n: int, max_labels: int = MAX_LABELS
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
