"""The ``barcode`` set: tda4atd's statistics of the Rips barcode of ``1 − max(A, Aᵀ)``.

The attention matrix ``A`` (n × n) becomes a dissimilarity on tokens as tda4atd's and
la-tda's ``matrix_to_ripser`` builds it, but in float64 (they compute in float32, and so
does ripser++: births and deaths agree to float32 round-off; docs/features.md): weights at
or below ``lower_bound`` (1e-3) are set to 0, then ``D = 1 − max(A, Aᵀ)`` off the diagonal
and ``D[i, i] = 0``; two tokens are close when either attends strongly to the other.  Its
Vietoris–Rips diagram (H0 and H1) is computed by
:func:`attntopo.topology.persistence_batch` for all heads at once, and infinite bars are dropped
before the statistics (as the reference does).  Per head:

========================  ====================================================================
``h0.sum``                sum of H0 lengths
``h0.entropy``            ``−Σ p ln p``, ``p = length / Σ length`` (natural log)
``h0.longest_death``      death of the longest H0 bar
``h0.deaths_ge_0.75``     number of H0 deaths ``>= 0.75`` (likewise ``_ge_0.5``)
``h0.deaths_le_0.25``     number of H0 deaths ``<= 0.25``
``h1.longest_birth``      birth of the longest H1 bar
``h1.births_ge_0.25``     number of H1 births ``>= 0.25``
``h1.births_le_0.95``     number of H1 births ``<= 0.95`` (likewise ``_le_0.7``)
``h1.sum``                sum of H1 lengths
``h1.entropy``            entropy of the H1 lengths (natural log)
``h1.std``                standard deviation of the H1 lengths (population, ``numpy.std``)
``h1.n_bars``             number of (finite) H1 bars
========================  ====================================================================

Statistics of an empty set of bars are 0.  Bars of length 0 are never reported by the engines,
so they do not enter the counts.
"""

from __future__ import annotations

import numpy as np

from ..topology import Diagram, persistence_batch
from ._bars import Bars

__all__ = [
    "BARCODE_QUANTITIES",
    "LOWER_BOUND",
    "barcode_matrices",
    "barcode_features",
    "barcode_stats",
]

#: Weights at or below this are treated as 0 (la-tda's ``lower_bound``).
LOWER_BOUND = 1e-3

BARCODE_QUANTITIES: tuple[str, ...] = (
    "h0.sum",
    "h0.entropy",
    "h0.longest_death",
    "h0.deaths_ge_0.75",
    "h0.deaths_ge_0.5",
    "h0.deaths_le_0.25",
    "h1.longest_birth",
    "h1.births_ge_0.25",
    "h1.births_le_0.95",
    "h1.births_le_0.7",
    "h1.sum",
    "h1.entropy",
    "h1.std",
    "h1.n_bars",
)


def barcode_matrices(A: np.ndarray, *, lower_bound: float = LOWER_BOUND) -> np.ndarray:
    """``1 − max(A, Aᵀ)`` with small weights zeroed and a zero diagonal.

    Parameters
    ----------
    A : ndarray of shape (B, n, n)
        Attention matrices.

    Returns
    -------
    ndarray of shape (B, n, n), float64
        Symmetric dissimilarities in [0, 1] with a zero diagonal.
    """
    W = np.asarray(A, dtype=np.float64)
    W = np.where(W > lower_bound, W, 0.0)
    D = 1.0 - np.maximum(W, W.transpose(0, 2, 1))
    n = D.shape[-1]
    D[:, np.arange(n), np.arange(n)] = 0.0
    return np.clip(D, 0.0, 1.0)


def barcode_stats(diagrams: list[Diagram], min_persistence: float = 0.0) -> np.ndarray:
    """The set's statistics of N diagrams (H0 and H1), shape (N, 14), in column order; bars of
    length ``<= min_persistence`` left out."""
    h0 = Bars.of(diagrams, 0).longer_than(min_persistence)
    h1 = Bars.of(diagrams, 1).longer_than(min_persistence)
    cols = [
        h0.sum(),
        h0.entropy(),
        h0.of_longest("death"),
        h0.count(h0.death >= 0.75),
        h0.count(h0.death >= 0.5),
        h0.count(h0.death <= 0.25),
        h1.of_longest("birth"),
        h1.count(h1.birth >= 0.25),
        h1.count(h1.birth <= 0.95),
        h1.count(h1.birth <= 0.70),
        h1.sum(),
        h1.entropy(),
        h1.std(),
        h1.count(),
    ]
    return np.stack(cols, axis=-1)


def barcode_features(
    A: np.ndarray, *, engine: str | None = None, n_jobs: int | None = None
) -> np.ndarray:
    """The ``barcode`` set of a stack of attention matrices.

    Parameters
    ----------
    A : ndarray of shape (B, n, n)
        Attention matrices (all of one text, or of several texts of equal length).
    engine, n_jobs
        As in :func:`attntopo.topology.persistence_batch`.

    Returns
    -------
    ndarray of shape (B, 14), float64
    """
    dgms = persistence_batch(barcode_matrices(A), maxdim=1, engine=engine, n_jobs=n_jobs)
    return barcode_stats(dgms)
