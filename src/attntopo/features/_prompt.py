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

__all__ = ["PROMPT_QUANTITIES", "spanning_forest_length", "prompt_features", "attention_distances"]

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
    from ..topology._mst import prim_edges

    return prim_edges(D, np.asarray(prompt, dtype=bool)).sum(dim=1).double().cpu().numpy()


def attention_distances(A: Any):
    """TOHA's attention-graph distance ``1 − max(A, Aᵀ)``, zero diagonal, clipped to [0, 1].

    ``A``: ndarray or torch.Tensor of shape (B, n, n) (negative round-off counts as 0).
    Returns a float64 torch.Tensor of shape (B, n, n) on ``A``'s device (the same numbers as
    :func:`attntopo.features.barcode_matrices` with ``lower_bound=0``).
    """
    import torch

    W = A.detach() if isinstance(A, torch.Tensor) else torch.from_numpy(np.asarray(A))
    W = W.to(torch.float64, copy=True).clamp_min_(0.0)
    D = torch.maximum(W, W.transpose(-1, -2))
    del W
    D.neg_().add_(1.0).clamp_(0.0, 1.0)
    D.diagonal(dim1=-2, dim2=-1).zero_()
    return D


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

    from ..distances._rows import token_distances_tensor

    prompt = np.asarray(prompt, dtype=bool)
    r = int(np.count_nonzero(~prompt))
    B, n = int(A.shape[0]), int(A.shape[-1])
    on_cpu = not (isinstance(A, torch.Tensor) and A.device.type != "cpu")
    step = max(2, _GROUP_ELEMENTS // max(1, n * n)) if on_cpu else max(1, B)
    out = np.empty((B, len(quantities)))
    for h0 in range(0, B, step):
        h1 = min(B, h0 + step)
        for c, q in enumerate(quantities):
            if q == "attention":
                D = attention_distances(A[h0:h1])
            elif D_js is not None:
                D = D_js[h0:h1]
            else:
                D = token_distances_tensor(A[h0:h1])
            out[h0:h1, c] = spanning_forest_length(D, prompt) / r
            del D
    return out
