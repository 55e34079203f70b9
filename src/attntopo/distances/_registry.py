"""The row distances, declared once: :data:`DISTANCES` maps each ``metric=`` name to its record.

A record (:class:`Distance`) holds what the distance is (its label in figures, the name of
the feature columns it makes, its formula and range) and how it is computed: ``block``, the
all-pairs kernel on a chunk of row-normalized matrices, ``finish``, which turns the kernel's
raw values into distances in place, and ``reference``, a plain NumPy formula for one pair (the
tests' independent check, :func:`~attntopo.distances.pairwise_distance`).  The distance
functions, the ``metric=`` checks, the figures' names and the feature columns read this table;
:data:`attntopo.constants.METRICS` (the ``Literal`` for annotations, importable without
torch) is held equal to its keys by a test.

The functions import their modules when called, so that reading the table imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

__all__ = ["Distance", "DISTANCES"]


@dataclass(frozen=True)
class Distance:
    """One distance between attention rows (probability distributions).

    Attributes
    ----------
    name : str
        The ``metric=`` value.
    label : str
        How figures and tables write it (``"Jensen–Shannon"``).
    column : str
        The name feature columns computed on it carry (``"js"``: ``L0H0.js.h0.n_bars``).
    formula : str
        One line: the distance of two rows ``p``, ``q``.
    upper : float
        Its largest value (JS with log base 2): distances lie in ``[0, upper]``.
    block : callable
        ``block(P, dtype, budget, support, workers)`` → torch.Tensor (B, m, m) float64: raw
        values of every pair of rows of ``P`` (B, m, k) (strict upper triangle valid).
    finish : callable
        ``finish(D, base, paper_compat)``: raw values → distances, in place.
    reference : callable
        ``reference(p, q, base)`` → float: one pair, float64 NumPy.
    cross : callable, optional
        ``cross(P, rows, dtype, budget, support, workers)`` → (B, r, m): ``block``'s raw
        values from the chosen ``rows`` to every row only (``token_distances_tensor(rows=)``,
        the prompt score); None: the full matrices' rows are taken.
    support : bool
        ``block`` reads the union of the rows' supports (``support``; else None is passed).
    native : bool
        The C kernel computes it on the CPU in float64 (:mod:`attntopo._native`).
    """

    name: str
    label: str
    column: str
    formula: str
    upper: float
    block: Callable[..., Any]
    finish: Callable[[Any, float, Any], Any]
    reference: Callable[[np.ndarray, np.ndarray, float], float]
    cross: Callable[..., Any] | None = None
    support: bool = False
    native: bool = False


# ------------------------------------------------------------------ Jensen–Shannon
def _js_block(P: Any, dtype: Any, budget: int, support: Any, workers: Any) -> Any:
    from ._js import _js_block as block

    return block(P, dtype, budget, support, workers)


def _js_cross(P: Any, rows: Any, dtype: Any, budget: int, support: Any, workers: Any) -> Any:
    from ._js import _js_cross_block

    return _js_cross_block(P, rows, dtype, budget, support, workers)


def _js_finish(D: Any, base: float, paper_compat: str | None) -> Any:
    """Divergence in nats → ``sqrt(JS / ln base)`` (``"listing"``: the square root of the
    natural-log divergence; ``"notebook"``: its fourth root)."""
    D.clamp_(0.0, math.log(2.0))
    if paper_compat == "notebook":
        D.sqrt_().sqrt_()
    elif paper_compat == "listing":
        D.sqrt_()
    else:
        D.div_(math.log(base)).sqrt_()
    return D


def _js_reference(p: np.ndarray, q: np.ndarray, base: float) -> float:
    from ._js import _phi_terms_np

    js = 0.25 * float(np.sum(_phi_terms_np(p, q)))
    return math.sqrt(min(max(js, 0.0), math.log(2.0)) / math.log(base))


# ------------------------------------------------------------------ Hellinger, Fisher–Rao
def _hellinger_block(P: Any, dtype: Any, budget: int, support: Any, workers: Any) -> Any:
    from ._hellinger import _hellinger_block as block

    return block(P, dtype, budget, workers)


def _final(D: Any, base: float, paper_compat: str | None) -> Any:
    """The kernel's values are the distances."""
    return D


def _fisher_rao_finish(D: Any, base: float, paper_compat: str | None) -> Any:
    """Hellinger H → ``2 arccos(BC) = 4 arcsin(H / sqrt 2)``, accurate also for close rows."""
    D.mul_(1.0 / math.sqrt(2.0)).clamp_(0.0, 1.0).asin_().mul_(4.0)
    return D.clamp_(0.0, math.pi)


def _hellinger_reference(p: np.ndarray, q: np.ndarray, base: float) -> float:
    r = np.sqrt(p) + np.sqrt(q)
    diff = (p - q) / np.where(r > 0, r, 1.0)  # = sqrt p − sqrt q, without cancellation
    return min(math.sqrt(0.5 * float(np.sum(diff * diff))), 1.0)


def _fisher_rao_reference(p: np.ndarray, q: np.ndarray, base: float) -> float:
    h = _hellinger_reference(p, q, base)
    return min(4.0 * math.asin(h / math.sqrt(2.0)), math.pi)


# ------------------------------------------------------------------ total variation
def _tv_block(P: Any, dtype: Any, budget: int, support: Any, workers: Any) -> Any:
    from ._hellinger import _tv_block as block

    return block(P, dtype, budget, workers)


def _tv_reference(p: np.ndarray, q: np.ndarray, base: float) -> float:
    return min(0.5 * float(np.sum(np.abs(p - q))), 1.0)


#: Every row distance, by ``metric=`` name (a read-only view: iterate for the names).
_DISTANCES: dict[str, Distance] = {
    d.name: d
    for d in (
        Distance(
            "jensen_shannon",
            "Jensen–Shannon",
            "js",
            "sqrt(JS(p, q) / ln(base)), JS = ½ KL(p‖m) + ½ KL(q‖m), m = (p + q) / 2",
            1.0,
            _js_block,
            _js_finish,
            _js_reference,
            cross=_js_cross,
            support=True,
            native=True,
        ),
        Distance(
            "hellinger",
            "Hellinger",
            "hellinger",
            "sqrt(1 − Σ sqrt(p q)) = ‖sqrt p − sqrt q‖₂ / sqrt 2",
            1.0,
            _hellinger_block,
            _final,
            _hellinger_reference,
        ),
        Distance(
            "fisher_rao",
            "Fisher–Rao",
            "fisher_rao",
            "2 arccos(Σ sqrt(p q)), the geodesic distance on the probability simplex",
            math.pi,
            _hellinger_block,
            _fisher_rao_finish,
            _fisher_rao_reference,
        ),
        Distance(
            "total_variation",
            "total variation",
            "tv",
            "½ Σ |p − q|",
            1.0,
            _tv_block,
            _final,
            _tv_reference,
        ),
    )
}
DISTANCES: Mapping[str, Distance] = MappingProxyType(_DISTANCES)
