"""Describe packaged models without loading weights (config.json, or a GGUF header).

Used by ``attntopo models`` and the explorer's ``GET /api/models``: both must answer in
milliseconds, before (or without) any model is loaded.
"""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

from ..errors import AttntopoError

__all__ = ["describe_alias", "gguf_metadata", "causal_from_config"]


def _one_line(msg: str) -> str:
    return re.sub(r"\s*\n\s*", " ", str(msg)).strip()


_DECODER_TYPES = {
    "llama",
    "mistral",
    "mixtral",
    "gpt2",
    "gpt_neo",
    "gpt_neox",
    "gptj",
    "qwen2",
    "qwen3",
    "phi",
    "phi3",
    "gemma",
    "gemma2",
    "gemma3",
    "falcon",
    "opt",
    "bloom",
    "olmo",
    "olmo2",
    "smollm3",
    "starcoder2",
    "stablelm",
    "granite",
}
_ENCODER_TYPES = {
    "bert",
    "roberta",
    "distilbert",
    "albert",
    "electra",
    "deberta",
    "deberta-v2",
    "xlm-roberta",
    "mpnet",
    "camembert",
    "modernbert",
    "nomic-bert",
    "jina-bert-v2",
}


def causal_from_config(cfg: dict) -> bool | None:
    if cfg.get("is_decoder"):
        return True
    archs = cfg.get("architectures") or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return True
    mt = str(cfg.get("model_type", "")).lower()
    if mt in _DECODER_TYPES:
        return True
    if mt in _ENCODER_TYPES:
        return False
    return None


_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}


def gguf_metadata(path: Path, wanted: set[str]) -> dict:
    """Read a few key/value pairs from a GGUF header (stops as soon as all are found).

    Reads only the header, never tensor data; about a millisecond for the keys that come
    before the tokenizer vocabulary.
    """
    found: dict = {}
    with open(path, "rb") as f:

        def read(fmt: str):
            size = struct.calcsize(fmt)
            b = f.read(size)
            if len(b) != size:
                raise ValueError("truncated GGUF header")
            return struct.unpack(fmt, b)[0]

        def read_str() -> str:
            n = read("<Q")
            return f.read(n).decode("utf-8", "replace")

        def read_value(t: int, keep: bool):
            if t in _GGUF_SCALARS:
                return read(_GGUF_SCALARS[t])
            if t == 8:
                return read_str()
            if t == 9:
                et, n = read("<I"), read("<Q")
                if et in _GGUF_SCALARS and not keep:
                    f.seek(n * struct.calcsize(_GGUF_SCALARS[et]), os.SEEK_CUR)
                    return None
                return [read_value(et, keep) for _ in range(n)]
            raise ValueError(f"unknown GGUF value type {t}")

        if f.read(4) != b"GGUF":
            raise ValueError("not a GGUF file")
        version = read("<I")
        if version < 2:
            raise ValueError(f"GGUF version {version} is not supported")
        read("<Q")  # tensor count
        n_kv = read("<Q")
        for _ in range(n_kv):
            key = read_str()
            t = read("<I")
            value = read_value(t, key in wanted)
            if key in wanted:
                found[key] = value
                if wanted <= set(found):
                    break
    return found


def describe_alias(name: str) -> dict:
    """What ``attntopo models`` shows for one alias, without loading any weights."""
    from .loading import cache_dir
    from .specs import ALIASES, resolve_spec

    alias = ALIASES[name]
    row: dict = {
        "alias": name,
        "description": alias.description,
        "installed": False,
        "n_layers": None,
        "n_heads": None,
        "n_kv_heads": None,
        "causal": None,
        "source": None,
        "format": "gguf" if alias.gguf_file else "safetensors",
        "converted": None,
        "note": "",
    }
    try:
        spec = resolve_spec(name)
    except AttntopoError as e:
        row["note"] = _one_line(str(e))
        return row
    row["installed"] = True
    cfg: dict | None = None
    if spec.gguf_file is None:
        row["source"] = spec.path
        try:
            cfg = json.loads((Path(spec.path) / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            row["note"] = "config.json unreadable"
    else:
        src = Path(spec.path) / spec.gguf_file
        row["source"] = str(src)
        row["converted"] = False
        root = cache_dir() / "models"
        for marker in sorted(root.glob(f"{src.stem}-*/attntopo-conversion.json")):
            try:
                info = json.loads(marker.read_text(encoding="utf-8"))
                if Path(info.get("source", "")) == src:
                    row["converted"] = str(marker.parent)
                    cfg = json.loads((marker.parent / "config.json").read_text(encoding="utf-8"))
                    break
            except (OSError, ValueError):
                continue
        if cfg is None:
            try:
                meta = gguf_metadata(src, {"general.architecture"})
                arch = meta.get("general.architecture", "")
                keys = {
                    f"{arch}.block_count",
                    f"{arch}.attention.head_count",
                    f"{arch}.attention.head_count_kv",
                }
                meta.update(gguf_metadata(src, keys))
                cfg = {
                    "model_type": arch,
                    "num_hidden_layers": meta.get(f"{arch}.block_count"),
                    "num_attention_heads": meta.get(f"{arch}.attention.head_count"),
                    "num_key_value_heads": meta.get(f"{arch}.attention.head_count_kv"),
                }
            except (OSError, ValueError, struct.error) as e:
                row["note"] = f"GGUF header unreadable: {e}"
        if not row["converted"]:
            row["note"] = (
                row["note"] or "not converted yet: the first load converts the GGUF once (~30 s)"
            )
    if cfg:
        nl = cfg.get("num_hidden_layers") or cfg.get("n_layer")
        nh = cfg.get("num_attention_heads") or cfg.get("n_head")
        row["n_layers"] = int(nl) if nl else None
        row["n_heads"] = int(nh) if nh else None
        kv = cfg.get("num_key_value_heads")
        row["n_kv_heads"] = int(kv) if kv else row["n_heads"]
        row["causal"] = causal_from_config(cfg)
    return row
