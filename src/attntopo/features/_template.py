"""The ``template`` set: how far each head is from fixed attention patterns (la-tda).

For an attention matrix ``A`` (n × n, special tokens included) and a template ``T``,

    d(A, T) = ‖A − T‖_F / sqrt(‖A‖²_F + ‖T‖²_F)

which lies in [0, 1] for non-negative matrices (0: ``A = T``; 1: disjoint supports).
The templates (after la-tda's, which has separate comma and dot templates by token id where
``punct`` merges all punctuation, calls ``last`` ``sep`` and pads the matrix to
``max_seq_length`` unless told not to; docs/features.md):

``identity``   ``T = I`` (every token attends to itself)
``prev``       ``T[i, i−1] = 1`` (previous token; row 0 is empty)
``next``       ``T[i, i+1] = 1`` (next token; the last row is empty)
``first``      ``T[:, 0] = 1`` (the first token: [CLS], <s>, or the first word)
``last``       ``T[:, n−1] = 1`` (the last token: [SEP] for BERT-like models)
``punct``      ``T[i, j] = 1 / |P|`` for ``j`` in the punctuation tokens ``P`` (a row-uniform
               spread over them, as each of la-tda's comma and dot templates); all zero if the text
               has no punctuation token, so the distance is then 1.

Punctuation tokens are found through the tokenizer's offsets: non-special tokens whose text is
made of Unicode punctuation only (categories P*), never through hard-coded token ids.
"""

from __future__ import annotations

import unicodedata
from typing import Sequence

import numpy as np

__all__ = ["TEMPLATES", "template_features", "template_matrices", "punctuation_mask"]

TEMPLATES: tuple[str, ...] = ("identity", "prev", "next", "first", "last", "punct")


def punctuation_mask(
    text: str, offsets: Sequence[tuple[int, int]], special: Sequence[bool]
) -> np.ndarray:
    """True for tokens whose characters in ``text`` are all punctuation (bool, shape (n,))."""
    out = np.zeros(len(offsets), dtype=bool)
    for k, ((a, b), sp) in enumerate(zip(offsets, special)):
        piece = text[a:b].strip() if (not sp and b > a) else ""
        out[k] = bool(piece) and all(unicodedata.category(c).startswith("P") for c in piece)
    return out


def template_matrices(n: int, punct: np.ndarray) -> np.ndarray:
    """The templates of :data:`TEMPLATES` for n tokens, ndarray of shape (6, n, n)."""
    T = np.zeros((len(TEMPLATES), n, n))
    T[0] = np.eye(n)
    T[1] = np.eye(n, k=-1)
    T[2] = np.eye(n, k=1)
    T[3][:, 0] = 1.0
    T[4][:, n - 1] = 1.0
    p = np.flatnonzero(punct)
    if p.size:
        T[5][:, p] = 1.0 / p.size
    return T


def template_features(A: np.ndarray, punct: np.ndarray) -> np.ndarray:
    """Distances of each matrix of ``A`` (B, n, n) to each template, shape (B, 6).

    ``punct`` (n,) bool marks the punctuation tokens of the text.
    """
    A = np.asarray(A, dtype=np.float64)
    T = template_matrices(A.shape[-1], np.asarray(punct, dtype=bool))
    a2 = np.einsum("bij,bij->b", A, A)
    out = np.empty((A.shape[0], T.shape[0]))
    for k, t in enumerate(T):  # directly, not by expanding the square: no cancellation
        diff = A - t
        out[:, k] = np.sqrt(np.einsum("bij,bij->b", diff, diff) / (a2 + np.sum(t * t)))
    return out
