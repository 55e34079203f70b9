"""Layer and head counts from a model's configuration, read before any weight is loaded.

A layer or head out of range is refused in one line before the model loads (7–10 s for
SmolLM2, minutes for an 8B model): :func:`check_selection` reads the counts from
``config.json`` (a folder, a packaged alias, a hub id already in the Hugging Face cache) or
from a GGUF file's header (``{arch}.block_count`` and ``{arch}.attention.head_count``; the
header is read up to those keys, no tensor and no tokenizer).  Where the counts cannot be
read this way (a hub id not cached yet, an unusual configuration), nothing is checked here:
the loaded model checks them as before, with the same message.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, BinaryIO

from .._validation import check_indices

__all__ = ["configured_counts", "check_selection"]

# GGUF value types (gguf/constants.py: GGUFValueType) and the byte size of the fixed ones
_STRING, _ARRAY = 8, 9
_FIXED = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def configured_counts(model: Any) -> tuple[str, int, int] | None:
    """``(name, n_layers, n_heads)`` of ``model`` without loading its weights, or None.

    ``model`` is what ``model=`` accepts: an alias, folder, GGUF file, hub id or
    :class:`~attntopo.models.ModelSpec` (read from its configuration), a loaded or described
    model or a transformers model (read from it).  Never raises for a model it cannot read:
    loading it says what is wrong.
    """
    from .specs import ModelSpec, resolve_spec

    n_layers = getattr(model, "n_layers", None)
    if n_layers is not None and getattr(model, "n_heads", None) is not None:
        return str(getattr(model, "name", "this model")), int(n_layers), int(model.n_heads)
    if not isinstance(model, (str, os.PathLike, ModelSpec)):
        cfg = getattr(model, "config", None)
        counts = _from_mapping(vars(cfg)) if cfg is not None and hasattr(cfg, "__dict__") else None
        return None if counts is None else ("this model", *counts)
    try:
        spec = resolve_spec(model)
        counts = _gguf_counts(spec) if spec.is_gguf else _config_counts(spec)
    except Exception:  # noqa: BLE001 - loading the model reports what is wrong with it
        return None
    return None if counts is None else (spec.name, *counts)


def check_selection(
    model: Any, *, layers: Any = None, heads: Any = None, names: tuple[str, str] = ("layer", "head")
) -> None:
    """Refuse layers or heads out of ``model``'s range before it loads.

    ``layers``, ``heads``: what ``layers=``/``heads=`` accept (None: all, nothing to check).
    ``names``: how the message names them (``("--layer", "--head")`` on the command line).

    Raises
    ------
    OutOfRangeError
        One line naming the model and the allowed range, e.g. ``layer 24 is out of range:
        minilm has 6 layers, valid are 0..5 (or -6..-1)``.
    InvalidInputError
        The same index twice, or not an index (as the loaded model would say).
    """
    if layers is None and heads is None:
        return
    counts = configured_counts(model)
    if counts is None:
        return
    name, n_layers, n_heads = counts
    for sel, size, what, arg in (
        (layers, n_layers, "layer", names[0]),
        (heads, n_heads, "head", names[1]),
    ):
        if sel is not None:
            check_indices(sel, size, what, name=arg, owner=name)


def _from_mapping(cfg: dict) -> tuple[int, int] | None:
    """The counts as :class:`~attntopo.models.AttentionModel` reads them from a config."""
    n_layers = cfg.get("num_hidden_layers") or cfg.get("n_layer")
    n_heads = cfg.get("num_attention_heads") or cfg.get("n_head")
    if isinstance(n_layers, int) and isinstance(n_heads, int) and n_layers > 0 and n_heads > 0:
        return n_layers, n_heads
    return None


def _config_counts(spec: Any) -> tuple[int, int] | None:
    """From ``config.json``: a folder's, or a hub id's when the Hugging Face cache has it
    (never over the network)."""
    if spec.kind == "hub":
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(spec.path, "config.json", revision=spec.revision)
        if not isinstance(found, str):
            return None
        path = Path(found)
    else:
        path = Path(spec.path) / "config.json"
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    return _from_mapping(cfg) if isinstance(cfg, dict) else None


def _gguf_counts(spec: Any) -> tuple[int, int] | None:
    """From a GGUF file's header: its metadata up to the block and head counts."""
    with open(Path(spec.path) / str(spec.gguf_file), "rb") as f:
        if f.read(4) != b"GGUF":
            return None
        version, _tensors, n_kv = struct.unpack("<IQQ", f.read(20))
        if version < 2:  # version 1 counted in 32 bits; such files are rare and old
            return None
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = _string(f)
            (kind,) = struct.unpack("<I", f.read(4))
            meta[key] = _value(f, kind)
            arch = meta.get("general.architecture")
            if arch is not None:
                layers = meta.get(f"{arch}.block_count")
                heads = meta.get(f"{arch}.attention.head_count")
                if layers is not None and heads is not None:
                    return _from_mapping(
                        {"num_hidden_layers": layers, "num_attention_heads": heads}
                    )
    return None


def _string(f: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", f.read(8))
    return f.read(n).decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int) -> Any:
    """One metadata value (an array is skipped: None)."""
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item, n = struct.unpack("<IQ", f.read(12))
        if item in _FIXED:
            f.seek(n * struct.calcsize("<" + _FIXED[item]), os.SEEK_CUR)
        else:
            for _ in range(n):
                _value(f, item)
        return None
    fmt = "<" + _FIXED[kind]
    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
