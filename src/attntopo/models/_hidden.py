"""Hidden states and attention of one forward pass, for the theory diagnostics.

:meth:`AttentionModel.attention` returns attention only; the depth and context diagnostics
(:mod:`attntopo.theory`) also need the residual stream after every layer.  One forward pass
gives both: ``output_hidden_states=True`` and ``output_attentions=True`` together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._validation import check_texts
from ..errors import ModelLoadError
from ._description import Encoding
from .model import AttentionModel
from .precision import normalize_rows

__all__ = ["ForwardCapture", "forward_capture"]


@dataclass(frozen=True)
class ForwardCapture:
    """What one text's forward pass produced.

    Attributes
    ----------
    encoding : Encoding
        The tokens (special tokens included), as :meth:`AttentionModel.tokenize` gives them.
    hidden : ndarray of shape (n_layers + 1, n_tokens, d_model), float32
        ``hidden[0]`` is the embedding output (the input of layer 0), ``hidden[l + 1]`` the
        output of layer ``l``.  For Llama-style models the last entry is after the final norm
        (what transformers returns as the last hidden state).
    attention : ndarray of shape (n_layers, n_heads, n_tokens, n_tokens), float32 or None
        The attention weights of the same pass (``None`` unless asked for).
    """

    encoding: Encoding
    hidden: np.ndarray
    attention: np.ndarray | None

    @property
    def n_tokens(self) -> int:
        return int(self.hidden.shape[1])


def forward_capture(
    model: AttentionModel,
    texts: str | Sequence[str],
    *,
    attention: bool = False,
    truncate: bool = False,
    input_embeds_hook=None,
) -> list[ForwardCapture]:
    """Hidden states (and optionally attention) of each text, one forward pass per text.

    Texts run one at a time (no padding: hidden states of padded batches differ from a run
    alone by float32 round-off, and these diagnostics compare tokens across layers).

    Parameters
    ----------
    model : AttentionModel
    texts : str or sequence of str
    attention : bool
        Also return the attention weights of the same pass.
    truncate : bool
        Cut texts longer than the model's limit instead of raising.
    input_embeds_hook : callable, optional
        ``hook(ids: LongTensor (1, n)) -> FloatTensor (1, n, d)``: the input embeddings to feed
        instead of the ids (e.g. permuted or position-free embeddings); ``None`` feeds the ids.

    Returns
    -------
    list of ForwardCapture
        One per text, in order.
    """
    import torch

    encs = model._encode(check_texts(texts), truncate=bool(truncate))
    out = []
    for enc in encs:
        ids = torch.tensor([enc.ids], dtype=torch.long, device=model.device)
        kwargs = {
            "output_hidden_states": True,
            "output_attentions": bool(attention),
            **model.forward_kwargs,
        }
        with model._lock, torch.inference_mode():
            # the hook's embedding too: a model whose weights require gradients (one the user
            # loaded) would otherwise give hidden states that cannot become arrays
            if input_embeds_hook is None:
                kwargs["input_ids"] = ids
            else:
                kwargs["inputs_embeds"] = input_embeds_hook(ids)
            res = model.hf_model(**kwargs)
        hs = getattr(res, "hidden_states", None)
        if not hs:
            raise ModelLoadError(f"{model.name} returned no hidden states")
        hidden = torch.stack([h[0].float() for h in hs]).cpu().numpy()
        att = None
        if attention:
            atts = getattr(res, "attentions", None)
            if not atts or any(a is None for a in atts):
                raise ModelLoadError(
                    f"{model.name} returned no attention weights: load it with "
                    "attn_implementation='eager'"
                )
            # rows renormalized in float64 (a bfloat16 row sums to 1 only within ~2^-8)
            att = (
                torch.stack(
                    [
                        normalize_rows(a[0], what=f"attention of {model.name}, layer {i}")
                        for i, a in enumerate(atts)
                    ]
                )
                .cpu()
                .numpy()
            )
        out.append(ForwardCapture(encoding=enc, hidden=hidden, attention=att))
    return out
