"""Running a model with compressed attention, and what that does to its output.

The model runs with an attention function of its own kind (``eager``) registered under another
name (``transformers.AttentionInterface``): it computes the layer's attention exactly as eager
attention does, replaces the chosen heads' rows (:mod:`.grouping`), and multiplies the new rows
with the values; everything after that layer sees the modified attention.  Clustering happens on
the attention the pass actually produces, so a layer sees what the compressed layers before it
did.  The model's own attention setting is put back afterwards, also after an error.

Effect measures, against the same model without compression:

* bidirectional models (MiniLM): cosine between the sentence embeddings (mean of the last hidden
  states over the tokens, the pooling sentence-transformers uses for all-MiniLM-L6-v2);
* causal models (SmolLM2): the mean over positions of ``KL(p || p̃)`` between the next-token
  distributions, and the perplexity of the text's own next tokens before and after.
"""

from __future__ import annotations

import contextvars
import inspect
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping, Sequence

import numpy as np

from .._validation import check_choice, check_int, check_number, check_texts
from ..analyses.building import Columns, Result, read_array
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError, ResultFormatError
from ..io import json_safe
from ..models import normalize_rows
from .grouping import METHODS, REPRESENTATIVES, baseline_labels, persistence_labels, replace_rows

__all__ = ["Compression", "compress", "compressed_attention"]

_NAME = "attntopo_compress"
_ACTIVE: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "attntopo_compress", default=None
)


def _attention(module, query, key, value, attention_mask, **kwargs):
    """Eager attention of ``module``'s own model family, with the active compression applied."""
    import torch

    eager = inspect.getmodule(type(module)).eager_attention_forward
    out, w = eager(module, query, key, value, attention_mask, **kwargs)
    cfg = _ACTIVE.get()
    layer = getattr(module, "layer_idx", None)
    if cfg is None or layer not in cfg["targets"]:
        return out, w
    heads = cfg["targets"][layer]
    H = w.shape[1]
    groups = H // value.shape[1]
    V = value.repeat_interleave(groups, dim=1) if groups > 1 else value
    Kr = key.repeat_interleave(groups, dim=1) if groups > 1 else key
    from ..distances import row_distances

    # rows renormalized in float64 (a bfloat16 row sums to 1 only within ~2^-8)
    W = normalize_rows(w.detach(), what=f"attention of layer {layer}").double().cpu().numpy()
    # what is not replaced stays the model's own row, bit for bit (so scale 0 is the model itself)
    W0 = w.detach().double().cpu().numpy()
    new = W0.copy()
    for b in range(W.shape[0]):
        D = row_distances(W[b, heads])  # (len(heads), n, n)
        for j, h in enumerate(heads):
            labels, eps = persistence_labels(D[j], cfg["scale"])
            k = int(labels.max()) + 1
            if cfg["method"] != "persistence":
                labels = baseline_labels(
                    cfg["method"],
                    k,
                    P=W[b, h],
                    K=Kr[b, h].double().cpu().numpy(),
                    rng=cfg["rng"],
                    seed=cfg["seed"],
                )
            rows = replace_rows(W[b, h], labels, D[j], cfg["representative"], cfg["causal"])
            alone = np.bincount(labels, minlength=int(labels.max()) + 1)[labels] == 1
            new[b, h] = np.where(alone[:, None], W0[b, h], rows)
            cfg["record"].append((layer, h, W.shape[-1], int(labels.max()) + 1, k, eps))
    w2 = torch.from_numpy(new).to(w.dtype).to(w.device)
    out2 = torch.matmul(w2, V).transpose(1, 2).contiguous()
    return out2, w2


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    if _NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(_NAME, _attention)
        AttentionMaskInterface.register(_NAME, ALL_MASK_ATTENTION_FUNCTIONS["eager"])


@contextmanager
def compressed_attention(model: Any, cfg: dict) -> Iterator[None]:
    """While active, ``model`` (an :class:`~attntopo.models.AttentionModel`)
    compresses as ``cfg`` says."""
    _register()
    hf = model.hf_model
    old = hf.config._attn_implementation
    token = _ACTIVE.set(cfg)
    try:
        hf.set_attn_implementation(_NAME)
        yield
    finally:
        hf.set_attn_implementation(old)
        _ACTIVE.reset(token)


