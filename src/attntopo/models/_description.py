"""What a model is without its weights: its tokenizer (with offsets and truncation) and its
configuration's shape and limits (:class:`ModelDescription`, :class:`Encoding`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .._validation import check_bool, check_unicode
from ..errors import (
    EmptyTextError,
    InvalidInputError,
    ModelLoadError,
    TextTooLongError,
    UnknownTokensWarning,
    user_stacklevel,
)
from .specs import ModelSpec

__all__ = ["Encoding", "ModelDescription"]

#: tokens beyond those kept that a prefix must give before it stands for the whole text
#: (:meth:`ModelDescription._truncation_prefix`): the tokens its cut may change are past them
_PREFIX_MARGIN = 16


@dataclass(frozen=True)
class Encoding:
    """One tokenized text: ids, token strings, character offsets and special-token mask."""

    text: str
    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    special: list[bool]
    truncated: bool


class ModelDescription:
    """What a model is, without its weights: its tokenizer, its configuration's shape and limits.

    :func:`describe_model` makes one from the files a model name resolves to (a corpus
    driver on Ray needs no more: its actors load the weights); :class:`AttentionModel` is
    one with the weights loaded.  Do not construct directly.

    Attributes
    ----------
    name, source, device, dtype, n_layers, n_heads, n_kv_heads, max_length, tokenizer, config
        As :class:`AttentionModel`'s.
    causal : bool or None
        From the configuration's model type or architectures (None when they do not tell);
        :class:`AttentionModel` measures it on a probe instead.
    """

    def __init__(
        self,
        spec: ModelSpec,
        config,
        tokenizer,
        source: str,
        device: str,
        dtype: str,
        *,
        architecture: str,
        owned: bool = True,
    ):
        from .describe import causal_from_config

        self.spec = spec
        self.name = spec.name
        self.tokenizer = tokenizer
        self.source = source
        self.device = device
        self.dtype = dtype
        cfg = config
        self.config = cfg
        self.architecture = architecture
        self.model_type = getattr(cfg, "model_type", "unknown")
        n_layers = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", None)
        n_heads = getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
        if not n_layers or not n_heads:
            raise ModelLoadError(
                f"{self.name} ({self.model_type}) has no attention heads in its config, so it "
                "gives no attention weights; attntopo needs a transformer with attention"
            )
        self.n_layers, self.n_heads = int(n_layers), int(n_heads)
        self.n_kv_heads = int(getattr(cfg, "num_key_value_heads", None) or self.n_heads)
        limits = [
            getattr(cfg, k, None)
            for k in ("max_position_embeddings", "n_positions", "max_sequence_length")
        ]
        tmax = getattr(tokenizer, "model_max_length", None)
        if isinstance(tmax, int) and tmax < 10**7:
            limits.append(tmax)
        limits = [int(x) for x in limits if isinstance(x, (int, np.integer)) and x > 0]
        self.max_length = min(limits) if limits else 512
        # BERT-style models add [CLS]...[SEP]; offsets are needed for labels and matching
        self._fast = bool(getattr(tokenizer, "is_fast", False))
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
        tokenizer.padding_side = "right"
        if owned and hasattr(cfg, "use_cache"):
            cfg.use_cache = False  # no key/value cache: one pass, attention only
        self.causal: bool | None = causal_from_config(
            cfg.to_dict() if hasattr(cfg, "to_dict") else {}
        )

    # ------------------------------------------------------------------ info
    def __repr__(self) -> str:
        kind = {True: "causal", False: "bidirectional"}.get(self.causal, "causal unknown")
        return (
            f"{type(self).__name__}({self.name!r}, {self.model_type}, {self.n_layers} layers x "
            f"{self.n_heads} heads, {kind}, max {self.max_length} tokens)"
        )

    def info(self) -> dict:
        """Plain-data description (for CLIs, saved results and the web API)."""
        return {
            "name": self.name,
            "kind": self.spec.kind,
            "source": self.source,
            "architecture": self.architecture,
            "model_type": self.model_type,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_kv_heads": self.n_kv_heads,
            "causal": self.causal,
            "max_length": self.max_length,
            "dtype": self.dtype,
            "device": self.device,
        }

    # -------------------------------------------------------------- tokenize
    def _check_text(self, text) -> str:
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise EmptyTextError("text is empty or only whitespace: give at least one word")
        return check_unicode(text)

    def tokenize(self, text: str, *, truncate: bool = False) -> Encoding:
        """Tokenize one text exactly as :meth:`~attntopo.models.AttentionModel.attention` does
        (special tokens included).

        Raises :class:`~attntopo.errors.TextTooLongError` if the text has more tokens than
        :attr:`max_length`, unless ``truncate=True`` (then the tail is cut).
        """
        return self._encode([text], truncate=check_bool(truncate, "truncate"))[0]

    def _encode(self, texts: Sequence[str], *, truncate: bool) -> list[Encoding]:
        texts = [self._check_text(t) for t in texts]
        tok = self.tokenizer
        kwargs = dict(
            add_special_tokens=True,
            return_special_tokens_mask=True,
            return_attention_mask=False,
        )
        if self._fast:
            kwargs["return_offsets_mapping"] = True
        # a text to be truncated is tokenized as far as the tokens kept reach, not whole (a 5 MB
        # line cut to 512 tokens peaked at 1.8 GB): the offsets index the text all the same
        heads = [self._truncation_prefix(t) for t in texts] if truncate else list(texts)
        # verbose=False: attntopo checks the length itself (one typed error, or truncation), so
        # the tokenizer's own "Token indices sequence length is longer than ..." line is noise
        enc = tok(heads, truncation=False, verbose=False, **kwargs)
        unk_id = tok.unk_token_id
        unknown: list[str] = []
        out = []
        for i, text in enumerate(texts):
            ids = list(enc["input_ids"][i])
            special = [bool(s) for s in enc["special_tokens_mask"][i]]
            offsets = (
                [tuple(int(x) for x in o) for o in enc["offset_mapping"][i]]
                if self._fast
                else [(0, 0)] * len(ids)
            )
            truncated = False
            if len(ids) > self.max_length:
                if not truncate:
                    raise TextTooLongError(
                        n_tokens=len(ids), limit=self.max_length, model=self.name
                    )
                # keep trailing special tokens (e.g. [SEP]) and cut the content
                n_tail = 0
                while n_tail < len(ids) and special[len(ids) - 1 - n_tail]:
                    n_tail += 1
                keep = self.max_length - n_tail
                sl = list(range(keep)) + list(range(len(ids) - n_tail, len(ids)))
                ids = [ids[k] for k in sl]
                special = [special[k] for k in sl]
                offsets = [offsets[k] for k in sl]
                truncated = True
            for k, sp in enumerate(special):
                if sp:
                    offsets[k] = (0, 0)
            if unk_id is not None:
                unknown += [
                    text[a:b]
                    for x, sp, (a, b) in zip(ids, special, offsets)
                    if x == unk_id and not sp
                ]
            tokens = tok.convert_ids_to_tokens(ids)
            out.append(Encoding(text, ids, list(tokens), offsets, special, truncated))
        if unknown:
            self._warn_unknown(unknown)
        return out

    def _truncation_prefix(self, text: str) -> str:
        """The shortest prefix of ``text`` tried whose first :attr:`max_length` token ids are
        those of the whole text, or ``text`` itself.

        Tokenizers decide a token from the characters around it (a word, a run of spaces),
        so a prefix changes only the tokens near its end.  A prefix of ``L`` characters is
        taken when it gives :data:`_PREFIX_MARGIN` tokens more than the model keeps and its
        first :attr:`max_length` ids are those of a prefix half as long again (the cut moved,
        the ids kept did not); else ``L`` grows fourfold, up to the whole text.  ``L`` starts
        at 8 characters per token kept (English averages about 4).
        """
        n = int(self.max_length)
        size = 8 * n + 1024
        while 2 * size < len(text):
            ids = self._ids(text[:size])
            if len(ids) > n + _PREFIX_MARGIN and self._ids(text[: size + size // 2])[:n] == ids[:n]:
                return text[:size]
            size *= 4
        return text

    def _ids(self, text: str) -> list[int]:
        """The token ids of ``text``, special tokens included."""
        return list(
            self.tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)[
                "input_ids"
            ]
        )

    def _warn_unknown(self, pieces: list[str]) -> None:
        """One :class:`~attntopo.errors.UnknownTokensWarning` for the unknown tokens of a call."""
        unk = str(self.tokenizer.unk_token)
        examples = list(dict.fromkeys(p for p in pieces if p))[:5]
        shown = ", ".join(repr(p) for p in examples)
        what = f" ({shown})" if shown else ""
        n = len(pieces)
        warnings.warn(
            UnknownTokensWarning(
                f"{n} token{'s' if n != 1 else ''} of the text became {unk}{what}: {self.name}'s "
                f"vocabulary lacks {'them' if n != 1 else 'it'}, so the model saw {unk} there "
                f"(Attention.labels shows {unk}, Attention.sources the text)",
                count=n,
                examples=examples,
                unk_token=unk,
                model=self.name,
            ),
            stacklevel=user_stacklevel(),
        )
