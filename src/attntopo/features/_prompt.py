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
are computed); ``js`` needs the Jensen–Shannon distances from the response's rows to every row
(the forest reads no other: the prompt-to-prompt block is never computed), ``r·n`` pairs of
``O(n)`` each instead of the ``n²/2`` of a full matrix, so ``O(r n²)``: a RAG-shaped pair (a long
prompt, a short answer) pays a fraction ``2r/n`` of the full matrix.  Ask for the
``attention`` quantity alone (``features(..., sets=("prompt",), prompt_quantities=("attention",))``)
to pay only for it.  Both run on the device of the attention they are given (a CUDA tensor
stays on its GPU: :mod:`attntopo.topology._mst`), a few heads at a time.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Sequence

import numpy as np

from .._threads import torch_threads
from ..errors import InvalidInputError

__all__ = ["PROMPT_QUANTITIES", "spanning_forest_length", "prompt_features"]

PROMPT_QUANTITIES: tuple[str, ...] = ("js", "attention")

# float64 elements of the temporaries of one group of heads on the CPU (distances, the
# contracted graph: 8 MiB): heads are scored a few at a time so that memory stays O(n²)
_GROUP_ELEMENTS = 1 << 20


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

    return prim_edges(D, roots=np.asarray(prompt, dtype=bool)).sum(dim=1).double().cpu().numpy()


def _js_forest(A: Any, prompt: np.ndarray, metric: str = "jensen_shannon") -> np.ndarray:
    """:func:`spanning_forest_length` of the token distances (``metric``, Jensen–Shannon by
    default) of ``A`` ((B, n, n) attention, on its device), from the response rows' distances
    alone
    (:func:`attntopo.distances.token_distances_tensor` with ``rows``: ``r·n`` pairs): the
    nearest prompt token of each response token and the response-to-response block, the
    same numbers as the full matrix gives (the same bits with the C kernel)."""
    from ..distances import token_distances_tensor
    from ..topology import prim_contracted

    R = np.flatnonzero(~prompt)
    k = _prefix(prompt)
    # (B, r, n): response a to token j; of the prompt tokens (a prefix) only the nearest
    D = token_distances_tensor(A, metric=metric, rows=R, nearest=k or 0)
    if k is not None:  # a pair: the prompt first
        to_p, RR = D[:, :, :k].amin(-1), D[:, :, k:]
    else:
        idx_p = np.flatnonzero(prompt)
        to_p = D[:, :, idx_p].amin(-1)
        RR = D[:, :, R]
    return prim_contracted(to_p, RR).sum(dim=1).double().cpu().numpy()


def _prefix(mask: np.ndarray) -> int | None:
    """``k`` when the True entries of ``mask`` are exactly its first ``k`` (else None)."""
    k = int(np.count_nonzero(mask))
    return k if bool(mask[:k].all()) else None


def _contracted(W: Any, prompt: np.ndarray, to_p: Any, RR: Any) -> None:
    """TOHA's ``1 − max(A, Aᵀ)`` (weights below 0 read as 0, clipped to [0, 1]) between the
    response tokens (``RR``, (B, r, r) float64) and from each response token to the prompt
    contracted to one vertex (``to_p``, (B, r) float64), written into the given tensors and
    read from the blocks of ``W`` ((B, n, n) float32 tensor) that they need, never the full
    ``n × n`` distances.  ``1 − x`` is monotone, so the nearest prompt point is ``1 − max`` of
    the weights; the maximum is taken in float32 (exact) before the float64 arithmetic."""
    import torch

    k = _prefix(prompt)
    if k is not None:  # the prompt before the response (a pair): views of the blocks
        WR = W[:, k:]
        to_w = torch.maximum(WR[:, :, :k].amax(-1), W[:, :k, k:].amax(-2))
        RRw = WR[:, :, k:]
    else:
        P = torch.as_tensor(np.flatnonzero(prompt), device=W.device)
        R = torch.as_tensor(np.flatnonzero(~prompt), device=W.device)
        WR = W.index_select(-2, R)  # (B, r, n): response rows
        to_w = torch.maximum(
            WR.index_select(-1, P).amax(-1), W.index_select(-2, P).index_select(-1, R).amax(-2)
        )
        RRw = WR.index_select(-1, R)
    to_p.copy_(to_w)
    to_p.clamp_min_(0.0).neg_().add_(1.0).clamp_(0.0, 1.0)
    RR.copy_(torch.maximum(RRw, RRw.transpose(-1, -2)))
    RR.clamp_min_(0.0).neg_().add_(1.0).clamp_(0.0, 1.0)


def _as_torch(A: Any):
    import torch

    return A.detach() if isinstance(A, torch.Tensor) else torch.from_numpy(np.asarray(A))


