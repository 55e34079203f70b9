"""The ``prompt`` set: TOHA's prompt-to-response score, per head.

For a (prompt, response) pair read as one text, let ``P`` be the prompt's tokens and ``R`` the
response's (``|R| = r``), and ``D`` a distance between tokens.  The score is the length of the
minimum spanning forest that attaches every response token to the prompt, divided by ``r``
(TOHA's published code reports the sum itself, MTopDiv(R, P), over all tokens, special ones
included, in float32):

    score = MST(D with D[p, q] = 0 for p, q ∈ P) / r

equivalently the sum of the finite H0 deaths of that modified matrix (the prompt is one point
from the start), or the minimum spanning tree of the graph in which the whole prompt is
contracted to one vertex at distance ``min_{p ∈ P} D[p, j]`` from response token ``j``.  Two
distances, per head:

``js``          the Jensen–Shannon distance between attention rows (attntopo's own)
``attention``   ``1 − max(A, Aᵀ)`` (zero diagonal), TOHA's attention-graph distance: for a
                causal model, ``1 − A[i, j]`` with ``j < i``

Cost per head, ``n`` tokens of which ``r`` are the response's: ``attention`` reads the attention
matrix and runs Prim's algorithm on the contracted graph, ``O(n²)`` (no distances between rows
are computed); ``js`` first needs the Jensen–Shannon distances, ``O(n³)``.  Ask for the
``attention`` quantity alone (``features(..., sets=("prompt",), prompt_quantities=("attention",))``)
to pay only for it.  Both run on the device of the attention they are given (a CUDA tensor
stays on its GPU: :mod:`attntopo.topology._mst`), a few heads at a time.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["PROMPT_QUANTITIES", "spanning_forest_length", "prompt_features"]

PROMPT_QUANTITIES: tuple[str, ...] = ("js", "attention")

# float64 elements of the temporaries of one group of heads on the CPU (distances, the
# contracted graph): heads are scored a few at a time so that memory stays O(n²)
_GROUP_ELEMENTS = 1 << 21


def spanning_forest_length(D: Any, prompt: np.ndarray) -> np.ndarray:
    """Length of the minimum spanning forest attaching the non-prompt points to the prompt.

    Prim's algorithm on the matrix with the prompt contracted to one vertex, run for all
    matrices in lockstep (``r`` steps of ``O(B r)`` each;
    :func:`attntopo.topology._mst.prim_edges`), where ``D`` lives (a CUDA tensor on its GPU).

    Parameters
    ----------
    D : ndarray or torch.Tensor of shape (B, n, n)
        Symmetric distance matrices.
    prompt : ndarray of shape (n,), bool
        The prompt's points (at least one).

    Returns
    -------
    ndarray of shape (B,), float64
        Total edge length (not yet divided by the number of response points).
    """
    from ..topology import prim_edges

    return prim_edges(D, np.asarray(prompt, dtype=bool)).sum(dim=1).double().cpu().numpy()


def _attention_forest(A: Any, prompt: np.ndarray):
    """:func:`spanning_forest_length` of TOHA's ``1 − max(A, Aᵀ)`` (weights below 0 read as 0,
    clipped to [0, 1]; the same numbers as :func:`attntopo.features.barcode_matrices` with
    ``lower_bound=0``), read from the attention
    blocks it needs (response × response, prompt × response), never the full ``n × n``
    distances: ``(B,)`` float64 on the host, the same numbers (``1 − x`` is monotone, so the
    nearest prompt point is ``1 − max`` of the weights)."""
    import torch

    from ..topology import prim_contracted

    W = A.detach() if isinstance(A, torch.Tensor) else torch.from_numpy(np.asarray(A))
    P = torch.as_tensor(np.flatnonzero(prompt), device=W.device)
    R = torch.as_tensor(np.flatnonzero(~prompt), device=W.device)
    WR = W.index_select(-2, R)  # (B, r, n): response rows
    to_p = torch.maximum(WR.index_select(-1, P).amax(-1),
                         W.index_select(-2, P).index_select(-1, R).amax(-2))
    to_p = to_p.to(torch.float64).clamp_min_(0.0).neg_().add_(1.0).clamp_(0.0, 1.0)
    RR = WR.index_select(-1, R).to(torch.float64).clamp_min_(0.0)
    del WR
    RR = torch.maximum(RR, RR.transpose(-1, -2)).neg_().add_(1.0).clamp_(0.0, 1.0)
    return prim_contracted(to_p, RR).sum(dim=1).double().cpu().numpy()


def prompt_features(
    A: Any, D_js: Any, prompt: np.ndarray, quantities: Sequence[str] = PROMPT_QUANTITIES,
) -> np.ndarray:
    """The ``prompt`` set of one pair, shape (B, len(quantities)), quantities in the given order.

    Parameters
    ----------
    A : ndarray or torch.Tensor of shape (B, n, n)
        Attention of ``B`` heads (a CUDA tensor is scored on its GPU).
    D_js : ndarray or torch.Tensor of shape (B, n, n), or None
        Its Jensen–Shannon distances when already computed; None: computed here, a few heads at
        a time, only when ``"js"`` is asked for.
    prompt : ndarray of shape (n,), bool
        The prompt's tokens (the others are the response's, at least one).
    quantities : sequence of {"js", "attention"}
        Which scores (:data:`PROMPT_QUANTITIES`); ``("attention",)`` alone is ``O(n²)`` per head.
    """
    import torch

    from ..distances import token_distances_tensor

    prompt = np.asarray(prompt, dtype=bool)
    r = int(np.count_nonzero(~prompt))
    B, n = int(A.shape[0]), int(A.shape[-1])
    on_cpu = not (isinstance(A, torch.Tensor) and A.device.type != "cpu")
    # the attention forest needs r² per head, JS distances n²
    per_head = n * n if "js" in quantities else max(1, r * r)
    step = max(2, _GROUP_ELEMENTS // per_head) if on_cpu else max(1, B)
    out = np.empty((B, len(quantities)))
    for h0 in range(0, B, step):
        h1 = min(B, h0 + step)
        for c, q in enumerate(quantities):
            if q == "attention":
                out[h0:h1, c] = _attention_forest(A[h0:h1], prompt) / r
                continue
            if D_js is not None:
                D = D_js[h0:h1]
            else:
                D = token_distances_tensor(A[h0:h1])
            out[h0:h1, c] = spanning_forest_length(D, prompt) / r
            del D
    return out
