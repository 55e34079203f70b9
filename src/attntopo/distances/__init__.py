"""Distances between attention rows: each token becomes a point of a metric space.

Row ``i`` of an attention matrix is query token ``i``'s probability distribution
over the keys.  :func:`token_distances` measures how far apart two such rows are,
for every pair of rows and for every head at once, and returns the
``[..., n, n]`` distance matrices that the persistence engines consume.

Metrics (``p``, ``q`` are two rows; all logarithms below are natural unless said):

``"jensen_shannon"`` (default)
    ``sqrt(JS(p, q) / ln(base))`` with ``JS = ½ KL(p‖m) + ½ KL(q‖m)``,
    ``m = (p + q) / 2``.  The square root of the Jensen–Shannon divergence is a
    true metric; with ``base=2`` it lies in ``[0, 1]``.  Same numbers as
    ``scipy.spatial.distance.jensenshannon(p, q, base=base)``.
``"hellinger"``
    ``sqrt(1 - Σ sqrt(p q)) = ‖sqrt(p) - sqrt(q)‖₂ / sqrt(2)``, the normalized
    Hellinger distance, in ``[0, 1]``.
``"fisher_rao"``
    ``2 arccos(Σ sqrt(p q))``, the Fisher–Rao geodesic distance on the
    probability simplex (twice the Bhattacharyya angle), in ``[0, π]``.
``"total_variation"``
    ``½ Σ |p - q|``, in ``[0, 1]``.

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

from ..constants import METRICS  # names accepted by metric= (defined torch-free for the CLI)
from ._rows import pairwise_distance, row_distances, token_distances, token_distances_tensor

__all__ = ["METRICS", "token_distances", "token_distances_tensor", "pairwise_distance", "row_distances"]
