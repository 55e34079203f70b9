"""The :class:`Attention` container: one text's attention weights, all layers and heads.

Row ``i`` of ``weights[l, h]`` is query token ``i``'s probability distribution over
the key tokens; it sums to 1 (causal models put exact zeros above the diagonal).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from ._validation import check_index, check_indices, check_int
from .errors import InvalidInputError, OutOfRangeError

__all__ = ["Attention", "resolve_index", "resolve_indices"]


#: Layer/head selection (``layers=``, ``heads=``): the shared checks, under their public names.
resolve_index = check_index
resolve_indices = check_indices


@dataclass(frozen=True, eq=False)
class Attention:
    """Attention weights of one text, with its tokens.

    Attributes
    ----------
    weights : ndarray of shape (n_layers, n_heads, n_tokens, n_tokens), float32
        ``weights[l, h, i, j]`` is how much query token ``i`` attends to key token ``j``
        in head ``h`` of layer ``l``.  Every row sums to 1.
    tokens : list of str, length n_tokens
        Tokens exactly as the tokenizer produced them, special tokens included.
    offsets : list of (int, int), length n_tokens
        Character span of each token in :attr:`text` (``(0, 0)`` for special tokens).
    special : ndarray of shape (n_tokens,), bool
        True where the token is a special token ([CLS], [SEP], <s>, …).
    causal : bool
        True for causal (decoder) models: rows never see later tokens.
    model : str
        Model identifier (alias, hub id or folder).
    text : str
        The text the tokens came from.
    token_ids : ndarray of shape (n_tokens,), int64
        Vocabulary ids of the tokens.
    layer_ids, head_ids : tuple of int
        Which layers / heads of the model the first two axes hold (all by default):
        position ``i`` of axis L is the model's layer ``layer_ids[i]``.  Also readable
        as :attr:`layers` / :attr:`heads`, the names results use.
    special_dropped : bool
        True if special tokens were removed and rows renormalized (:meth:`drop_special`).
    """

    weights: np.ndarray
    tokens: list[str]
    offsets: list[tuple[int, int]]
    special: np.ndarray
    causal: bool
    model: str
    text: str = ""
    token_ids: np.ndarray | None = None
    layer_ids: tuple[int, ...] = ()
    head_ids: tuple[int, ...] = ()
    special_dropped: bool = False
    truncated: bool = False
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        w = np.asarray(self.weights)
        if w.ndim != 4 or w.shape[2] != w.shape[3]:
            raise InvalidInputError(
                f"attention weights must have shape (layers, heads, n, n), got {w.shape}"
            )
        n = w.shape[-1]
        if len(self.tokens) != n or len(self.offsets) != n or len(self.special) != n:
            raise InvalidInputError(
                f"{n} tokens in the weights but {len(self.tokens)} tokens, {len(self.offsets)} "
                f"offsets and {len(self.special)} special flags"
            )
        object.__setattr__(self, "weights", np.ascontiguousarray(w, dtype=np.float32))
        object.__setattr__(self, "special", np.asarray(self.special, dtype=bool))
        object.__setattr__(self, "offsets", [(int(a), int(b)) for a, b in self.offsets])
        object.__setattr__(self, "tokens", list(self.tokens))
        if self.token_ids is not None:
            object.__setattr__(self, "token_ids", np.asarray(self.token_ids, dtype=np.int64))
        if not self.layer_ids:
            object.__setattr__(self, "layer_ids", tuple(range(w.shape[0])))
        if not self.head_ids:
            object.__setattr__(self, "head_ids", tuple(range(w.shape[1])))
        if len(self.layer_ids) != w.shape[0] or len(self.head_ids) != w.shape[1]:
            raise InvalidInputError("layer_ids/head_ids do not match the weights' shape")

    # ------------------------------------------------------------------ shape
    @property
    def layers(self) -> tuple[int, ...]:
        """The model's layer numbers held, one per position of axis L (= :attr:`layer_ids`)."""
        return self.layer_ids

    @property
    def heads(self) -> tuple[int, ...]:
        """The model's head numbers held, one per position of axis H (= :attr:`head_ids`)."""
        return self.head_ids

    @property
    def n_layers(self) -> int:
        """Number of layers held (first axis of :attr:`weights`)."""
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        """Number of heads per layer held (second axis of :attr:`weights`)."""
        return self.weights.shape[1]

    @property
    def n_tokens(self) -> int:
        """Number of tokens ``n``."""
        return self.weights.shape[-1]

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self.weights.shape  # type: ignore[return-value]

    def __len__(self) -> int:
        return self.n_tokens

    @property
    def labels(self) -> list[str]:
        """Human-readable token labels: the text each token covers, or the special token itself.

        Byte-level markers (``Ġ``, ``▁``) and WordPiece ``##`` are shown as plain text.
        """
        out = []
        for tok, (a, b), sp in zip(self.tokens, self.offsets, self.special):
            if not sp and self.text and b > a:
                s = self.text[a:b].strip()
                out.append(s if s else tok)
            else:
                out.append(tok)
        return out

    # --------------------------------------------------------------- indexing
    def __getitem__(self, key) -> np.ndarray:
        """``att[layer, head]`` → (n, n) array; ``att[layer]`` → (n_heads, n, n).

        Indices are positions in this container (0-based, negatives count from the end).
        """
        if isinstance(key, tuple):
            if len(key) != 2:
                raise OutOfRangeError("index as att[layer] or att[layer, head]")
            li = resolve_index(key[0], self.n_layers, "layer")
            hi = resolve_index(key[1], self.n_heads, "head")
            return self.weights[li, hi]
        return self.weights[resolve_index(key, self.n_layers, "layer")]

    def select(self, layers=None, heads=None) -> "Attention":
        """Keep only some layers and/or heads.

        ``layers``, ``heads``: ``None`` (all), an int, a sequence of ints or a slice of
        *positions in this container* (negatives count from the end); for a full
        container positions are the model's numbers.
        """
        li = resolve_indices(layers, self.n_layers, "layer")
        hi = resolve_indices(heads, self.n_heads, "head")
        w = self.weights[np.ix_(li, hi)]
        return replace(
            self,
            weights=w,
            layer_ids=tuple(self.layer_ids[i] for i in li),
            head_ids=tuple(self.head_ids[i] for i in hi),
        )

    # ------------------------------------------------------------ token edits
    def subset_tokens(self, keep: Sequence[int] | np.ndarray, *, renormalize: bool = True) -> "Attention":
        """Keep only the given token positions (rows and columns), renormalizing rows to sum to 1.

        Raises :class:`~attntopo.errors.InvalidInputError` if a kept row had all its mass on
        removed tokens (it cannot be renormalized).
        """
        keep = np.asarray(keep)
        if keep.dtype == bool:
            keep = np.flatnonzero(keep)
        if keep.size == 0:
            raise InvalidInputError("no tokens left: keep at least one token")
        w = self.weights[:, :, keep][:, :, :, keep].astype(np.float64)
        if renormalize:
            s = w.sum(axis=-1, keepdims=True)
            if np.any(s <= 0):
                raise InvalidInputError(
                    "a kept token attends only to removed tokens, so its row cannot be renormalized"
                )
            w = w / s
        idx = keep.tolist()
        return replace(
            self,
            weights=w.astype(np.float32),
            tokens=[self.tokens[i] for i in idx],
            offsets=[self.offsets[i] for i in idx],
            special=self.special[keep],
            token_ids=None if self.token_ids is None else self.token_ids[keep],
        )

    def drop_special(self) -> "Attention":
        """Remove special-token rows and columns and renormalize every row to sum to 1.

        The mass a token gave to special tokens (often a large "sink" share on [CLS]/[SEP])
        is redistributed proportionally over the remaining tokens:
        ``w'[i, j] = w[i, j] / sum_{k not special} w[i, k]``.
        """
        if not self.special.any():
            return replace(self, special_dropped=True)
        out = self.subset_tokens(~self.special)
        return replace(out, special_dropped=True)

    def prefix(self, t: int) -> "Attention":
        """The first ``t`` tokens (rows and columns), rows renormalized.

        For causal models this is exactly the attention of the prefix (rows never see
        the future, so no renormalization is needed and none changes anything).
        """
        t = check_int(t, "prefix length", lo=1, hi=self.n_tokens, error=OutOfRangeError)
        return self.subset_tokens(np.arange(t))

    def __repr__(self) -> str:
        kind = "causal" if self.causal else "bidirectional"
        return (
            f"Attention(model={self.model!r}, layers={self.n_layers}, heads={self.n_heads}, "
            f"tokens={self.n_tokens}, {kind})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Attention):
            return NotImplemented
        return (
            np.array_equal(self.weights, other.weights)
            and self.tokens == other.tokens
            and self.offsets == other.offsets
            and np.array_equal(self.special, other.special)
            and self.causal == other.causal
            and self.model == other.model
            and self.text == other.text
            and self.layer_ids == other.layer_ids
            and self.head_ids == other.head_ids
            and self.special_dropped == other.special_dropped
            and (
                (self.token_ids is None and other.token_ids is None)
                or (
                    self.token_ids is not None
                    and other.token_ids is not None
                    and np.array_equal(self.token_ids, other.token_ids)
                )
            )
        )

    __hash__ = None  # type: ignore[assignment]
