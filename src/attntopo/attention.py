"""The :class:`Attention` container: one text's attention weights, all layers and heads.

Row ``i`` of ``weights[l, h]`` is query token ``i``'s probability distribution over
the key tokens; it sums to 1 (causal models put exact zeros above the diagonal).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Sequence

import numpy as np

from ._validation import check_bool, check_index, check_indices, check_int
from .errors import InvalidInputError, OutOfRangeError

__all__ = [
    "Attention",
    "resolve_index",
    "resolve_indices",
    "token_labels",
    "SPACE_MARK",
    "NEWLINE_MARK",
    "TAB_MARK",
]


#: Layer/head selection (``layers=``, ``heads=``): the shared checks, under their public names.
resolve_index = check_index
resolve_indices = check_indices


# ------------------------------------------------------------------ token labels
#: Shown for a space at either end of a token's text (``" world"`` → ``"·world"``).
SPACE_MARK = "·"
#: Shown for a line break (``"\n"``, ``"\r\n"``, ``"\r"``).
NEWLINE_MARK = "↵"
#: Shown for a tab.
TAB_MARK = "⇥"
#: A UTF-8 character is at most 4 bytes;
#: a run of byte pieces is joined over at most this many tokens.
_MAX_PIECES = 8


@lru_cache(maxsize=1)
def _byte_decoder():
    """The byte-level BPE decoder of the ``tokenizers`` library (GPT-2, Llama 3, SmolLM2, …)."""
    from tokenizers import decoders

    return decoders.ByteLevel()


@lru_cache(maxsize=1)
def _byte_alphabet() -> frozenset[str]:
    """The 256 characters byte-level BPE spells bytes with (``tokenizers``' own table)."""
    from tokenizers import pre_tokenizers

    return frozenset(pre_tokenizers.ByteLevel.alphabet())


def _visible(s: str) -> str:
    """Make whitespace visible: line breaks ↵, tabs ⇥, spaces at either end ·."""
    s = (
        s.replace("\r\n", "\n")
        .replace("\r", "\n")
        .replace("\n", NEWLINE_MARK)
        .replace("\t", TAB_MARK)
    )
    core = s.strip(" ")
    if not core:
        return SPACE_MARK * len(s)
    lead = len(s) - len(s.lstrip(" "))
    trail = len(s) - len(s.rstrip(" "))
    return SPACE_MARK * lead + core + SPACE_MARK * trail


def _fold(s: str) -> str:
    """Compare texts as uncased tokenizers do: compatibility forms, no accents, no case."""
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c)).casefold().strip()


def _byte_level_text(tokens: Sequence[str], special) -> bool:
    """Without a source text: do the tokens look like byte-level BPE pieces?

    True when every ordinary token is spelled in the byte-level alphabet and at least one
    carries its space or line-break symbol (``Ġ``, ``Ċ``), as any text of two words does.
    """
    alphabet = _byte_alphabet()
    ordinary = [t for t, sp in zip(tokens, special) if not sp]
    return (
        bool(ordinary)
        and all(set(t) <= alphabet for t in ordinary)
        and any("Ġ" in t or "Ċ" in t for t in ordinary)
    )


def _unique(labels: list[str]) -> list[str]:
    """Number repeated labels: the k-th occurrence of ``"the"`` becomes ``"the#k"`` (k >= 2)."""
    used: set[str] = set()
    count: dict[str, int] = {}
    out = []
    for lab in labels:
        cand = lab
        if cand in used:
            k = count.get(lab, 1)
            while cand in used:
                k += 1
                cand = f"{lab}#{k}"
            count[lab] = k
        used.add(cand)
        out.append(cand)
    return out