def _attention_forest(A: Any, prompt: np.ndarray):
    """:func:`spanning_forest_length` of TOHA's ``1 − max(A, Aᵀ)`` (the same numbers as
    :func:`attntopo.features.barcode_matrices` with ``lower_bound=0``), from the attention
    blocks it needs (:func:`_contracted`): ``(B,)`` float64 on the host."""
    import torch

    from ..topology import prim_contracted

    W = _as_torch(A)
    B, r = int(W.shape[0]), int(np.count_nonzero(~prompt))
    to_p = torch.empty((B, r), dtype=torch.float64, device=W.device)
    RR = torch.empty((B, r, r), dtype=torch.float64, device=W.device)
    _contracted(W, prompt, to_p, RR)
    return prim_contracted(to_p, RR).sum(dim=1).double().cpu().numpy()


def _attention_forest_subset(A: np.ndarray, keep: np.ndarray, prompt: np.ndarray) -> np.ndarray:
    """:func:`_attention_forest` of ``A``'s tokens ``keep``, rows renormalized
    (:func:`attntopo.attention.renormalized_subset`, as :meth:`Attention.drop_special`
    gives them), one head at a time: the only ``m × m`` temporaries are one head's."""
    import torch

    from ..attention import renormalized_subset
    from ..topology import prim_contracted

    B, m, r = int(A.shape[0]), int(keep.size), int(np.count_nonzero(~prompt))
    to_p = torch.empty((B, r), dtype=torch.float64)
    RR = torch.empty((B, r, r), dtype=torch.float64)
    sub = np.empty((1, m, m), dtype=np.float32)
    for h in range(B):
        renormalized_subset(A[h : h + 1], keep, out=sub)
        _contracted(torch.from_numpy(sub), prompt, to_p[h : h + 1], RR[h : h + 1])
    return prim_contracted(to_p, RR).sum(dim=1).double().cpu().numpy()


def prompt_features(
    A: Any,
    D_js: Any,
    prompt: np.ndarray,
    quantities: Sequence[str] = PROMPT_QUANTITIES,
    *,
    keep: np.ndarray | None = None,
    metric: str = "jensen_shannon",
) -> np.ndarray:
    """The ``prompt`` set of one pair, shape (B, len(quantities)), quantities in the given order.

    Parameters
    ----------
    A : ndarray or torch.Tensor of shape (B, n, n)
        Attention of ``B`` heads (a CUDA tensor is scored on its GPU).
    D_js : ndarray or torch.Tensor of shape (B, n, n), or None
        Its token distances (``metric``) when already computed; None: computed here, a few
        heads at a time, only when ``"js"`` is asked for, and only from the response's rows
        (``r·n`` pairs, never the prompt-to-prompt block).
    prompt : ndarray of shape (n,), bool
        The prompt's tokens (the others are the response's, at least one); with ``keep``,
        shape (len(keep),): of the kept tokens.
    quantities : sequence of {"js", "attention"}
        Which scores (:data:`PROMPT_QUANTITIES`); ``("attention",)`` alone is ``O(n²)`` per head.
    keep : ndarray of int, optional
        Score only these tokens of ``A`` (a host array), each head's rows renormalized over
        them as :meth:`attntopo.attention.Attention.drop_special` does, a head at a time: the
        same numbers as ``prompt_features(drop_special(A), ...)`` without a copy of ``A``.
        ``D_js`` must then be None.
    metric : str, default "jensen_shannon"
        The token distance of the ``"js"`` score (a key of
        :data:`attntopo.distances.DISTANCES`).
    """
    import torch

    from ..attention import renormalized_subset

    prompt = np.asarray(prompt, dtype=bool)
    if not prompt.any():  # both scores attach the response to the prompt's tokens
        raise InvalidInputError("the prompt score needs at least one prompt token; got none")
    r = int(np.count_nonzero(~prompt))
    B, n = int(A.shape[0]), int(prompt.shape[0])
    on_cpu = not (isinstance(A, torch.Tensor) and A.device.type != "cpu")
    if keep is not None:
        keep = np.asarray(keep, dtype=np.int64)
        A = np.asarray(A)
    # the attention forest needs r² per head, the JS forest the response rows' r·n distances
    per_head = r * n if "js" in quantities else max(1, r * r)
    step = max(2, _GROUP_ELEMENTS // per_head) if on_cpu else max(1, B)
    out = np.empty((B, len(quantities)))
    for h0 in range(0, B, step):
        h1 = min(B, h0 + step)
        sub = None
        for c, q in enumerate(quantities):
            if q == "attention":
                # on the CPU one torch thread: many short passes over a head's blocks, each of
                # which two threads would end at a barrier (see models.precision.normalize_rows)
                with torch_threads(1) if on_cpu else nullcontext():
                    out[h0:h1, c] = (
                        _attention_forest(A[h0:h1], prompt)
                        if keep is None
                        else _attention_forest_subset(A[h0:h1], keep, prompt)
                    ) / r
                continue
            if D_js is not None:
                out[h0:h1, c] = spanning_forest_length(D_js[h0:h1], prompt) / r
                continue
            if keep is not None and sub is None:
                sub = renormalized_subset(A[h0:h1], keep)
            out[h0:h1, c] = _js_forest(A[h0:h1] if keep is None else sub, prompt, metric) / r
        del sub
    return out
