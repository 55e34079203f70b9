"""Figures of an :class:`~attntopo.theory.Approximability`:
which efficient attention fits which head.

=================================  ========================================================
function                           what it shows
=================================  ========================================================
:func:`plot_approx_budgets`        median relative Frobenius error over the heads against the
                                   budget (numbers per query row), one line per family, the
                                   interquartile range shaded
:func:`plot_approx_winners`        the layer × head grid coloured by the family with the
                                   smallest error at one budget
:func:`plot_approx_entropy`        Scatterbrain's check: ``log10(error top-k / error other)``
                                   against the head's normalized entropy (above 0: the other
                                   family wins), coloured by winner, Spearman ρ in the title
:func:`plot_approximability`       the three panels, one row per result (models one below
                                   the other)
:func:`approx_bundle`              :func:`plot_approximability` as a
                                   :class:`~attntopo.plots.Bundle` (file stem ``approximability``)
=================================  ========================================================

Like every attntopo figure: functions return a :class:`matplotlib.figure.Figure`, single-panel
ones accept ``ax=``, nothing calls ``show()`` or touches ``matplotlib.rcParams``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..errors import InvalidInputError
from . import _style as S
from .bundles import Bundle
from .static import _figure_and_axes

__all__ = [
    "plot_approx_budgets",
    "plot_approx_winners",
    "plot_approx_entropy",
    "plot_approximability",
    "approx_bundle",
    "FAMILY_COLORS",
]

#: Colour of each family (Okabe–Ito), also used by the winner grid.
FAMILY_COLORS = {
    "band_sparse": S.OKABE_ITO["blue"],
    "top_k": S.OKABE_ITO["vermillion"],
    "low_rank": S.OKABE_ITO["bluish_green"],
    "kernel": S.OKABE_ITO["orange"],
    "cluster_kmeans": S.OKABE_ITO["reddish_purple"],
    "cluster_h0": S.OKABE_ITO["sky_blue"],
}
_MARKERS = {
    "band_sparse": "s",
    "top_k": "o",
    "low_rank": "^",
    "kernel": "D",
    "cluster_kmeans": "v",
    "cluster_h0": "P",
}
_NAMES = {
    "band_sparse": "band + sparse",
    "top_k": "top-k",
    "low_rank": "low rank (SVD)",
    "kernel": "kernel (FAVOR+)",
    "cluster_kmeans": "clusters (k-means)",
    "cluster_h0": "clusters (H0)",
}


def _check(result: Any) -> None:
    if getattr(result, "kind", None) != "approximability":
        raise InvalidInputError(
            f"expected an Approximability (from attntopo.theory.approximability), got "
            f"{type(result).__name__}"
        )


def _budget(result: Any, budget: int | None) -> int:
    if budget is None:
        return int(result.budgets[len(result.budgets) // 2])
    if budget not in result.budgets:
        raise InvalidInputError(
            f"budget {budget!r} was not measured; budgets: {list(result.budgets)}"
        )
    return int(budget)


def _style(ax: Axes, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel, fontsize=S.FONT["label"])
    ax.set_ylabel(ylabel, fontsize=S.FONT["label"])
    ax.set_title(title, fontsize=S.FONT["title"])
    ax.tick_params(labelsize=S.FONT["tick"])


def plot_approx_budgets(
    result: Any, *, ax: Axes | None = None, by: str = "frobenius", title: str | None = None
) -> Figure:
    """Median error over the heads against the budget, per family (interquartile range shaded)."""
    _check(result)
    fig, ax = _figure_and_axes(ax, (5.2, 3.6))
    b = np.asarray(result.budgets, dtype=float)
    arr = result.errors if by == "frobenius" else result.js
    for i, f in enumerate(result.families):
        e = arr[i].reshape(len(b), -1)
        med = np.nanmedian(e, axis=1)
        lo, hi = np.nanpercentile(e, 25, axis=1), np.nanpercentile(e, 75, axis=1)
        color = FAMILY_COLORS.get(f, S.OKABE_ITO["black"])
        ax.plot(
            b, med, marker=_MARKERS.get(f, "o"), markersize=4, color=color, label=_NAMES.get(f, f)
        )
        ax.fill_between(b, lo, hi, color=color, alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(b, [str(int(x)) for x in b])
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=S.FONT["legend"] - 1, frameon=False, loc="upper right", ncols=2)
    what = "‖A − Â‖_F / ‖A‖_F" if by == "frobenius" else "mean row JS distance"
    _style(
        ax,
        "budget (numbers stored per query row)",
        f"{what} (median, IQR)",
        title or f"{result.model}: error at matched budgets (n = {result.n_tokens})",
    )
    return fig


def plot_approx_winners(
    result: Any,
    *,
    ax: Axes | None = None,
    budget: int | None = None,
    by: str = "frobenius",
    title: str | None = None,
) -> Figure:
    """The layer × head grid coloured by each head's best
    family at ``budget`` (default: the middle one)."""
    _check(result)
    budget = _budget(result, budget)
    fig, ax = _figure_and_axes(ax, (5.2, 3.6))
    fams = list(result.families)
    win = result.winners(budget, by=by)
    idx = np.vectorize(fams.index)(win) if win.size else np.zeros(win.shape, dtype=int)
    cmap = ListedColormap([FAMILY_COLORS.get(f, "#000000") for f in fams])
    ax.imshow(
        idx, cmap=cmap, vmin=-0.5, vmax=len(fams) - 0.5, aspect="auto", interpolation="nearest"
    )
    ax.set_xticks(range(len(result.heads)), [str(h) for h in result.heads])
    ax.set_yticks(range(len(result.layers)), [str(layer) for layer in result.layers])
    counts = {f: int((win == f).sum()) for f in fams}
    ax.legend(
        handles=[
            Patch(color=FAMILY_COLORS.get(f, "#000000"), label=f"{_NAMES.get(f, f)} ({counts[f]})")
            for f in fams
        ],
        fontsize=S.FONT["legend"] - 1,
        frameon=False,
        loc="center left",
        bbox_to_anchor=(1.01, 0.5),
    )
    _style(ax, "head", "layer", title or f"{result.model}: best family at budget {budget}")
    return fig


def plot_approx_entropy(
    result: Any,
    *,
    ax: Axes | None = None,
    budget: int | None = None,
    other: str = "low_rank",
    title: str | None = None,
) -> Figure:
    """``log10(error top-k / error other)`` against the head's normalized entropy (Scatterbrain's
    claim: rising, below 0 at low entropy, above 0 at high entropy)."""
    _check(result)
    budget = _budget(result, budget)
    if "top_k" not in result.families or other not in result.families:
        raise InvalidInputError(
            f"the entropy panel needs the top_k and {other} families; measured: "
            f"{', '.join(result.families)}"
        )
    fig, ax = _figure_and_axes(ax, (5.2, 3.6))
    ent = np.asarray(result.entropy_norm, dtype=float).ravel()
    es, eo = result.error("top_k", budget).ravel(), result.error(other, budget).ravel()
    ok = (es > 0) & (eo > 0)
    g = np.full(es.shape, np.nan)
    g[ok] = np.log10(es[ok] / eo[ok])
    win = result.winners(budget).ravel()
    for f in result.families:
        m = win == f
        if m.any():
            ax.scatter(
                ent[m],
                g[m],
                s=14,
                color=FAMILY_COLORS.get(f, "#000000"),
                marker=_MARKERS.get(f, "o"),
                label=f"winner: {_NAMES.get(f, f)}",
                alpha=0.85,
                lw=0,
            )
    ax.axhline(0.0, color="#999999", lw=0.8, ls=":")
    sb = result.scatterbrain()[budget].get(other, {})
    rho, verdict = sb.get("spearman", float("nan")), "holds" if sb.get("holds") else "does not hold"
    ax.legend(fontsize=S.FONT["legend"] - 1, frameon=False)
    _style(
        ax,
        "normalized attention entropy (0 one-hot, 1 uniform)",
        f"log10(error top-k / error {_NAMES.get(other, other)})",
        title
        or f"{result.model}, budget {budget}: Spearman ρ "
        f"= {rho:.2f}\nScatterbrain's claim {verdict}",
    )
    return fig


def plot_approximability(
    results: Any, *, budget: int | None = None, title: str | None = None
) -> Figure:
    """Budgets, winners and the entropy check (columns),
    one row per result (e.g. both packaged models)."""
    if getattr(results, "kind", None) == "approximability":
        items: Sequence[Any] = [results]
    elif isinstance(results, (list, tuple)):
        items = list(results)
    else:
        raise InvalidInputError(
            f"expected an Approximability or a list of them, got {type(results).__name__}"
        )
    if not items:
        raise InvalidInputError("plot_approximability needs at least one Approximability")
    for r in items:
        _check(r)
    entropy = [("top_k" in r.families and "low_rank" in r.families) for r in items]
    cols = 3 if any(entropy) else 2
    fig = Figure(figsize=(5.6 * cols, 3.8 * len(items)), layout="constrained")
    axes = np.asarray(fig.subplots(len(items), cols, squeeze=False))
    for i, r in enumerate(items):
        b = _budget(r, budget) if budget in r.budgets or budget is None else None
        plot_approx_budgets(r, ax=axes[i, 0])
        plot_approx_winners(r, ax=axes[i, 1], budget=b)
        if cols == 3:
            if entropy[i]:
                plot_approx_entropy(r, ax=axes[i, 2], budget=b)
            else:
                axes[i, 2].set_axis_off()
    if title:
        fig.suptitle(title, fontsize=S.FONT["title"] + 1)
    return fig


def approx_bundle(result: Any, *, budget: int | None = None) -> Bundle:
    """The figure of an approximability result as
    a :class:`~attntopo.plots.Bundle` (stem ``approximability``)."""
    _check(result)
    return Bundle(
        lambda interactive: (
            {} if interactive else {"approximability": plot_approximability(result, budget=budget)}
        ),
        title="attntopo approximability",
    )
