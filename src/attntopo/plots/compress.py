"""Figures of a :class:`~attntopo.compress.Compression`: how far each head was compressed.

:func:`plot_compression_heads` draws distinct rows / n for every compressed head as a layer × head
grid; :func:`compression_bundle` wraps it for ``attntopo compress --plots``.  Like every attntopo
figure: a :class:`matplotlib.figure.Figure` is returned, ``ax=`` is accepted, nothing calls
``show()`` or touches ``matplotlib.rcParams``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..errors import InvalidInputError
from . import _style as S
from .bundles import Bundle
from .static import _figure_and_axes

__all__ = ["plot_compression_heads", "compression_bundle"]


def _check(result: Any) -> None:
    if getattr(result, "kind", None) != "compression":
        raise InvalidInputError(
            f"expected a Compression (from attntopo.compress), got {type(result).__name__}"
        )


def plot_compression_heads(
    result: Any, *, ax: Axes | None = None, title: str | None = None
) -> Figure:
    """Distinct attention rows / n of every compressed head
    (layers down, heads across; blank: not compressed)."""
    _check(result)
    fig, ax = _figure_and_axes(ax, (6.0, 4.2))
    heads = np.asarray(result.heads)
    L = int(heads[:, 0].max()) + 1 if heads.size else 1
    H = int(heads[:, 1].max()) + 1 if heads.size else 1
    grid = np.full((L, H), np.nan)
    if heads.size:
        grid[heads[:, 0], heads[:, 1]] = np.asarray(result.clusters) / result.n_tokens
    im = ax.imshow(
        grid, cmap=S.DISTANCE_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest"
    )
    fig.colorbar(im, ax=ax, label="distinct rows / n")
    ax.set_xlabel("head", fontsize=S.FONT["label"])
    ax.set_ylabel("layer", fontsize=S.FONT["label"])
    effect = ", ".join(f"{k} {v:.3g}" for k, v in result.effect.items())
    ax.set_title(
        title
        or f"{result.model}: {result.method}/{result.representative} at scale {result.scale} "
        f"({effect})",
        fontsize=S.FONT["title"],
    )
    for axis in (ax.xaxis, ax.yaxis):  # a layer or a head is a whole number: no "layer 0.5"
        axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.tick_params(labelsize=S.FONT["tick"])
    return fig


def compression_bundle(result: Any) -> Bundle:
    """The figure of a compression as a :class:`~attntopo.plots.Bundle` (file stem ``heads``)."""
    _check(result)
    return Bundle(
        lambda interactive: {} if interactive else {"heads": plot_compression_heads(result)},
        title="attntopo compression",
    )
