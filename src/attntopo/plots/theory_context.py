"""Figures of a :class:`~attntopo.theory.Context`: equivariance, margins, contextuality per layer.

==============================  ==========================================================
function                        what it shows
==============================  ==========================================================
:func:`plot_equivariance`       ``‖f(XP) − f(X)P‖ / ‖f(X)‖`` against depth (log scale), one
                                colour per condition, solid: the encoder up to that layer,
                                dashed: the layer alone; the float32 unit roundoff for scale
:func:`plot_margins`            within-text and cross-text margins (relative to the mean
                                pairwise distance) against depth
:func:`plot_similarity`         Ethayarajh's self-similarity, intra-sentence similarity and
                                the anisotropy baseline against depth
:func:`plot_word`               one word across contexts: mean JS distance between its
                                attention rows (both supports) and ``1 − cos`` of its hidden
                                states against depth
:func:`plot_context`            all four panels, one column per result (models side by side)
:func:`context_bundle`          :func:`plot_context` as a :class:`~attntopo.plots.Bundle`
                                (file stem ``context``)
==============================  ==========================================================

Like every attntopo figure: functions return a :class:`matplotlib.figure.Figure`, single-panel
ones accept ``ax=``, nothing calls ``show()`` or touches ``matplotlib.rcParams``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import InvalidInputError
from . import _style as S
from .bundles import Bundle
from .static import _figure_and_axes

__all__ = [
    "plot_equivariance",
    "plot_margins",
    "plot_similarity",
    "plot_word",
    "plot_context",
    "context_bundle",
]

_COND_COLORS = {
    "positions": S.OKABE_ITO["vermillion"],
    "no_positions": S.OKABE_ITO["blue"],
    "no_rotary_causal": S.OKABE_ITO["orange"],
}
_COND_LABELS = {
    "positions": "positions on",
    "no_positions": "positions off",
    "no_rotary_causal": "rotary off, causal mask on",
}
_U32 = 2.0**-24


def _check(result: Any) -> None:
    if getattr(result, "kind", None) != "context":
        raise InvalidInputError(
            f"expected a Context (from attntopo.theory.context), got {type(result).__name__}"
        )


def _style_axes(ax: Axes, ylabel: str, title: str) -> None:
    ax.set_xlabel("depth (0 = embeddings, l + 1 = after layer l)", fontsize=S.FONT["label"])
    ax.set_ylabel(ylabel, fontsize=S.FONT["label"])
    ax.set_title(title, fontsize=S.FONT["title"])
    ax.tick_params(labelsize=S.FONT["tick"])
    ax.legend(fontsize=S.FONT["legend"], frameon=False)


def plot_equivariance(result: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Relative equivariance error against depth,
    per condition (encoder solid, layer alone dashed)."""
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.5, 3.6))
    cols = result.summary()
    x = cols["depth"]
    floor = _U32
    for name in result.conditions:
        color = _COND_COLORS.get(name, S.OKABE_ITO["black"])
        for key, style, what in (
            (f"encoder_error_{name}", "-", "encoder"),
            (f"layer_error_{name}", "--", "layer"),
        ):
            y = np.asarray(cols[key], dtype=float)
            shown = np.where(
                np.isfinite(y), np.maximum(y, floor / 4), np.nan
            )  # exact zeros drawn at the bottom
            ax.plot(
                x,
                shown,
                style,
                color=color,
                marker="o",
                markersize=3,
                label=f"{_COND_LABELS.get(name, name)} ({what})",
            )
    ax.axhline(floor, color="#999999", lw=0.8, ls=":", label="float32 unit roundoff")
    ax.set_yscale("log")
    _style_axes(
        ax, "‖f(XP) − f(X)P‖ / ‖f(X)‖", title or f"{result.model}: permutation equivariance"
    )
    return fig


