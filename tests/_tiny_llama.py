"""A tiny causal Llama with random weights (rotary positions, grouped-query attention), built
offline in about a second: the stand-in for a 7-8B decoder in bfloat16 in the tests.

``tiny_llama("bfloat16")`` wraps it with :func:`attntopo.load_model` (an already-loaded model,
with MiniLM's tokenizer); the same ``seed`` gives the same weights in every dtype, so a
low-precision model can be compared with its float32 twin.
"""

from __future__ import annotations

from functools import lru_cache

#: the shape: 2 layers x 4 query heads sharing 2 key/value heads, head_dim 16
SHAPE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
)


@lru_cache(maxsize=None)
def _tokenizer():
    from transformers import AutoTokenizer

    from attntopo.models import resolve_spec

    return AutoTokenizer.from_pretrained(resolve_spec("minilm").path)


@lru_cache(maxsize=None)
def hf_tiny_llama(dtype: str = "bfloat16", seed: int = 0):
    """The transformers model (LlamaForCausalLM, eager attention, eval mode) in ``dtype``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _tokenizer()
    cfg = LlamaConfig(
        vocab_size=tok.vocab_size,
        max_position_embeddings=512,
        rope_theta=10000.0,
        initializer_range=0.25,
        tie_word_embeddings=True,
        **SHAPE,
    )
    cfg._attn_implementation = "eager"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    return model.to(getattr(torch, dtype)).eval()


def tiny_llama(dtype: str = "bfloat16", seed: int = 0):
    """The tiny Llama as an :class:`attntopo.models.AttentionModel` (a new wrapper each call)."""
    import attntopo as at

    return at.load_model(hf_tiny_llama(dtype, seed), tokenizer=_tokenizer())
