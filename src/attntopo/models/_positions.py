"""Switching a model's positional information off, and reaching its transformer layers.

Self-attention without positional information is permutation-equivariant: permuting the input
tokens permutes the output the same way.  Models put order back in one of two places, and
:func:`positions_off` removes it where it is:

* **absolute position embeddings** (BERT family: ``bert``, ``roberta``, ``xlm-roberta``,
  ``electra``, ``camembert``, ``distilbert``): the embedding layer adds
  ``position_embeddings(position_ids)`` to the token (and token-type) embeddings; its output is
  replaced by zeros.  The token-type embeddings stay (one segment: the same vector at every
  position) and the embedding LayerNorm acts on each token alone, so both commute with
  permutations.  The layers themselves see no positions.
* **rotary embeddings** (Llama family: ``llama``, ``mistral``, ``qwen2``, ``qwen3`` without a
  sliding window): the model's ``rotary_emb`` module returns ``(cos, sin)`` for every position,
  and every layer rotates its queries and keys by them; it is made to return ``cos = s``,
  ``sin = 0`` (``s`` the module's ``attention_scaling``, 1 for plain RoPE): the identity
  rotation, the same at every position.

A **causal mask** is positional information too: token ``i`` sees keys ``0 … i`` only, so the
order of the tokens decides what each one attends to.  A causal model is not permutation-
equivariant even without rotary embeddings; :func:`causal_mask_off` removes the mask as well
(every layer is called with ``attention_mask=None``: eager attention then adds no mask), which
turns the model into a bidirectional one with the causal model's weights — a map it was never
trained to be, but the one for which equivariance is a theorem.

Any other model type raises :class:`PositionsNotRemovableError` naming the type: a relative
position bias (T5, DeBERTa), ALiBi, sliding windows or an unknown layout could leave order
information behind, and a diagnostic must never report "equivariant" for a model that was not.

These context managers patch the loaded model in place (forward hooks, removed on exit, also
after an error).  Hold the model's lock around them (``with model._lock, positions_off(model):``,
as :func:`attntopo.theory.context` does; the lock is re-entrant, so the forward passes inside
take it again): another thread using the same :class:`~attntopo.models.AttentionModel` then
waits instead of running through the patched model.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import InvalidInputError

__all__ = [
    "PositionsNotRemovableError",
    "PositionalMechanism",
    "positional_mechanism",
    "positions_off",
    "causal_mask_off",
    "transformer_layers",
    "ABSOLUTE_TYPES",
    "ROTARY_TYPES",
]

#: model types whose only positional input is ``embeddings.position_embeddings``
ABSOLUTE_TYPES = ("bert", "roberta", "xlm-roberta", "electra", "camembert", "distilbert")
#: model types whose only positional input is the model-level ``rotary_emb`` (and the causal mask)
ROTARY_TYPES = ("llama", "mistral", "qwen2", "qwen3")


class PositionsNotRemovableError(InvalidInputError):
    """The model's positional mechanism cannot be switched
    off by attntopo (message names the type)."""


@dataclass(frozen=True)
class PositionalMechanism:
    """Where a model gets its order information from.

    Attributes
    ----------
    model_type : str
        ``config.model_type``.
    kind : {"absolute", "rotary"}
    module : str
        Dotted path (inside the loaded model) of the module whose output :func:`positions_off`
        replaces.
    causal : bool
        The model also masks future keys (a second positional mechanism).
    """

    model_type: str
    kind: str
    module: str
    causal: bool

    def describe(self) -> str:
        """One line: what carries position in this model, and what switching it off does."""
        what = (
            "absolute position embeddings (zeroed)"
            if self.kind == "absolute"
            else "rotary embeddings (cos = 1, sin = 0)"
        )
        mask = "; causal mask (removed only where asked)" if self.causal else ""
        return f"{self.model_type}: {what} at {self.module}{mask}"


def _hf(model: Any) -> Any:
    hf = getattr(model, "hf_model", model)
    return getattr(hf, "base_model", hf)


def _type(model: Any) -> str:
    cfg = getattr(getattr(model, "hf_model", model), "config", None)
    return str(getattr(cfg, "model_type", None) or type(getattr(model, "hf_model", model)).__name__)


def _refuse(model_type: str, why: str) -> PositionsNotRemovableError:
    return PositionsNotRemovableError(
        f"cannot switch off the positional information of model type {model_type!r}: {why}; "
        f"supported: absolute position embeddings ({', '.join(ABSOLUTE_TYPES)}) and rotary "
        f"embeddings ({', '.join(ROTARY_TYPES)})"
    )


def _find(root: Any, path: str) -> Any:
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def positional_mechanism(model: Any) -> PositionalMechanism:
    """What carries order information in ``model``, if attntopo can switch it off.

    Parameters
    ----------
    model : AttentionModel or transformers PreTrainedModel

    Returns
    -------
    PositionalMechanism

    Raises
    ------
    PositionsNotRemovableError
        Any model type not listed in :data:`ABSOLUTE_TYPES` / :data:`ROTARY_TYPES`, a listed type
        whose modules are not where that family keeps them, a sliding-window model, or a BERT-family
        model run as a causal decoder.
    """
    import torch

    mtype = _type(model)
    base = _hf(model)
    cfg = getattr(getattr(model, "hf_model", model), "config", None)
    causal = bool(getattr(model, "causal", getattr(cfg, "is_decoder", False)))
    if mtype in ABSOLUTE_TYPES:
        path = "embeddings.position_embeddings"
        mod = _find(base, path)
        if not isinstance(mod, torch.nn.Embedding):
            raise _refuse(mtype, f"no position-embedding table at {path}")
        if causal:
            raise _refuse(
                mtype,
                "it runs as a causal decoder, and attntopo removes causal masks only in "
                "rotary models",
            )
        pet = getattr(cfg, "position_embedding_type", "absolute")
        if pet not in (None, "absolute"):
            raise _refuse(
                mtype, f"position_embedding_type={pet!r} adds relative positions inside attention"
            )
        return PositionalMechanism(mtype, "absolute", path, causal)
    if mtype in ROTARY_TYPES:
        mod = _find(base, "rotary_emb")
        if mod is None or not isinstance(mod, torch.nn.Module):
            raise _refuse(mtype, "no model-level rotary_emb module")
        window = getattr(cfg, "sliding_window", None)
        sliding = bool(window) and bool(getattr(cfg, "use_sliding_window", True))
        if "sliding_attention" in (getattr(cfg, "layer_types", None) or ()):
            sliding = True
        if sliding:
            raise _refuse(
                mtype,
                f"it uses a sliding-window mask ({window} tokens): order information in the mask",
            )
        return PositionalMechanism(mtype, "rotary", "rotary_emb", causal)
    raise _refuse(
        mtype,
        "its positional mechanism is not one attntopo knows how to remove (relative "
        "position biases, ALiBi and learned layouts of other families are not)",
    )


def transformer_layers(model: Any) -> list:
    """The model's transformer layers (blocks) in order, as modules.

    Raises
    ------
    PositionsNotRemovableError
        The model type is not supported (see :func:`positional_mechanism`).
    """
    mech = positional_mechanism(model)
    base = _hf(model)
    paths = ("encoder.layer", "transformer.layer") if mech.kind == "absolute" else ("layers",)
    for path in paths:
        layers = _find(base, path)
        if layers is not None:
            return list(layers)
    raise _refuse(mech.model_type, f"no list of layers at {' or '.join(paths)}")


@contextmanager
def positions_off(model: Any) -> Iterator[PositionalMechanism]:
    """While active, ``model`` runs without its positional embeddings (absolute or rotary).

    The causal mask of a causal model stays (see :func:`causal_mask_off`).  Yields the
    :class:`PositionalMechanism` that was switched off.

    Raises
    ------
    PositionsNotRemovableError
        Before anything is patched, for a model type this cannot handle.
    """
    mech = positional_mechanism(model)
    module = _find(_hf(model), mech.module)

    if mech.kind == "absolute":

        def hook(_mod, _inputs, output):
            return output.new_zeros(output.shape)
    else:
        scale = float(getattr(module, "attention_scaling", 1.0) or 1.0)

        def hook(_mod, _inputs, output):
            cos, sin = output
            return cos.new_full(cos.shape, scale), sin.new_zeros(sin.shape)

    handle = module.register_forward_hook(hook)
    try:
        yield mech
    finally:
        handle.remove()


@contextmanager
def causal_mask_off(model: Any) -> Iterator[None]:
    """While active, every transformer layer of a (rotary) causal model is called without a mask.

    Eager attention adds ``attention_mask`` to the logits only when one is given, so every token
    then attends to every token.  For single texts without padding only.

    Raises
    ------
    PositionsNotRemovableError
        For models other than the rotary family (whose layers take ``attention_mask=`` by keyword).
    """
    mech = positional_mechanism(model)
    if mech.kind != "rotary":
        raise _refuse(mech.model_type, "attntopo removes causal masks only in rotary models")
    layers = transformer_layers(model)

    def pre_hook(_mod, args, kwargs):
        if "attention_mask" not in kwargs:
            raise _refuse(mech.model_type, "its layers take no attention_mask= keyword to remove")
        kwargs = dict(kwargs)
        kwargs["attention_mask"] = None
        return args, kwargs

    handles = [layer.register_forward_pre_hook(pre_hook, with_kwargs=True) for layer in layers]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