def token_labels(
    tokens: Sequence[str],
    offsets: Sequence[tuple[int, int]],
    special: Sequence[bool],
    *,
    text: str = "",
) -> tuple[list[str], list[str]]:
    """Readable, unique labels that state what the model saw, and the text behind each token.

    Computed from the tokenization alone (no tokenizer needed), so results loaded from disk
    show the same labels.  Rules, per token:

    - a special token is shown as the tokenizer wrote it (``[CLS]``, ``<|im_start|>``);
    - a byte-level BPE piece (GPT-2, Llama 3, SmolLM2) is decoded with the ``tokenizers``
      library's own byte-level decoder (``tokenizers.decoders.ByteLevel``, the decoder these
      tokenizers use in ``convert_tokens_to_string``), and shown when the decoding is the text
      its offsets point at;  a leading space shows as ``·`` (:data:`SPACE_MARK`), a line break
      as ``↵`` (:data:`NEWLINE_MARK`), a tab as ``⇥``;  a character split over ``k`` byte
      pieces (an emoji, most CJK characters) labels each piece ``"🍕(1/3)"``, ``"🍕(2/3)"``, …,
      and a piece cut off from the rest of its character (a prefix that ends inside it) shows
      that character with ``(part)`` (``�`` where there is no source text);
    - a WordPiece or SentencePiece token (``##ing``, ``▁word``) that reads as its source text
      (ignoring case and accents, as uncased tokenizers do) shows that text (``"Quantum"``,
      ``"ing"``; ``"·word"`` for a ``▁`` piece);
    - any other token, above all the unknown token, is shown as the tokenizer produced it:
      ``[UNK]`` (its source text is in the second list).

    Without a source text (``text=""`` or empty offsets) byte-level decoding is used when the
    tokens look byte-level (all in its alphabet, some with ``Ġ``/``Ċ``); other tokens are
    shown as given, with their whitespace made visible.  Repeated labels are numbered by
    occurrence: ``"the"``, ``"the#2"``, ``"the#3"`` (so a label names one token).

    Parameters
    ----------
    tokens : sequence of str, length n
        Tokens as the tokenizer produced them.
    offsets : sequence of (int, int), length n
        Character span of each token in ``text`` (``(0, 0)`` when unknown or special).
    special : sequence of bool, length n
        True for special tokens.
    text : str
        The text the tokens came from ("" when unknown).

    Returns
    -------
    labels : list of str, length n
        Unique display labels.
    sources : list of str, length n
        ``text[a:b]`` for each token's offsets, ``""`` for special tokens and tokens
        without offsets.
    """
    tokens = [str(t) for t in tokens]
    n = len(tokens)
    special = [bool(x) for x in special]
    offsets = [(int(a), int(b)) for a, b in offsets]
    sources = [
        text[a:b] if (text and not sp and b > a) else "" for (a, b), sp in zip(offsets, special)
    ]
    dec = _byte_decoder()
    byte_level_guess = None  # decided once, only if some token has no source
    labels: list[str | None] = [None] * n
    i = 0
    while i < n:
        tok = tokens[i]
        if special[i]:
            labels[i] = tok
            i += 1
            continue
        has_src = bool(sources[i])
        if not has_src and byte_level_guess is None:
            byte_level_guess = _byte_level_text(tokens, special)
        # byte-level pieces: the shortest run from i that decodes to whole characters
        if has_src or byte_level_guess:
            done = False
            for k in range(1, _MAX_PIECES + 1):
                j = i + k
                if j > n or special[j - 1]:
                    break
                g = dec.decode(tokens[i:j])
                if "\ufffd" in g:
                    continue
                if has_src:
                    a = min(offsets[m][0] for m in range(i, j) if sources[m])
                    b = max(offsets[m][1] for m in range(i, j) if sources[m])
                    if g.strip() != text[a:b].strip():
                        break
                if k == 1:
                    labels[i] = _visible(g)
                else:
                    whole = _visible(g)
                    for m in range(k):
                        part = whole if m == 0 else _visible(g.lstrip(" "))
                        labels[i + m] = f"{part}({m + 1}/{k})"
                i, done = j, True
                break
            if done:
                continue
        src = sources[i]
        if has_src:
            if tok.startswith("##") and _fold(tok[2:]) == _fold(src):
                labels[i] = _visible(src.strip())
            elif tok.startswith("▁") and _fold(tok[1:]) == _fold(src):
                labels[i] = SPACE_MARK + _visible(src.strip())
            elif _fold(tok) == _fold(src):
                labels[i] = _visible(src.strip())
            elif "\ufffd" in dec.decode([tok]) and set(tok) <= _byte_alphabet():
                labels[i] = f"{_visible(src.rstrip())}(part)"  # a byte piece cut off from its run
        elif byte_level_guess and set(tok) <= _byte_alphabet():
            labels[i] = _visible(dec.decode([tok]))  # bytes cut off from their character: �
        elif tok.startswith("▁"):
            labels[i] = SPACE_MARK + _visible(tok[1:])
        if labels[i] is None:
            labels[i] = _visible(tok)
        i += 1
    return _unique([lab or "∅" for lab in labels]), sources


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
    layers, heads : tuple of int
        Which layers / heads of the model the first two axes hold (all by default):
        position ``i`` of axis L is the model's layer ``layers[i]`` (the names results use,
        docs/api.md, Names).
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
    layers: tuple[int, ...] = ()
    heads: tuple[int, ...] = ()
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
        object.__setattr__(
            self, "layers", tuple(int(x) for x in self.layers) or tuple(range(w.shape[0]))
        )
        object.__setattr__(
            self, "heads", tuple(int(x) for x in self.heads) or tuple(range(w.shape[1]))
        )
        if len(self.layers) != w.shape[0] or len(self.heads) != w.shape[1]:
            raise InvalidInputError(
                f"layers/heads name {len(self.layers)} layers and {len(self.heads)} heads but the "
                f"weights hold {w.shape[0]} and {w.shape[1]}"
            )

    # ------------------------------------------------------------ construction
    @classmethod
    def from_weights(
        cls,
        weights,
        tokens: Sequence[str],
        *,
        causal: bool | None = None,
        model: str = "custom",
        text: str = "",
        offsets: Sequence[tuple[int, int]] | None = None,
        special: Sequence[bool] | None = None,
        layers: Sequence[int] | None = None,
        heads: Sequence[int] | None = None,
        renormalize: bool = False,
    ) -> "Attention":
        """Wrap attention weights you already have (a NumPy array or a torch tensor).

        For attention taken from elsewhere: BertViz/``output_attentions=True`` tuples stacked,
        TransformerLens ``cache["pattern", layer]``, your own model.  No offsets or special-token
        mask are needed.

        Parameters
        ----------
        weights : array-like or torch.Tensor of shape (L, H, n, n), (H, n, n) or (n, n)
            Row ``i`` is query token ``i``'s distribution over the keys.  A torch tensor may
            live on any device and carry gradients (it is detached and copied to the CPU).
            Rows are checked: finite, non-negative, summing to 1 within the rounding of a
            softmax in the input's dtype (:func:`attntopo.models.row_sum_tolerance`: about
            ``(n + 2) · 2**-24`` for float32, ``2**-8`` for bfloat16, ``2**-11`` for float16;
            float64 input is checked as float32).  float16 and bfloat16 rows are then divided
            by their sums in float64, as :meth:`AttentionModel.attention` does with a
            low-precision model's; float32 rows are kept as given.  Stored as float32.
        tokens : sequence of str, length n
            One label per row (``model.to_str_tokens(text)`` in TransformerLens,
            ``tokenizer.convert_ids_to_tokens(ids)`` in transformers).
        causal : bool, optional
            Whether rows never see later tokens.  ``None`` (default): True when ``n > 1`` and
            every weight above the diagonal is exactly 0.  ``True`` with weights above the
            diagonal is an error.
        model : str
            A name for the source (shown in results and figures).
        text : str, optional
            The text the tokens came from (for :attr:`sources` and word matching).
        offsets : sequence of (int, int), optional
            Character spans of the tokens in ``text``; ``(0, 0)`` each by default.
        special : sequence of bool, optional
            Special-token mask (for :meth:`drop_special`); none special by default.
        layers, heads : sequence of int, optional
            The model's numbers of the layers / heads the first two axes hold (0, 1, … by
            default), e.g. ``layers=[5]`` for one TransformerLens layer.
        renormalize : bool
            Divide every row by its sum instead of checking that it is 1 (rows must still be
            finite, non-negative and have a positive sum).

        Returns
        -------
        Attention
            ``weights`` of shape (L, H, n, n), float32 (missing axes added in front).

        Raises
        ------
        InvalidInputError
            ``None`` or a wrong type, a wrong shape, tokens that do not match the rows, rows
            that are not distributions; one line saying what is allowed.
        """
        w, wdtype = _weights_array(weights)
        if w.ndim not in (2, 3, 4) or w.shape[-1] != w.shape[-2] or w.shape[-1] == 0:
            hint = " (a batch? pick one text: weights[0])" if w.ndim == 5 else ""
            raise InvalidInputError(
                f"weights must have shape (L, H, n, n), (H, n, n) or (n, n) with n >= 1, got "
                f"shape {tuple(w.shape)}{hint}"
            )
        w = w.reshape((1,) * (4 - w.ndim) + w.shape)
        n = w.shape[-1]
        if tokens is None or isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
            raise InvalidInputError(
                f"tokens must be a list of {n} strings (one per row of the weights), got "
                f"{type(tokens).__name__}"
            )
        if len(tokens) != n or not all(isinstance(t, str) for t in tokens):
            bad = next((type(t).__name__ for t in tokens if not isinstance(t, str)), None)
            got = f"an item of type {bad}" if bad else f"{len(tokens)}"
            raise InvalidInputError(
                f"tokens must be a list of {n} strings (one per row of the weights), got {got}"
            )
        if not isinstance(model, str) or not model:
            raise InvalidInputError(f"model must be a non-empty name (str), got {model!r}")
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
        renormalize = check_bool(renormalize, "renormalize")
        w = _checked_rows(w, wdtype, renormalize)
        upper_zero = not np.triu(w, 1).any()
        if causal is None:
            causal = n > 1 and upper_zero
        elif check_bool(causal, "causal") and not upper_zero:
            raise InvalidInputError(
                "causal=True but some weights above the diagonal are not 0 (a causal row never "
                "sees later tokens): pass causal=False or None"
            )
        return cls(
            weights=w.astype(np.float32),
            tokens=list(tokens),
            offsets=[(0, 0)] * n if offsets is None else list(offsets),
            special=np.zeros(n, dtype=bool) if special is None else np.asarray(special, dtype=bool),
            causal=bool(causal),
            model=model,
            text=text,
            layers=() if layers is None else tuple(int(x) for x in layers),
            heads=() if heads is None else tuple(int(x) for x in heads),
        )

    # ------------------------------------------------------------------ shape
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

    @cached_property
    def _label_data(self) -> tuple[list[str], list[str]]:
        return token_labels(self.tokens, self.offsets, self.special, text=self.text)

    @property
    def labels(self) -> list[str]:
        """Display labels that state what the model saw, one per token, all different.

        list of str, length n_tokens.  Special tokens as written (``[CLS]``); unknown tokens as
        ``[UNK]`` (their text is in :attr:`sources`); byte-level pieces decoded, with ``·`` for
        a leading space and ``↵`` for a line break; a character split over byte pieces as
        ``"🍕(1/3)"``…; WordPiece pieces as the text they cover (``"Quantum"``, ``"ing"``);
        repeats numbered ``"the"``, ``"the#2"``.  Rules: :func:`token_labels`.  Computed from
        :attr:`tokens`, :attr:`offsets`, :attr:`special` and :attr:`text`, so a saved and
        loaded result shows the same labels.  :attr:`tokens` stay exactly the tokenizer's.
        """
        return list(self._label_data[0])

    @property
    def sources(self) -> list[str]:
        """The text each token came from: ``text[a:b]`` of its offsets, ``""`` for special tokens.

        list of str, length n_tokens.  For an unknown token this is the text it replaced
        (``"🍕"`` where :attr:`labels` says ``[UNK]``).
        """
        return list(self._label_data[1])

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

    def select(self, *, layers=None, heads=None) -> "Attention":
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
            layers=tuple(self.layers[i] for i in li),
            heads=tuple(self.heads[i] for i in hi),
        )

    # ------------------------------------------------------------ token edits
    def subset_tokens(
        self, keep: Sequence[int] | np.ndarray, *, renormalize: bool = True
    ) -> "Attention":
        """Keep only the given token positions (rows and columns), renormalizing rows to sum to 1.

        Raises :class:`~attntopo.errors.InvalidInputError` if a kept row had all its mass on
        removed tokens (it cannot be renormalized).
        """
        keep = np.asarray(keep)
        if keep.dtype == bool:
            keep = np.flatnonzero(keep)
        if keep.size == 0:
            raise InvalidInputError("no tokens left: keep at least one token")
        L, H = self.weights.shape[:2]
        m = keep.size
        out = np.empty((L, H, m, m), dtype=np.float32)
        for layer in range(L):
            renormalized_subset(self.weights[layer], keep, out=out[layer], renormalize=renormalize)
        idx = keep.tolist()
        return replace(
            self,
            weights=out,
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

        For causal models this is the attention of the prefix (rows never see the future,
        so no renormalization is needed and none changes anything); a separate forward pass
        of the prefix agrees with it within float32 round-off (≈1e-6).
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
            and self.layers == other.layers
            and self.heads == other.heads
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


# float64 elements of renormalized_subset's temporaries per step (8 MiB)
_SUBSET_ELEMENTS = 1 << 20


def renormalized_subset(
    weights: np.ndarray,
    keep: np.ndarray,
    *,
    out: np.ndarray | None = None,
    renormalize: bool = True,
) -> np.ndarray:
    """Rows and columns ``keep`` of each matrix, rows divided by their sums in float64.

    What :meth:`Attention.subset_tokens` (and so :meth:`Attention.drop_special`) does to each
    matrix, on a stack of any length: a few matrices at a time, so that the float64
    temporaries stay under 8 MiB; a contiguous ``keep`` is read as a slice (no copy).  The
    numbers do not depend on how the stack is split: each row is summed alone.

    Parameters
    ----------
    weights : ndarray of shape (B, n, n), float32
        Attention matrices (rows: queries).
    keep : ndarray of shape (m,), int
        Token positions kept, ascending.
    out : ndarray of shape (B, m, m), float32, optional
        Where the result goes (a new array by default).
    renormalize : bool
        Divide each kept row by its kept sum (float64, rounded once to float32).

    Returns
    -------
    ndarray of shape (B, m, m), float32

    Raises
    ------
    InvalidInputError
        A kept row has no weight on the kept tokens (it cannot be renormalized).
    """
    keep = np.asarray(keep, dtype=np.int64)
    B, m = weights.shape[0], keep.size
    if out is None:
        out = np.empty((B, m, m), dtype=np.float32)
    lo = int(keep[0]) if m else 0
    contiguous = m > 0 and int(keep[-1]) - lo + 1 == m
    step = max(1, _SUBSET_ELEMENTS // max(1, m * m))
    for h0 in range(0, B, step):
        block = weights[h0 : h0 + step]
        block = block[:, lo : lo + m, lo : lo + m] if contiguous else block[:, keep][:, :, keep]
        w = block.astype(np.float64)
        if renormalize:
            s = w.sum(axis=-1, keepdims=True)
            if np.any(s <= 0):
                raise InvalidInputError(
                    "a kept token attends only to removed tokens, so its row cannot be renormalized"
                )
            w /= s
        out[h0 : h0 + step] = w
        del w, block
    return out


def _weights_array(weights) -> tuple[np.ndarray, str]:
    """``weights`` as a float64 array and the dtype its rows are checked at: the dtype it came
    in, float32 for float64 and integer input (rows built in float32 and cast up pass)."""
    if weights is None or isinstance(weights, (str, bytes, dict)):
        raise InvalidInputError(
            f"weights must be an array or a torch tensor of shape (L, H, n, n), (H, n, n) or "
            f"(n, n), got {type(weights).__name__}"
        )
    if type(weights).__module__.split(".")[0] == "torch" and hasattr(weights, "detach"):
        import torch

        if weights.dtype.is_complex:
            raise InvalidInputError(
                f"weights must be real numbers, got a tensor of {weights.dtype}"
            )
        low = weights.dtype in (torch.float16, torch.bfloat16)
        return weights.detach().to("cpu", torch.float64).numpy(), str(weights.dtype)[
            6:
        ] if low else "float32"
    try:
        arr = np.asarray(weights)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(
            f"weights must be an array or a torch tensor, got {type(weights).__name__} that is "
            f"not one ({str(e).splitlines()[0][:80]})"
        ) from None
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(
            "weights must be real numbers, got an array "
            f"of {arr.dtype} from {type(weights).__name__}"
        )
    return arr.astype(np.float64), "float16" if arr.dtype == np.float16 else "float32"


def _checked_rows(w: np.ndarray, dtype: str, renormalize: bool) -> np.ndarray:
    """Rows finite, non-negative and summing to 1 within the rounding of a softmax in
    ``dtype`` (:func:`attntopo.models.row_sum_tolerance`), then divided by their sums."""

    def where(idx) -> str:
        li, h, i = (int(x) for x in np.unravel_index(idx, w.shape[:3]))
        return f"layer {li}, head {h}, row {i}"

    if not np.isfinite(w).all():
        bad = np.flatnonzero(~np.isfinite(w).all(-1))[0]
        raise InvalidInputError(
            f"weights hold NaN or infinity (first at {where(bad)}): rows must be distributions"
        )
    if (w < 0).any():
        bad = np.flatnonzero((w < 0).any(-1))[0]
        raise InvalidInputError(
            f"weights hold negative values (first at {where(bad)}, smallest {w.min():.3g}): rows "
            f"must be distributions"
        )
    s = w.sum(-1)
    if renormalize:
        if (s <= 0).any():
            raise InvalidInputError(
                f"{where(np.flatnonzero(s.ravel() <= 0)[0])} "
                "sums to 0, so it cannot be renormalized"
            )
        return w / s[..., None]
    from .models.precision import row_sum_tolerance

    n = w.shape[-1]
    tol = row_sum_tolerance(dtype, n)
    dev = np.abs(s - 1.0)
    if dev.max() > tol:
        bad = int(np.flatnonzero(dev.ravel() > tol)[0])
        raise InvalidInputError(
            f"every row of attention must sum to 1 (within {tol:.2g}, the rounding of a {dtype} "
            f"softmax over n={n} keys); {where(bad)} sums to {s.ravel()[bad]:.9g}: pass "
            f"renormalize=True to rescale rows"
        )
    if dtype in ("float16", "bfloat16"):
        # rows off by up to ~2^-8: divided by their float64 sums, as the model's own rows are
        # (attntopo.models.normalize_rows); float32 rows are kept as given
        return w / s[..., None]
    return w
