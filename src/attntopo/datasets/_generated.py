"""Human or machine: fortunes next to continuations a language model writes from their first words.

The tda4atd setup (Kushnareva et al. 2021): for each chosen fortune, the first ``prompt_words``
words go to the packaged SmolLM2, which continues them by sampling until the text is about as
long (in tokens) as the human one.  Both texts share their opening, so a classifier cannot win
on the first words alone; pass ``groups`` to a group-aware splitter (``GroupKFold``) to keep a
pair on one side of every split.

Generation is slow on a CPU, so the texts are generated once and cached on disk as JSON Lines
(``$ATTNTOPO_CACHE_DIR`` or the user cache folder, ``datasets/``); the file name is a hash of
everything that decides them: the model, the fortunes chosen, the sampling settings, the seed
and the batch size (sampling draws from one random stream per batch).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._validation import check_nonneg_int, check_number, check_positive_int
from ..errors import InvalidInputError
from ..io import atomic_write_text
from ._files import read_texts
from ._fortunes import fortunes
from ._types import TextDataset

__all__ = ["generated_vs_human", "GENERATION_VERSION"]

#: Bump when the generation procedure changes (it is part of the cache key).
GENERATION_VERSION = 1


def _cache_folder(memory: Any) -> Path:
    """The folder of ``memory=``: a folder, or a ``joblib.Memory``'s location (the glossary's
    ``memory``, as in the features' cache), else the default cache folder."""
    if memory is not None:
        location = getattr(memory, "location", memory)
        if location is None:
            raise InvalidInputError(
                "memory=: a joblib.Memory without a location caches nothing here; give a folder"
            )
        if not isinstance(location, (str, os.PathLike)):
            raise InvalidInputError(
                "memory must be a folder (str or path) or a joblib.Memory, got "
                f"{type(memory).__name__}"
            )
        return Path(location)
    env = os.environ.get("ATTNTOPO_CACHE_DIR")
    if env:
        return Path(env) / "datasets"
    import platformdirs

    return Path(platformdirs.user_cache_dir("attntopo")) / "datasets"


_LM_CACHE: dict[str, tuple] = {}


def _causal_lm(model_name: str):
    """(tokenizer, language model with its head) for sampling; loaded once per process.

    :func:`attntopo.load_model` keeps the bare transformer (attention is all it needs); text
    generation needs the LM head too, loaded from the same files (the GGUF's cached
    conversion for the packaged SmolLM2).
    """
    if model_name not in _LM_CACHE:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..models import resolve_spec
        from ..models.loading import gguf_converted_folder

        spec = resolve_spec(model_name)
        folder = str(gguf_converted_folder(spec)) if spec.is_gguf else spec.path
        tok = AutoTokenizer.from_pretrained(folder)
        lm = AutoModelForCausalLM.from_pretrained(folder)
        lm.eval()
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        _LM_CACHE[model_name] = (tok, lm)
    return _LM_CACHE[model_name]


def _generate(
    model_name: str,
    prompts: list[str],
    budgets: list[int],
    *,
    seed: int,
    temperature: float,
    top_p: float,
    batch_size: int,
) -> list[str]:
    """Sampled continuations (text after the prompt), one per prompt."""
    import torch

    tok, lm = _causal_lm(model_name)
    old_side = tok.padding_side
    tok.padding_side = "left"  # generation continues from the right end
    out: list[str] = []
    try:
        for b, start in enumerate(range(0, len(prompts), batch_size)):
            chunk = prompts[start : start + batch_size]
            enc = tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
            torch.manual_seed(seed * 100_003 + b)
            with torch.inference_mode():
                ids = lm.generate(
                    **enc,
                    do_sample=True,
                    temperature=temperature,
                    top_p=top_p,
                    max_new_tokens=max(budgets[start : start + batch_size]),
                    pad_token_id=tok.pad_token_id,
                )
            new = ids[:, enc["input_ids"].shape[1] :]
            for k, row in enumerate(new):
                out.append(tok.decode(row[: budgets[start + k]], skip_special_tokens=True))
    finally:
        tok.padding_side = old_side
    return out