def _forward(model: Any, ids: list[int]):
    import torch

    t = torch.tensor([ids], dtype=torch.long, device=model.device)
    with torch.inference_mode():
        out = model.hf_model(
            input_ids=t,
            attention_mask=torch.ones_like(t),
            output_hidden_states=True,
            **model.forward_kwargs,
        )
    return out


def _logits(model: Any, out) -> Any:
    """Next-token logits ``(n, vocabulary)`` in float64: the model's own, or (a base model loaded
    without its head, as attntopo loads SmolLM2) the last hidden states times the tied input
    embeddings (``tie_word_embeddings``: the head *is* the embedding matrix)."""
    logits = getattr(out, "logits", None)
    if logits is not None:
        return logits[0].double()
    hf = model.hf_model
    if not getattr(hf.config, "tie_word_embeddings", False):
        raise InvalidInputError(
            f"{model.name} was loaded without its language-model head and does not tie it to "
            f"its input embeddings: no next-token distribution to compare"
        )
    return out.last_hidden_state[0].double() @ hf.get_input_embeddings().weight.double().T


def _effect(model: Any, ids: list[int], base, comp) -> dict:
    import torch

    if not model.causal:
        a = base.hidden_states[-1][0].double().mean(0)
        b = comp.hidden_states[-1][0].double().mean(0)
        return {"cosine": float(torch.nn.functional.cosine_similarity(a, b, dim=0))}
    lp = torch.log_softmax(_logits(model, base), -1)
    lq = torch.log_softmax(_logits(model, comp), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1)  # (n,)
    nxt = torch.tensor(ids[1:], device=lp.device)  # the logits' device (a model on a GPU)
    nll_p = -lp[:-1].gather(1, nxt[:, None]).mean()
    nll_q = -lq[:-1].gather(1, nxt[:, None]).mean()
    return {
        "kl": float(kl.mean()),
        "perplexity": float(nll_p.exp()),
        "perplexity_compressed": float(nll_q.exp()),
    }


def _check_scale(scale: Any) -> Any:
    if scale == "gap":
        return "gap"
    return float(check_number(scale, "scale", lo=0, hint="a JS distance in [0, 1], or 'gap'"))


