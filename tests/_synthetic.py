"""A synthetic :class:`~attntopo.Attention` over a text, for the tests that load no model.

The unit tests (``tests/unit/``) draw their attention here instead of running a model: the
tokens are the text's words and punctuation with character offsets into it, a BERT-like
``[CLS] … [SEP]`` pair (marked special) frames them unless the attention is causal, and every
row is a Dirichlet draw (causal rows cut to the past and renormalized), built through the
public constructor :meth:`Attention.from_weights`, which checks that the rows are distributions.
"""

from __future__ import annotations

import re

import numpy as np

from attntopo.attention import Attention

_PIECES = re.compile(r"\w+|[^\w\s]")
SPECIAL = ("[CLS]", "[SEP]")


def text_attention(
    text: str,
    L: int = 2,
    H: int = 3,
    seed: int = 0,
    *,
    causal: bool = False,
    model: str = "synthetic",
    concentration: float = 0.4,
) -> Attention:
    """Attention of shape (L, H, n, n) over the tokens of ``text``.

    ``n`` is the number of words and punctuation marks, plus 2 for ``[CLS]`` and ``[SEP]``
    when ``causal`` is False.  Rows are Dirichlet(``concentration``) draws from
    ``numpy.random.default_rng(seed)``: small concentrations give peaked, attention-like rows.
    """
    pieces = [(m.group(), m.start(), m.end()) for m in _PIECES.finditer(text)]
    tokens, offsets = [p[0] for p in pieces], [(p[1], p[2]) for p in pieces]
    if not causal:  # BERT-like: [CLS] … [SEP]; a causal model's prefixes need no trailing special
        tokens, offsets = [SPECIAL[0], *tokens, SPECIAL[1]], [(0, 0), *offsets, (0, 0)]
    n = len(tokens)
    w = np.random.default_rng(seed).dirichlet(np.full(n, concentration), size=(L, H, n))
    if causal:
        w = np.tril(w)
        w /= w.sum(-1, keepdims=True)
    return Attention.from_weights(
        w,
        tokens,
        causal=causal,
        model=model,
        text=text,
        offsets=offsets,
        special=[t in SPECIAL for t in tokens],
    )
