"""Random-weight Llamas of real shapes (no download), texts of a given token count, and a
peak-memory probe: what benchmarks/llm_bench.py and the streaming memory test share.

A causal Llama built from ``LlamaConfig`` has rotary positions and grouped-query attention, as
Llama-3 and Mistral do; its weights are random (std ``1/sqrt(hidden)``), which changes the
numbers but not the shapes, so neither the cost of the forward pass nor that of the topology.
The tokenizer is MiniLM's (packaged, offline; its length limit raised), so token counts are
exact.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# the peak is the process's own (VmHWM), read and reset by the package's one reader
from attntopo._memory import peak_rss, reset_peak, status_kib

SHAPES = {
    # name: (layers, heads, kv heads, hidden, intermediate)
    "tiny": (2, 4, 2, 64, 128),  # tests and the benchmark's smoke run
    "12x12": (12, 12, 4, 768, 2048),
    "1b": (16, 32, 8, 2048, 8192),
    "8b": (32, 32, 8, 4096, 14336),
}


def tokenizer():
    """MiniLM's fast tokenizer, its length limit lifted (no model loaded)."""
    from transformers import AutoTokenizer

    from attntopo.models.specs import resolve_spec

    spec = resolve_spec("minilm")
    tok = AutoTokenizer.from_pretrained(spec.path)
    tok.model_max_length = 1 << 20
    return tok


def random_llama(
    shape: str,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
    max_tokens: int = 4096,
):
    """An :class:`~attntopo.models.AttentionModel` around a random causal Llama of ``shape``
    (a key of :data:`SHAPES`), eager attention, built on ``device`` in ``dtype``."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    import attntopo as at

    layers, heads, kv, hidden, inter = SHAPES[shape]
    tok = tokenizer()
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        max_position_embeddings=max_tokens,
        initializer_range=hidden**-0.5,
        pad_token_id=tok.pad_token_id,
        use_cache=False,
    )
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    old = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        with torch.device(device):
            model = LlamaModel(cfg).eval()
    finally:
        torch.set_default_dtype(old)
    return at.load_model(model, tokenizer=tok, progress=False)


def pair_with_tokens(tok, n: int, prompt_share: float = 0.5) -> tuple[str, str]:
    """A (prompt, response) pair of natural text whose joined form has about ``n`` tokens
    (special tokens included), the prompt about ``prompt_share`` of them."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import text_with_tokens

    text = text_with_tokens(tok, n)
    words = [m.start() for m in re.finditer(r"\S+", text)]
    cut = words[int(len(words) * prompt_share)]
    return text[:cut].rstrip(), text[cut:]


def rss_bytes() -> int:
    """Resident size of this process now (``VmRSS``), in bytes; 0 where ``/proc`` is absent."""
    return (status_kib("VmRSS") or {}).get("VmRSS", 0) * 1024


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``; else nothing),
    so that the resident size counts live memory, not what earlier calls freed."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def extra_peak(fn) -> tuple[int, object]:
    """``(peak resident bytes above the resident size before, fn())`` of one call.

    The baseline is taken after a garbage collection and :func:`trim_heap`: memory that
    earlier calls freed but the C heap kept would otherwise sit in the baseline and hide part
    of this call's peak (the call could reuse it without the resident size growing)."""
    import gc

    gc.collect()
    trim_heap()
    if not reset_peak():
        raise OSError("cannot reset the peak resident size (/proc/self/clear_refs)")
    before = rss_bytes()
    out = fn()
    return peak_rss() - before, out


def attention_bytes(model, n: int) -> int:
    """All layers' float32 attention of one text of ``n`` tokens, in bytes."""
    return 4 * model.n_layers * model.n_heads * n * n


if __name__ == "__main__":
    # python benchmarks/_llama.py [N [QUANTITIES [LAYERS]]]: the 12x12 memory probe, one line
    # (N tokens, default 900; prompt quantities, default js,attention; layers, default all)
    import json

    import torch

    import attntopo as at

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 900
    quantities = tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("js", "attention")
    layers = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else None
    m = random_llama("12x12")
    pair = pair_with_tokens(m.tokenizer, n)
    # warm up: the whole computation on a short pair (imports, first-call setup), then one
    # plain forward pass of the long text (buffers of that length); extra_peak's baseline is
    # taken after them, with what they freed handed back to the system.
    # drop_special=True: the features default of the measured runs (issue 29 made it False)
    at.features(
        [pair_with_tokens(m.tokenizer, 40)],
        m,
        sets=("prompt",),
        prompt_quantities=quantities,
        drop_special=True,
    )
    with torch.inference_mode():
        m.hf_model(input_ids=torch.tensor([m.tokenize(" ".join(pair)).ids]))
    extra, table = extra_peak(
        lambda: at.features(
            [pair],
            m,
            sets=("prompt",),
            layers=layers,
            prompt_quantities=quantities,
            drop_special=True,
        )
    )
    n_tok = len(m.tokenize(" ".join(pair)).ids)
    print(
        json.dumps(
            {
                "extra_peak": extra,
                "attention": attention_bytes(m, n_tok),
                "n_tokens": n_tok,
                "columns": len(table.columns),
            }
        )
    )