# ---------------------------------------------------------------------- result
@dataclass(eq=False)
class Compression(Result):
    """One text through a model with chosen heads' attention rows grouped and replaced.

    Attributes
    ----------
    model : str
    text : str
    tokens : list of str
        Token labels (special tokens included).
    causal : bool
    method, representative : str
    scale : float or "gap"
    heads : ndarray of shape (m, 2), int
        ``(layer, head)`` of every compressed head, in the order they ran.
    n_tokens : int
    clusters : ndarray of shape (m,), int
        Distinct rows each head was left with.
    scales : ndarray of shape (m,)
        The JS scale of each head's persistence clusters (``scale``, or the head's gap scale).
    effect : dict
        ``cosine`` (bidirectional) or ``kl``, ``perplexity``, ``perplexity_compressed`` (causal).
    """

    kind: ClassVar[str] = "compression"

    model: str
    text: str
    tokens: list[str]
    causal: bool
    method: str
    representative: str
    scale: Any
    heads: np.ndarray
    n_tokens: int
    clusters: np.ndarray
    scales: np.ndarray
    effect: dict
    provenance: dict = field(default_factory=dict)

    @property
    def compression(self) -> float:
        """Mean over the compressed heads of (distinct rows / n): 1 = nothing merged."""
        return float(np.mean(self.clusters) / self.n_tokens) if self.clusters.size else 1.0

    def summary(self) -> Columns:
        """One row per compressed head: ``layer``, ``head``, ``clusters``, ``ratio``, ``scale``."""
        return Columns(
            {
                "layer": self.heads[:, 0],
                "head": self.heads[:, 1],
                "clusters": self.clusters,
                "ratio": self.clusters / self.n_tokens,
                "scale": self.scales,
            }
        )

    def to_dict(self) -> dict:
        return json_safe(
            {
                "kind": self.kind,
                "model": self.model,
                "text": self.text,
                "tokens": self.tokens,
                "causal": self.causal,
                "method": self.method,
                "representative": self.representative,
                "scale": self.scale,
                "n_tokens": self.n_tokens,
                "compression": self.compression,
                "effect": self.effect,
                "heads": self.summary().rows(),
                "provenance": self.provenance,
            }
        )

    def _payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {
            k: getattr(self, k)
            for k in (
                "model",
                "text",
                "tokens",
                "causal",
                "method",
                "representative",
                "scale",
                "n_tokens",
                "effect",
                "provenance",
            )
        }
        return meta, {"heads": self.heads, "clusters": self.clusters, "scales": self.scales}

    @classmethod
    def _from_payload(cls, meta: dict, arrays: Mapping[str, np.ndarray]) -> "Compression":
        heads = read_array(arrays, "heads", kind="i", ndim=2, nonneg=True)
        m = heads.shape[0]
        if heads.shape[1] != 2:
            raise ResultFormatError(f"array 'heads' must have shape (m, 2), got {heads.shape}")
        clusters = read_array(arrays, "clusters", kind="i", shape=(m,), nonneg=True)
        scales = read_array(arrays, "scales", kind="f", shape=(m,), finite=True, nonneg=True)
        if meta.get("method") not in METHODS or meta.get("representative") not in REPRESENTATIVES:
            raise ResultFormatError(
                f"unknown method {meta.get('method')!r} or representative "
                f"{meta.get('representative')!r}"
            )
        return cls(
            model=str(meta["model"]),
            text=str(meta["text"]),
            tokens=list(meta["tokens"]),
            causal=bool(meta["causal"]),
            method=meta["method"],
            representative=meta["representative"],
            scale=meta["scale"],
            heads=heads,
            n_tokens=int(meta["n_tokens"]),
            clusters=clusters,
            scales=scales,
            effect=dict(meta["effect"]),
            provenance=dict(meta.get("provenance") or {}),
        )

    def __repr__(self) -> str:
        return (
            f"Compression({self.model!r}, {self.method}/{self.representative}, "
            f"scale={self.scale!r}, heads={len(self.clusters)}, "
            f"compression={self.compression:.3f}, effect={self.effect})"
        )


# ---------------------------------------------------------------------- compress
def _targets(m: Any, layers: Any, heads: Any) -> dict[int, list[int]]:
    from .._validation import check_int

    def pick(values, size, what):
        if values is None:
            return list(range(size))
        values = [values] if isinstance(values, (int, np.integer)) else list(values)
        if not values:
            raise InvalidInputError(f"{what} must name at least one index")
        return sorted({check_int(v, what, lo=-size, hi=size - 1) % size for v in values})

    from ..errors import OutOfRangeError

    try:
        lay = pick(layers, m.n_layers, "layers")
        hd = pick(heads, m.n_heads, "heads")
    except InvalidInputError as e:
        raise OutOfRangeError(
            f"{e} ({m.name} has {m.n_layers} layers × {m.n_heads} heads, 0-based)"
        ) from None
    return {layer: hd for layer in lay}


