"""Statistics of the bars of many diagrams at once (one ``bincount`` per statistic).

The sets ``js`` and ``barcode`` both summarise lists of persistence diagrams; these helpers
flatten one homology dimension of N diagrams into a single array of bars with an owner index,
so every statistic is one vectorized pass instead of a Python loop over diagrams.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np

from ..topology import Diagram
from ..topology.diagram import lifetime_entropy

__all__ = ["Bars"]


def _bincount(owner: np.ndarray, weights: np.ndarray | None, n: int) -> np.ndarray:
    """``np.bincount`` as float64 (it returns int64 for empty input, even with weights)."""
    return np.bincount(owner, weights=weights, minlength=n).astype(np.float64)


@dataclass(frozen=True)
class Bars:
    """The finite bars of one homology dimension of N diagrams, flattened.

    Attributes
    ----------
    birth, death, length : ndarray of shape (k,), float64
        Every finite bar of every diagram (``length = death - birth``).
    owner : ndarray of shape (k,), int64
        Which diagram (0..N-1) each bar belongs to.
    n : int
        Number of diagrams N.
    n_infinite : ndarray of shape (N,), int64
        Infinite bars per diagram (not in the arrays above).
    """

    birth: np.ndarray
    death: np.ndarray
    length: np.ndarray
    owner: np.ndarray
    n: int
    n_infinite: np.ndarray

    @classmethod
    def of(cls, diagrams: Sequence[Diagram], dim: int) -> "Bars":
        arrs = [g[dim] for g in diagrams]
        sizes = np.array([a.shape[0] for a in arrs], dtype=np.int64)
        pts = np.concatenate(arrs, axis=0) if sizes.sum() else np.empty((0, 2))
        owner = np.repeat(np.arange(len(arrs)), sizes)
        fin = np.isfinite(pts[:, 1])
        inf_count = np.bincount(owner[~fin], minlength=len(arrs)).astype(np.int64)
        pts, owner = pts[fin], owner[fin]
        return cls(pts[:, 0], pts[:, 1], pts[:, 1] - pts[:, 0], owner, len(arrs), inf_count)

    def longer_than(self, min_persistence: float) -> "Bars":
        """The bars with ``length > min_persistence`` (all of them for 0: no bar has length 0)."""
        if min_persistence <= 0:
            return self
        keep = self.length > min_persistence
        return Bars(
            self.birth[keep],
            self.death[keep],
            self.length[keep],
            self.owner[keep],
            self.n,
            self.n_infinite,
        )

    # ---------------------------------------------------------------- statistics
    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Number of finite bars (where ``mask``), shape (N,)."""
        own = self.owner if mask is None else self.owner[mask]
        return _bincount(own, None, self.n)

    def sum(self, values: np.ndarray | None = None) -> np.ndarray:
        """Sum of ``values`` (default: the lengths) per diagram, shape (N,)."""
        v = self.length if values is None else values
        return _bincount(self.owner, v, self.n)

    def max(self) -> np.ndarray:
        """Longest finite bar per diagram (0 without bars), shape (N,)."""
        out = np.zeros(self.n)
        if self.length.size:
            np.maximum.at(out, self.owner, self.length)
        return out

    def mean(self) -> np.ndarray:
        """Mean finite length per diagram (0 without bars), shape (N,)."""
        c = self.count()
        return np.divide(self.sum(), c, out=np.zeros(self.n), where=c > 0)

    def std(self) -> np.ndarray:
        """Population standard deviation of the finite lengths (``numpy.std``), shape (N,)."""
        c = self.count()
        m = self.mean()
        dev = self.length - m[self.owner]
        var = np.divide(self.sum(dev * dev), c, out=np.zeros(self.n), where=c > 0)
        return np.sqrt(var)

    def entropy(self, base: float = np.e) -> np.ndarray:
        """Shannon entropy of the finite lengths normalised to sum 1, shape (N,).

        ``-Σ p log p`` with ``p = length / Σ length`` over positive lengths, in units of
        ``log base`` (natural log by default); 0 for a diagram without positive lengths.  The
        same computation as :func:`~attntopo.topology.summary_table`'s ``persistence_entropy``
        (:func:`attntopo.topology.diagram.lifetime_entropy`), which is in bits.
        """
        return lifetime_entropy(self.length, self.owner, self.n, base, total=self.sum())

    def of_longest(self, which: str) -> np.ndarray:
        """Birth or death (``which``) of each diagram's longest finite bar (0 without bars).

        Ties go to the first bar in the diagram's (birth, death) order.
        """
        out = np.zeros(self.n)
        if not self.length.size:
            return out
        # order by owner, then by decreasing length, then by position (stable): first per owner
        order = np.lexsort((-self.length, self.owner))
        own = self.owner[order]
        first = np.ones(own.size, dtype=bool)
        first[1:] = own[1:] != own[:-1]
        pick = order[first]
        out[self.owner[pick]] = (self.birth if which == "birth" else self.death)[pick]
        return out

    def betti(self, scales: np.ndarray) -> np.ndarray:
        """Betti numbers ``#{birth <= eps < death}`` at each scale, shape (N, len(scales)).

        Infinite bars count at every scale >= 0: they are born at 0, which holds for the
        full Rips filtrations used here (H0's one infinite bar; no infinite H1 bar).
        """
        scales = np.asarray(scales, dtype=np.float64)
        alive = (self.birth[:, None] <= scales[None, :]) & (scales[None, :] < self.death[:, None])
        out = np.zeros((self.n, scales.size))
        np.add.at(out, self.owner, alive.astype(np.float64))
        out += self.n_infinite[:, None] * (scales[None, :] >= 0)
        return out

    @cached_property
    def _by_death(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The finite bars ordered by owner, then death: (owners, deaths, rank of each bar
        among its owner's, bars per owner (N,)); one sort, shared by every
        :meth:`padded_deaths` call."""
        order = np.lexsort((self.death, self.owner))
        own = self.owner[order]
        counts = np.bincount(own, minlength=self.n)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.arange(own.size) - start[own]
        return own, self.death[order], rank, counts

    def padded_deaths(self, size: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Finite deaths per diagram, padded with zeros to ``size``, sorted, shape (N, size);
        with ``rows`` (distinct diagram indices) those diagrams only, shape (len(rows), size).

        For H0 of an n-point metric space ``size = n - 1``: engines drop zero-length bars,
        which are exactly the minimum-spanning-tree edges of length 0.  The bars are sorted
        once per :class:`Bars` (:func:`~attntopo.features._js.js_stats` asks once per text length of
        a chunk).
        """
        rows = np.arange(self.n) if rows is None else np.asarray(rows, dtype=np.int64)
        out = np.zeros((rows.size, size))
        if not self.death.size or size == 0 or not rows.size:
            return out
        own, deaths, rank, counts = self._by_death
        where = np.full(self.n, -1, dtype=np.int64)  # diagram -> its row of out, -1: not asked
        where[rows] = np.arange(rows.size)
        mine = where[own] >= 0
        own, deaths, rank = own[mine], deaths[mine], rank[mine]
        # zeros first (the dropped zero-length bars), then the sorted finite deaths
        col = size - counts[own] + rank
        keep = col >= 0
        out[where[own[keep]], col[keep]] = deaths[keep]
        return out
