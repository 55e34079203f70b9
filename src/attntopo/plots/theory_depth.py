"""Figures of a :class:`~attntopo.theory.Depth`: every depth measure against depth.

:func:`plot_depth` draws one figure with a panel per measure — rank collapse of the hidden states
and of attention products, JS mean and diameter, H0 total persistence, attention entropy,
intrinsic dimension, neighbourhood overlap and Fisher–Rao movement — each as the mean over texts
with a band of ± one standard deviation.  Given several results (e.g. MiniLM and SmolLM2) it
draws them side by side on the same panels against *relative* depth (``depth / L``), so that a
6-layer and a 30-layer model share one axis.  :func:`depth_bundle` wraps it for
``attntopo depth --plots``.  Like every attntopo figure: a :class:`matplotlib.figure.Figure` is
returned, nothing calls ``show()`` or touches ``matplotlib.rcParams``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import InvalidInputError
from . import _style as S
from .bundles import Bundle

__all__ = ["plot_depth", "depth_bundle", "DEPTH_PANELS"]

_COLORS = (
    S.OKABE_ITO["blue"],
    S.OKABE_ITO["vermillion"],
    S.OKABE_ITO["bluish_green"],
    S.OKABE_ITO["reddish_purple"],
    S.OKABE_ITO["orange"],
    S.OKABE_ITO["sky_blue"],
)

#: The panels, in order: (title, y label, [(summary column, line label, line style)], log scale).
DEPTH_PANELS: tuple[tuple[str, str, tuple[tuple[str, str, str], ...], bool], ...] = (
    (
        "rank collapse of hidden states",
        "res(X) = ‖X − 1x̄ᵀ‖ / ‖X‖",
        (("res_hidden", "", "-"),),
        False,
    ),
    (
        "rank collapse of attention products",
        "res(A_l ⋯ A_0)",
        (("res_path_mean", "layer-mean product", "-"), ("res_path_head", "same-head paths", "--")),
        True,
    ),
    (
        "JS distances between rows",
        "JS distance (base 2)",
        (("js_mean", "mean", "-"), ("js_diameter", "diameter", "--")),
        False,
    ),
    ("H0 total persistence", "Σ H0 deaths (MST length)", (("h0_total", "", "-"),), False),
    ("attention entropy", "bits per row", (("entropy", "", "-"),), False),
    (
        "intrinsic dimension (TwoNN)",
        "dimension",
        (("intrinsic_dim", "pooled tokens", "-"), ("intrinsic_dim_text", "per text", "--")),
        False,
    ),
    ("neighbourhood overlap, depth l−1 → l", "k-NN overlap", (("knn_overlap", "", "-"),), False),
    ("Fisher–Rao movement, layer l−1 → l", "mean d_FR (rad)", (("fisher_rao", "", "-"),), False),
)


def _check(results: Sequence[Any]) -> None:
    if not results:
        raise InvalidInputError("plot_depth needs at least one Depth result")
    for r in results:
        if getattr(r, "kind", None) != "depth":
            raise InvalidInputError(
                f"expected Depth results (from attntopo.theory.depth), got {type(r).__name__}"
            )
    if len(results) > len(_COLORS):
        raise InvalidInputError(
            f"plot_depth draws at most {len(_COLORS)} results, got {len(results)}"
        )


def _style(ax: Axes, title: str, ylabel: str, xlabel: str) -> None:
    ax.set_title(title, fontsize=S.FONT["title"])
    ax.set_ylabel(ylabel, fontsize=S.FONT["label"])
    ax.set_xlabel(xlabel, fontsize=S.FONT["label"])
    ax.tick_params(labelsize=S.FONT["tick"])
    ax.grid(True, alpha=0.3, linewidth=0.5)


def plot_depth(*results: Any, title: str | None = None, relative: bool | None = None) -> Figure:
    """Every depth measure against depth: one panel per measure (:data:`DEPTH_PANELS`).

    Parameters
    ----------
    *results : Depth
        One result, or several (models side by side on the same panels, one colour each).
    title : str, optional
        Figure title (default: the models and numbers of texts).
    relative : bool, optional
        x = depth / L (``True``) or depth (``False``); default: relative for several results.

    Returns
    -------
    Figure
        2 × 4 panels.  Depth 0 is the embedding output, depth ``l + 1`` the output of layer ``l``;
        lines are means over texts, bands ± one standard deviation (none for a single text).
        The attention-product panel is logarithmic (products decay geometrically).
    """
    _check(results)
    rel = len(results) > 1 if relative is None else bool(relative)
    fig = Figure(figsize=(16.0, 7.6), layout="constrained")
    axes = fig.subplots(2, 4).ravel()
    xlabel = "relative depth (depth / L)" if rel else "depth (0 = embeddings)"
    for ax, (panel, ylabel, lines, log) in zip(axes, DEPTH_PANELS):
        for i, r in enumerate(results):
            cols = r.summary()
            x = cols["depth"] / (r.n_layers if rel else 1)
            for name, label, ls in lines:
                y = np.asarray(cols[name], dtype=np.float64)
                std_name = f"{name}_std"
                sd = (
                    np.asarray(cols[std_name], dtype=np.float64)
                    if std_name in cols
                    else np.full_like(y, np.nan)
                )
                ok = np.isfinite(y) & ((y > 0) if log else True)
                if not ok.any():
                    continue
                parts = [p for p in (r.model if len(results) > 1 else "", label) if p]
                ax.plot(
                    x[ok],
                    y[ok],
                    ls,
                    color=_COLORS[i],
                    marker="o",
                    markersize=2.5,
                    linewidth=1.3,
                    label=", ".join(parts) or None,
                )
                band = ok & np.isfinite(sd)
                if band.any():
                    lo = y[band] - sd[band]
                    if log:
                        lo = np.maximum(lo, y[band] * 1e-3)
                    ax.fill_between(
                        x[band], lo, y[band] + sd[band], color=_COLORS[i], alpha=0.15, linewidth=0
                    )
        if log:
            ax.set_yscale("log")
        _style(ax, panel, ylabel, xlabel)
        handles, labels = ax.get_legend_handles_labels()
        if labels:
            ax.legend(fontsize=S.FONT["legend"], frameon=False)
    fig.suptitle(
        title
        or "; ".join(
            f"{r.model} ({r.n_layers} layers × {r.n_heads} heads, {r.n_texts} "
            f"text{'s' if r.n_texts != 1 else ''})"
            for r in results
        ),
        fontsize=S.FONT["title"] + 1,
    )
    return fig


def depth_bundle(*results: Any) -> Bundle:
    """The depth figure as a :class:`~attntopo.plots.Bundle` (file stem ``depth``)."""
    _check(results)
    return Bundle(
        lambda interactive: {} if interactive else {"depth": plot_depth(*results)},
        title="attntopo depth",
    )