def generated_vs_human(
    *,
    n: int = 1000,
    seed: int = 0,
    model: str = "smollm2",
    categories: Sequence[str] | None = None,
    prompt_words: int = 4,
    temperature: float = 0.9,
    top_p: float = 0.95,
    batch_size: int = 16,
    memory: Any = None,
    file: str | os.PathLike | None = None,
) -> TextDataset:
    """Human fortunes (label ``"human"``) and model
    continuations of their first words (``"machine"``).

    Parameters
    ----------
    n : int
        Texts in all, even: ``n / 2`` fortunes and as many continuations.
    seed : int
        Chooses the fortunes and seeds the sampling.
    model : str
        A causal model alias or id (the packaged ``"smollm2"`` by default).
    categories : sequence of str, optional
        Fortune categories to draw from (all by default).
    prompt_words : int
        Words of each fortune given to the model.
    temperature, top_p : float
        Sampling settings.
    batch_size : int
        Prompts generated together.
    memory : path or joblib.Memory, optional
        Where to cache: a folder, or a ``joblib.Memory``'s location (default
        ``$ATTNTOPO_CACHE_DIR/datasets`` or the user cache folder).
    file : path, optional
        Read your own labelled texts instead (CSV or JSONL with ``text`` and ``label``).

    Returns
    -------
    TextDataset
        Pairs in order (human, machine) with ``groups`` = pair index.
    """
    if file is not None:
        return read_texts(file)
    n = check_positive_int(n, "n", allow_none=False)
    if n % 2 or n < 2:
        raise InvalidInputError(
            f"n must be an even number >= 2 (half human, half machine), got {n}"
        )
    seed = check_nonneg_int(seed, "seed")
    prompt_words = check_positive_int(prompt_words, "prompt_words", allow_none=False)
    temperature = check_number(temperature, "temperature", lo=0, lo_open=True)
    top_p = check_number(top_p, "top_p", lo=0, lo_open=True)
    if top_p > 1:
        raise InvalidInputError(f"top_p must be in (0, 1], got {top_p}")
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=False)
    pool = fortunes(categories=categories, min_words=prompt_words + 8, max_words=40)
    if len(pool) < n // 2:
        raise InvalidInputError(
            f"only {len(pool)} fortunes pass the filter; ask for n <= {2 * len(pool)}"
        )
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(pool), size=n // 2, replace=False))
    humans = [pool.texts[i] for i in pick]
    key = {
        "version": GENERATION_VERSION,
        "model": model,
        "texts": hashlib.sha256("\x1e".join(humans).encode()).hexdigest(),
        "prompt_words": prompt_words,
        "temperature": temperature,
        "top_p": top_p,
        "seed": seed,
        "batch_size": batch_size,
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    cache = _cache_folder(memory) / f"generated_vs_human-{digest}.jsonl"
    machines = _read_cache(cache, len(humans))
    if machines is None:
        tok = _causal_lm(model)[0]
        prompts = [" ".join(h.split()[:prompt_words]) for h in humans]
        budgets = [
            max(
                len(tok(h, add_special_tokens=False)["input_ids"])
                - len(tok(p, add_special_tokens=False)["input_ids"]),
                4,
            )
            for h, p in zip(humans, prompts)
        ]
        cont = _generate(
            model,
            prompts,
            budgets,
            seed=seed,
            temperature=temperature,
            top_p=top_p,
            batch_size=batch_size,
        )
        machines = [" ".join((p + c).split()) for p, c in zip(prompts, cont)]
        lines = [json.dumps({"settings": key})] + [json.dumps({"text": t}) for t in machines]
        atomic_write_text(cache, "\n".join(lines) + "\n")
    texts, labels, groups = [], [], []
    for g, (h, m_text) in enumerate(zip(humans, machines)):
        texts += [h, m_text]
        labels += ["human", "machine"]
        groups += [g, g]
    return TextDataset(texts, labels, groups, "generated_vs_human", {**key, "cache": str(cache)})


def _read_cache(path: Path, n: int) -> list[str] | None:
    """The cached continuations, or None when absent or unreadable (then regenerated)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        texts = [json.loads(line)["text"] for line in lines[1:]]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        return None
    if len(texts) != n or not all(isinstance(t, str) for t in texts):
        return None
    return texts