def plot_margins(result: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Contextual-mapping margins (divided by the mean pairwise distance) against depth."""
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.5, 3.6))
    cols = result.summary()
    x = cols["depth"]
    ax.plot(
        x,
        cols["margin_within_rel"],
        "-o",
        markersize=3,
        color=S.OKABE_ITO["blue"],
        label="within a text (min over texts)",
    )
    if result.n_cross_pairs:
        ax.plot(
            x,
            cols["margin_cross_rel"],
            "-s",
            markersize=3,
            color=S.OKABE_ITO["vermillion"],
            label=f"across texts ({result.n_cross_pairs} pairs)",
        )
    ax.set_ylim(bottom=0)
    _style_axes(
        ax, "min distance / mean distance", title or f"{result.model}: contextual-mapping margins"
    )
    return fig


def plot_similarity(result: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """Ethayarajh's self-similarity, intra-sentence similarity and anisotropy against depth."""
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.5, 3.6))
    cols = result.summary()
    x = cols["depth"]
    ax.plot(
        x,
        cols["intra_similarity"],
        "-o",
        markersize=3,
        color=S.OKABE_ITO["bluish_green"],
        label="intra-sentence similarity",
    )
    if result.n_cross_pairs:
        if len(result.similarity_words):
            ax.plot(
                x,
                cols["self_similarity"],
                "-s",
                markersize=3,
                color=S.OKABE_ITO["blue"],
                label=f"self-similarity ({len(result.similarity_words)} words)",
            )
        ax.plot(
            x,
            cols["anisotropy"],
            ":",
            color="#666666",
            label="anisotropy (random cross-text pairs)",
        )
    _style_axes(ax, "mean cosine", title or f"{result.model}: contextuality (Ethayarajh 2019)")
    return fig


def plot_word(result: Any, *, ax: Axes | None = None, title: str | None = None) -> Figure:
    """One word across its contexts: JS spread of its
    attention rows and ``1 − cos`` of its hidden states."""
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.5, 3.6))
    if result.word is None:
        ax.text(
            0.5,
            0.5,
            "no word studied (word=…)",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=S.FONT["label"],
        )
        ax.set_axis_off()
        return fig
    cols = result.summary()
    x = cols["depth"]
    for column, style, color, label in (
        ("word_js_relative", "-o", "blue", "attention JS, over offsets"),
        ("word_js_vocabulary", "-s", "orange", "attention JS, over token types"),
        ("word_hidden_cosine", "-^", "reddish_purple", "hidden states, 1 − cos"),
    ):
        ax.plot(x, cols[column], style, markersize=3, color=S.OKABE_ITO[color], label=label)
    ax.set_ylim(0, 1)
    _style_axes(
        ax,
        "mean over context pairs (and heads)",
        title or f"{result.model}: {result.word!r} in {len(result.word_texts)} contexts",
    )
    return fig


def plot_context(results: Any, *, title: str | None = None) -> Figure:
    """The four panels (rows) for one result or several (columns, e.g. both packaged models)."""
    if getattr(results, "kind", None) == "context":
        items: Sequence[Any] = [results]
    elif isinstance(results, (list, tuple)):
        items = list(results)
    else:
        raise InvalidInputError(
            f"expected a Context or a list of them (from attntopo.theory.context), got "
            f"{type(results).__name__}"
        )
    if not items:
        raise InvalidInputError("plot_context needs at least one Context")
    for r in items:
        _check(r)
    rows = 4 if any(r.word is not None for r in items) else 3
    fig = Figure(figsize=(5.2 * len(items), 3.1 * rows), layout="constrained")
    axes = np.asarray(fig.subplots(rows, len(items), squeeze=False))
    for c, r in enumerate(items):
        plot_equivariance(r, ax=axes[0, c])
        plot_margins(r, ax=axes[1, c])
        plot_similarity(r, ax=axes[2, c])
        if rows == 4:
            plot_word(r, ax=axes[3, c])
    if title:
        fig.suptitle(title, fontsize=S.FONT["title"] + 1)
    return fig


def context_bundle(result: Any) -> Bundle:
    """The figure of a context result as
    a :class:`~attntopo.plots.Bundle` (file stem ``context``)."""
    _check(result)
    return Bundle(
        lambda interactive: {} if interactive else {"context": plot_context(result)},
        title="attntopo context",
    )
