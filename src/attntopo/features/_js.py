"""The ``js`` sets: statistics of the Jensen–Shannon Rips diagrams of each head.

Each head's token metric space is ``D = token_distances(A)`` (Jensen–Shannon distance between
attention rows, base 2, in [0, 1]); its Vietoris–Rips diagram (H0, H1) comes from
:func:`attntopo.topology.persistence_batch`, all heads of all texts in one batch.  Per head and
dimension ``d`` (lengths are those of finite bars):

``h{d}.n_bars``               number of bars (the infinite H0 bar included)
``h{d}.total_persistence``    ``Σ (death − birth)``
``h{d}.max_persistence``      longest length (0 if none)
``h{d}.mean_persistence``     mean length (0 if none)
``h{d}.entropy``              ``−Σ p log₂ p``, ``p = length / Σ length`` (bits, as
                              :meth:`attntopo.topology.Diagram.summary`)
``h{d}.betti_{ε}``            Betti number at scale ε: ``#{birth <= ε < death}``
``h0.death_q{q}``             quantile q of the n − 1 finite H0 deaths (the minimum spanning
                              tree's edge lengths, zero-length edges included)

``js_image`` adds persistence images and ``js_landscape`` persistence landscapes of the same
diagrams, both computed by persim (:class:`persim.PersistenceImager`,
:class:`persim.landscapes.PersLandscapeExact`) on fixed grids so that every text gets the same
columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..errors import MissingDependencyError

if TYPE_CHECKING:  # the settings read this module's defaults without importing topology
    from ..topology import Diagram

__all__ = [
    "DEFAULT_SCALES",
    "DEFAULT_QUANTILES",
    "IMAGE_PIXEL",
    "IMAGE_SIGMA",
    "LANDSCAPE_DEPTH",
    "LANDSCAPE_STEPS",
    "js_names",
    "js_stats",
    "per_token_names",
    "per_token_stats",
    "image_names",
    "image_stats",
    "landscape_names",
    "landscape_stats",
]

#: Scales (JS distance, base 2) of the Betti numbers.
DEFAULT_SCALES: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: Quantiles of the finite H0 deaths.
DEFAULT_QUANTILES: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9)
#: Persistence images: pixel side on (birth, persistence) ∈ [0, 1]², Gaussian kernel's s.d.
IMAGE_PIXEL = 0.25
IMAGE_SIGMA = 0.05
#: Persistence landscapes: first k landscapes sampled at this many points of [0, 1].
LANDSCAPE_DEPTH = 3
LANDSCAPE_STEPS = 10

_DIMS = (0, 1)


def js_names(scales: Sequence[float], quantiles: Sequence[float]) -> list[str]:
    """Quantity names of the ``js`` set, in column order."""
    names = []
    for d in _DIMS:
        names += [
            f"h{d}.{s}"
            for s in (
                "n_bars",
                "total_persistence",
                "max_persistence",
                "mean_persistence",
                "entropy",
            )
        ]
        names += [f"h{d}.betti_{e:g}" for e in scales]
    names += [f"h0.death_q{q:g}" for q in quantiles]
    return names


def js_stats(
    diagrams: list[Diagram],
    sizes: np.ndarray,
    scales: Sequence[float],
    quantiles: Sequence[float],
    min_persistence: float = 0.0,
) -> np.ndarray:
    """The ``js`` set of N diagrams of spaces with ``sizes`` (N,) points, shape (N, k).

    Bars of length ``<= min_persistence`` are left out of every statistic but the H0 death
    quantiles (those are the minimum spanning tree's edge lengths, all n − 1 of them).
    """
    from ._bars import Bars

    cols = []
    for d in _DIMS:
        bars = Bars.of(diagrams, d).longer_than(min_persistence)
        cols += [
            bars.count() + bars.n_infinite,
            bars.sum(),
            bars.max(),
            bars.mean(),
            bars.entropy(base=2.0),
        ]
        cols += list(bars.betti(np.asarray(scales, dtype=np.float64)).T)
    h0 = Bars.of(diagrams, 0)
    out_q = np.zeros((len(diagrams), len(quantiles)))
    sizes = np.asarray(sizes)
    for n in np.unique(sizes):  # the texts of one chunk have a few distinct lengths
        rows = np.flatnonzero(sizes == n)
        if n < 2:
            continue
        deaths = h0.padded_deaths(int(n) - 1, rows)
        out_q[rows] = np.quantile(deaths, quantiles, axis=1).T
    cols += list(out_q.T)
    return np.stack(cols, axis=-1)


# --------------------------------------------------------------- per token
#: The ``js`` quantities that grow with the number of tokens n, divided by n in ``js_per_token``
#: (``h0.n_bars`` is n itself: the infinite bar and the n - 1 MST edges, zero-length ones
#: aside; H0's Betti numbers fall to 1 at large scales, so divided by n they are 1/n).
def _per_token_sources(scales: Sequence[float]) -> list[str]:
    return ["h0.total_persistence", "h1.n_bars", "h1.total_persistence"] + [
        f"h1.betti_{e:g}" for e in scales
    ]


def per_token_names(scales: Sequence[float]) -> list[str]:
    """Quantity names of the ``js_per_token`` set, in column order."""
    return [f"{q}_per_token" for q in _per_token_sources(scales)]


def per_token_stats(
    js: np.ndarray, sizes: np.ndarray, scales: Sequence[float], quantiles: Sequence[float]
) -> np.ndarray:
    """``js_per_token`` of N diagrams from their ``js`` rows (N, k) and point counts (N,)."""
    names = js_names(scales, quantiles)
    cols = [names.index(q) for q in _per_token_sources(scales)]
    n = np.maximum(np.asarray(sizes, dtype=np.float64), 1.0)
    return js[:, cols] / n[:, None]


# --------------------------------------------------------------- persim vectorizations
def _persim():
    try:
        import persim  # noqa: F401
    except ImportError:
        raise MissingDependencyError(
            "the js_image and js_landscape sets need persim: pip install 'attntopo[features]'"
        ) from None
    return persim


def _grid_side() -> int:
    return int(round(1.0 / IMAGE_PIXEL))


def image_names() -> list[str]:
    """Quantity names of ``js_image``: ``h{d}.image_{i}_{j}`` (i: birth, j: persistence pixel)."""
    k = _grid_side()
    return [f"h{d}.image_{i}_{j}" for d in _DIMS for i in range(k) for j in range(k)]


def image_stats(diagrams: list[Diagram], upper: float = 1.0) -> np.ndarray:
    """Persistence images (persim) of the finite bars of H0 and H1, shape (N, 2 k²).

    Grid: birth and persistence in [0, upper] (the metric's range: 1 for Jensen–Shannon),
    pixels of side :data:`IMAGE_PIXEL` · upper; weight = the persistence (persim's default,
    linear); Gaussian kernel of s.d. :data:`IMAGE_SIGMA` · upper.
    """
    _persim()
    from persim import PersistenceImager

    sigma = IMAGE_SIGMA * upper
    imager = PersistenceImager(
        birth_range=(0.0, upper),
        pers_range=(0.0, upper),
        pixel_size=IMAGE_PIXEL * upper,
        kernel_params={"sigma": [[sigma**2, 0.0], [0.0, sigma**2]]},
    )
    k = _grid_side()
    out = np.zeros((len(diagrams), len(_DIMS) * k * k))
    for j, d in enumerate(_DIMS):
        for i, g in enumerate(diagrams):
            pts = g.finite(d)
            if pts.shape[0]:
                out[i, j * k * k : (j + 1) * k * k] = np.asarray(
                    imager.transform(pts, skew=True)
                ).ravel()
    return out


def landscape_names() -> list[str]:
    """Quantity names of ``js_landscape``: ``h{d}.landscape_{k}_{t}`` (k-th landscape at step t)."""
    return [
        f"h{d}.landscape_{k + 1}_{t}"
        for d in _DIMS
        for k in range(LANDSCAPE_DEPTH)
        for t in range(LANDSCAPE_STEPS)
    ]


def landscape_stats(diagrams: list[Diagram], upper: float = 1.0) -> np.ndarray:
    """First :data:`LANDSCAPE_DEPTH` persistence landscapes (persim) of H0 and H1 finite bars.

    persim's exact landscapes (:class:`persim.landscapes.PersLandscapeExact`, piecewise linear,
    given by their critical points) are sampled at :data:`LANDSCAPE_STEPS` evenly spaced
    points of [0, upper] (both ends included; the metric's range, 1 for Jensen–Shannon); missing
    landscapes (fewer bars than the depth) are 0.  Shape (N, 2 k s).
    """
    _persim()
    from persim.landscapes import PersLandscapeExact

    per_dim = LANDSCAPE_DEPTH * LANDSCAPE_STEPS
    t = np.linspace(0.0, upper, LANDSCAPE_STEPS)
    out = np.zeros((len(diagrams), len(_DIMS) * per_dim))
    for j, d in enumerate(_DIMS):
        for i, g in enumerate(diagrams):
            pts = g.finite(d)
            pts = pts[pts[:, 1] > pts[:, 0]]
            if not pts.shape[0]:
                continue
            dgms = [np.zeros((0, 2))] * d + [pts]
            crit = PersLandscapeExact(dgms=dgms, hom_deg=d).critical_pairs[:LANDSCAPE_DEPTH]
            block = np.zeros((LANDSCAPE_DEPTH, LANDSCAPE_STEPS))
            for k, cp in enumerate(crit):
                cp = np.asarray(cp, dtype=np.float64)
                block[k] = np.interp(t, cp[:, 0], cp[:, 1], left=0.0, right=0.0)
            out[i, j * per_dim : (j + 1) * per_dim] = block.ravel()
    return out
