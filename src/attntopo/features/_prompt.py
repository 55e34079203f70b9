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
"""

from __future__ import annotations

import numpy as np

from ._barcode import barcode_matrices

__all__ = ["PROMPT_QUANTITIES", "spanning_forest_length", "prompt_features"]

PROMPT_QUANTITIES: tuple[str, ...] = ("js", "attention")


def spanning_forest_length(D: np.ndarray, prompt: np.ndarray) -> np.ndarray:
    """Length of the minimum spanning forest attaching the non-prompt points to the prompt.

    Prim's algorithm on the matrix with the prompt contracted to one vertex, run for all
    matrices in lockstep (``r`` steps of ``O(B r)`` each).

    Parameters
    ----------
    D : ndarray of shape (B, n, n)
        Symmetric distance matrices.
    prompt : ndarray of shape (n,), bool
        The prompt's points (at least one).

    Returns
    -------
    ndarray of shape (B,), float64
        Total edge length (not yet divided by the number of response points).
    """
    D = np.asarray(D, dtype=np.float64)
    prompt = np.asarray(prompt, dtype=bool)
    resp = np.flatnonzero(~prompt)
    B, r = D.shape[0], resp.size
    if r == 0:
        return np.zeros(B)
    to_prompt = D[:, prompt][:, :, resp].min(axis=1)  # (B, r)
    RR = D[:, resp][:, :, resp]  # (B, r, r)
    rows = np.arange(B)
    best = to_prompt.copy()  # distance of each response point to the growing tree
    done = np.zeros((B, r), dtype=bool)
    total = np.zeros(B)
    for _ in range(r):
        v = np.argmin(np.where(done, np.inf, best), axis=1)
        total += best[rows, v]
        done[rows, v] = True
        np.minimum(best, RR[rows, v], out=best)
    return total


def prompt_features(A: np.ndarray, D_js: np.ndarray, prompt: np.ndarray) -> np.ndarray:
    """The ``prompt`` set of one pair, shape (B, 2): JS score and attention score per head.

    ``A`` (B, n, n) attention, ``D_js`` (B, n, n) its Jensen–Shannon distances, ``prompt`` (n,)
    bool the prompt's tokens (the others are the response's, at least one).
    """
    r = int(np.count_nonzero(~np.asarray(prompt, dtype=bool)))
    return np.stack(
        [
            spanning_forest_length(D_js, prompt) / r,
            spanning_forest_length(barcode_matrices(A, lower_bound=0.0), prompt) / r,
        ],
        axis=-1,
    )
