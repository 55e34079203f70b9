"""Distances between attention rows: each token becomes a point of a metric space.

Row ``i`` of an attention matrix is query token ``i``'s probability distribution
over the keys.  :func:`token_distances` measures how far apart two such rows are,
for every pair of rows and for every head at once, and returns the
``[..., n, n]`` distance matrices that the persistence engines consume.

Metrics (``p``, ``q`` are two rows; all logarithms below are natural unless said), the
records of :data:`DISTANCES` (the registry every ``metric=`` reads; the ranges are those
of JS with ``base=2``):

{metrics}

The square root of the Jensen–Shannon divergence is a true metric; it gives the same numbers
as ``scipy.spatial.distance.jensenshannon(p, q, base=base)``.  Fisher–Rao is computed as the
equal ``4 arcsin(hellinger / sqrt 2)``, which stays accurate for close rows where ``arccos``
near 1 does not.

Accuracy.  Everything is computed in float64 by default.  The Jensen–Shannon
matrix is first computed with one logarithm per element
(``JS = ln 2 + ½ Σ p ln p + ½ Σ q ln q − ½ Σ (p+q) ln(p+q)``), which loses
relative accuracy when two rows are nearly identical (the divergence is then a
small difference of sums of order 1; scipy's formula has the same problem and
even returns NaN there).  Every pair whose fast divergence is below 1e-6 nats is
recomputed with a cancellation-free form (``JS = ¼ Σ (p+q) φ((p−q)/(p+q))``,
``φ(d) = (1+d) ln(1+d) + (1−d) ln(1−d) = 2d atanh(d) + log1p(−d²) ≥ 0``), so
near-identical rows get distances with a relative error of about 1e-15, the
worst case (just above the cutoff) is below 7e-11 absolute for 512 keys and
1.4e-10 for 1,024 (a proven bound, tests/README.md; typically ~1e-12), and
identical rows get
exactly 0.  (Real attention rarely has such pairs; if every pair needs it, the
call is about 6× slower.)  Hellinger and Fisher–Rao use one matrix product
of square-rooted rows and recompute close pairs from
``sqrt p − sqrt q = (p − q) / (sqrt p + sqrt q)`` in the same way.

Speed.  The Jensen–Shannon work is ``n³/2`` logarithms per matrix (``u ln u`` for
every pair of rows and every key).  On the CPU in float64 (the default) it runs in
attntopo's C kernel (:mod:`attntopo._native`: one fused loop per matrix with a
vectorized logarithm within 1 ulp, AVX2+FMA where the CPU has it), one matrix per
worker thread.  A pair's ``u ln u`` runs only over the keys where both rows can be
nonzero (their overlap; each row's part elsewhere is ``½ ln 2`` times its mass, and its
``p ln p`` on the overlap a difference of its prefix sums): for causal attention rows
``i < j`` overlap on keys ``0..i``, ``n³/6`` logarithms a matrix, 3× less work; rows
without zeros keep the full sum.  The pure-torch path restricts each tile to the keys
of its group of 16 rows in the same way.  Without the kernel (not built, ``ATTNTOPO_NATIVE=0``,
``dtype=torch.float32`` or tensors on a GPU) a pure-torch path computes the same
numbers in cache-sized tiles; the logarithm is then most of the time and the whole
step about 3× slower on the CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ..constants import METRICS  # the names as a Literal (torch-free; equal to DISTANCES' keys)
from ._registry import DISTANCES

__doc__ = (__doc__ or "").replace(
    "{metrics}",
    "\n".join(
        f"``{d.name!r}``\n    {d.formula}; in ``[0, {d.upper:.4g}]``" for d in DISTANCES.values()
    ),
)

_LAZY = {
    "Distance": "._registry",
    "token_distances": "._rows",
    "token_distances_tensor": "._rows",
    "pairwise_distance": "._rows",
    "row_distances": "._rows",
}

__all__ = ["DISTANCES", "METRICS", *_LAZY]

__getattr__, __dir__ = lazy_names(globals(), _LAZY, package=__name__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only: the names of _LAZY
    from ._registry import Distance as Distance
    from ._rows import pairwise_distance as pairwise_distance
    from ._rows import row_distances as row_distances
    from ._rows import token_distances as token_distances
    from ._rows import token_distances_tensor as token_distances_tensor
