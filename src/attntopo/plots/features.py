"""Figures of feature-based head selection: which heads matter, as a layer × head grid.

:func:`plot_head_importance` draws every head's score (``SelectHeads.scores_``,
:func:`attntopo.features.head_scores`) with the chosen heads outlined.  Like every attntopo
figure: a :class:`matplotlib.figure.Figure` is returned, ``ax=`` is accepted, nothing calls
``show()`` or touches ``matplotlib.rcParams``; :func:`attntopo.plots.save_figure` writes it as
PNG, SVG or PDF.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from ..errors import InvalidInputError
from . import _style as S
from .static import _figure_and_axes

__all__ = ["plot_head_importance"]


def _scores_of(source: Any) -> tuple[Mapping, list]:
    """(scores, chosen heads) of a dict, a fitted SelectHeads or a pipeline holding one."""
    if isinstance(source, Mapping):
        return source, []
    steps = [s for _, s in getattr(source, "steps", [])] or [source]
    for step in steps:
        scores = getattr(step, "scores_", None)
        if isinstance(scores, Mapping):
            return scores, list(getattr(step, "heads_", []))
    raise InvalidInputError(
        "plot_head_importance takes {(layer, head): score}, a fitted SelectHeads or a fitted "
        f"pipeline with one; got {type(source).__name__} without scores_"
    )


def plot_head_importance(
    source: Any,
    *,
    ax: Axes | None = None,
    chosen=None,
    n_layers: int | None = None,
    n_heads: int | None = None,
    label: str = "score",
    title: str | None = None,
) -> Figure:
    """Every head's importance as a layer × head grid (layers down, heads across).

    Parameters
    ----------
    source : dict of (int, int) to float, SelectHeads or Pipeline
        Scores per (layer, head) (:func:`attntopo.features.head_scores`), or a fitted
        :class:`attntopo.sklearn.SelectHeads` (its ``scores_``; its ``heads_`` are outlined),
        or a fitted pipeline holding one.
    ax : matplotlib Axes, optional
        Where to draw (a new figure otherwise).
    chosen : list of (int, int), optional
        Heads to outline (default: the selector's ``heads_``).
    n_layers, n_heads : int, optional
        Grid size (default: the largest indices scored, plus one); unscored heads are blank.
    label : str
        The colour bar's label (e.g. ``"cv accuracy"``, ``"ANOVA F"``).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    scores, picked = _scores_of(source)
    if not scores:
        raise InvalidInputError("no head scores to draw")
    try:
        items = [((int(a), int(b)), float(v)) for (a, b), v in scores.items()]
    except (TypeError, ValueError):
        raise InvalidInputError("scores must map (layer, head) pairs to numbers") from None
    chosen = picked if chosen is None else [(int(a), int(b)) for a, b in chosen]
    L = n_layers or max(a for (a, _), _ in items) + 1
    H = n_heads or max(b for (_, b), _ in items) + 1
    if any(not (0 <= a < L and 0 <= b < H) for (a, b), _ in items):
        raise InvalidInputError(f"a scored head lies outside the {L} x {H} grid")
    grid = np.full((L, H), np.nan)
    for (a, b), v in items:
        grid[a, b] = v
    fig, ax = _figure_and_axes(ax, (max(4.5, 0.42 * H + 2.0), max(3.2, 0.36 * L + 1.6)))
    im = ax.imshow(grid, cmap="viridis", aspect="auto", interpolation="nearest")
    fig.colorbar(im, ax=ax, label=label)
    for a, b in chosen:
        ax.add_patch(
            Rectangle(
                (b - 0.5, a - 0.5),
                1,
                1,
                fill=False,
                edgecolor=S.OKABE_ITO["vermillion"],
                linewidth=2.2,
            )
        )
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("head", fontsize=S.FONT["label"])
    ax.set_ylabel("layer", fontsize=S.FONT["label"])
    if title is None:
        title = "head importance" + (f" ({len(chosen)} chosen, outlined)" if chosen else "")
    ax.set_title(title, fontsize=S.FONT["title"])
    ax.tick_params(labelsize=S.FONT["tick"])
    return fig