def compress(
    text: str,
    model: Any = DEFAULT_MODEL,
    *,
    layers: Any = None,
    heads: Any = None,
    scale: Any = "gap",
    method: str = "persistence",
    representative: str = "barycenter",
    seed: int = 0,
    truncate: bool = False,
) -> Compression:
    """Run ``text`` through ``model`` with the chosen heads' attention rows grouped and replaced.

    Parameters
    ----------
    text : str
    model : str or AttentionModel
        ``"minilm"`` (default), ``"smollm2"``, a Hugging Face id or folder, or a loaded model.
        The argument order is ``analyze``'s: the text first.
    layers, heads : int or sequence of int, optional
        The heads to compress: every ``head`` of every ``layer`` (default: all).
    scale : float or "gap"
        Persistence clusters at this JS distance, or per head at its largest H0 gap.
    method : {"persistence", "random", "kmeans", "tome"}
        How rows are grouped; the baselines use the persistence clusters' number per head.
    representative : {"barycenter", "medoid"}
    seed : int
        For ``random`` and ``kmeans``; ``>= 0``.

    Returns
    -------
    Compression
        Per head the number of distinct rows left, and the effect on the output.

    Raises
    ------
    InvalidInputError, OutOfRangeError, EmptyTextError, TextTooLongError
    """
    from ..analyses.building import make_provenance
    from ..attention import token_labels
    from ..models import AttentionModel, check_selection, load_model

    if not isinstance(text, str):
        raise InvalidInputError(
            f"compress(text, model): text must be a string, got "
            f"{type(text).__name__} (the text comes first, as in analyze)"
        )
    check_choice(method, "method", METHODS)
    check_choice(representative, "representative", REPRESENTATIVES)
    scale = _check_scale(scale)
    seed = check_int(seed, "seed", lo=0)  # numpy's generators take no negative seed
    check_selection(model, layers=layers, heads=heads)  # before the weights load
    m = (
        model if isinstance(model, AttentionModel) else load_model(model)
    )  # load_model refuses the rest
    targets = _targets(m, layers, heads)
    enc = m.tokenize(text, truncate=truncate)
    cfg = {
        "targets": targets,
        "scale": scale,
        "method": method,
        "representative": representative,
        "causal": bool(m.causal),
        "seed": seed,
        "rng": np.random.default_rng(seed),
        "record": [],
    }
    with m._lock:
        base = _forward(m, enc.ids)
        with compressed_attention(m, cfg):
            comp = _forward(m, enc.ids)
    rec = cfg["record"]
    labels, _ = token_labels(enc.tokens, enc.offsets, enc.special, text=enc.text)
    return Compression(
        model=m.name,
        text=text,
        tokens=labels,
        causal=bool(m.causal),
        method=method,
        representative=representative,
        scale=scale,
        heads=np.array([[r[0], r[1]] for r in rec], dtype=np.int64).reshape(-1, 2),
        n_tokens=len(enc.ids),
        clusters=np.array([r[3] for r in rec], dtype=np.int64),
        scales=np.array([r[5] for r in rec], dtype=np.float64),
        effect=_effect(m, enc.ids, base, comp),
        provenance=make_provenance(
            m.info(),
            settings={
                "method": method,
                "representative": representative,
                "scale": scale,
                "seed": seed,
            },
        ),
    )


def compression_table(
    texts: Sequence[str],
    model: Any = DEFAULT_MODEL,
    *,
    scales: Sequence[Any],
    methods: Sequence[str] = METHODS,
    representative: str = "barycenter",
    layers: Any = None,
    heads: Any = None,
    seed: int = 0,
) -> Columns:
    """Mean compression and effect over ``texts`` for every method and scale: one row each.

    Columns: ``method``, ``scale``, ``compression`` (mean distinct rows / n), and ``cosine`` or
    ``kl``, ``perplexity_ratio`` (compressed / unmodified), each a mean over the texts.  The
    texts come first, as in every analysis.
    """
    texts = check_texts(texts)
    rows: list[dict] = []
    for scale in scales:
        for method in methods:
            res = [
                compress(
                    t,
                    model,
                    layers=layers,
                    heads=heads,
                    scale=scale,
                    method=method,
                    representative=representative,
                    seed=seed,
                )
                for t in texts
            ]
            row = {
                "method": method,
                "scale": str(scale),
                "compression": float(np.mean([r.compression for r in res])),
            }
            if res[0].causal:
                row["kl"] = float(np.mean([r.effect["kl"] for r in res]))
                row["perplexity_ratio"] = float(
                    np.mean(
                        [r.effect["perplexity_compressed"] / r.effect["perplexity"] for r in res]
                    )
                )
            else:
                row["cosine"] = float(np.mean([r.effect["cosine"] for r in res]))
            rows.append(row)
    keys = list(rows[0]) if rows else ["method", "scale", "compression"]
    return Columns({k: np.array([r[k] for r in rows]) for k in keys})
