"""Words and tokens: splitting a text into words, the tokens of each word, matching words
across two texts, finding a phrase, and the text of each token.

Everything here works on an :class:`~attntopo.attention.Attention` (its tokens, character
offsets and special-token mask) and plain strings; the analyses (:func:`attntopo.compare`,
:func:`attntopo.phrase_topology`, :func:`attntopo.head_types`) and the figures use it.

Words and subwords
------------------
Texts are split into words by :func:`split_words` (runs of letters/digits, ``\\w+``, and
single punctuation characters).  A token belongs to the word that contains its first
non-space character (offsets from the tokenizer), so ``"en ##tangle ##ment"`` is the one
word *entanglement* and a byte-level token ``"Ġtheory"`` belongs to *theory*.

**A word is represented by its first token.**  The word-level distance between two words
is the distance between their first tokens, ``D[first(u), first(v)]``.  We chose this over
averaging the rows of a word's subword tokens because it keeps every number an entry of the
token distance matrix: the edge births, connection scales and simplices reported are those
of the very Vietoris–Rips filtration whose diagrams are compared, so the two views never
disagree.  An averaged row would be a new point that is not in that complex.  (First-subword
pooling is also the usual choice in probing work.)  The other subword tokens remain in each
text's complex: connection paths may pass through them and they count in the diagrams.

Matching keys
-------------
:func:`normalize_token` is the key two words are matched by: NFKC, case-folded, without the
subword markers ``##`` (WordPiece), ``Ġ`` (byte-level BPE), ``▁`` (SentencePiece) and ``Ċ``.
:func:`match_words` pairs the words of two texts by key and occurrence (the 2nd *the* of A
with the 2nd *the* of B); :func:`match_aligned` pairs them by a user's word or token
alignment.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import is_int
from .attention import Attention
from .errors import InvalidInputError, OutOfRangeError

__all__ = [
    "normalize_token",
    "strip_markers",
    "split_words",
    "word_tokens",
    "SharedToken",
    "match_words",
    "match_aligned",
    "check_alignment",
    "find_phrase",
    "phrase_tokens",
    "token_strings",
    "punctuation_mask",
]

_WORD_RE = re.compile(r"\w+|[^\w\s]")
_MARKERS = ("##", "Ġ", "▁", "Ċ")


def normalize_token(s: str) -> str:
    """Matching key of a token or word: NFKC, case-folded, without ``##``/``Ġ``/``▁`` markers
    and surrounding whitespace."""
    s = unicodedata.normalize("NFKC", str(s))
    for m in _MARKERS:
        s = s.replace(m, "")
    return s.strip().casefold()


def split_words(text: str) -> list[tuple[int, int, str]]:
    """Words of a text: ``[(start, end, word), ...]`` character spans.

    A word is a run of letters/digits/underscores (``\\w+``, Unicode-aware) or a single
    punctuation character.  Word indices in :func:`compare`'s ``alignment`` refer to
    this list.

    >>> split_words("l'information, c'est")  # doctest: +NORMALIZE_WHITESPACE
    [(0, 1, 'l'), (1, 2, "'"), (2, 13, 'information'), (13, 14, ','), (15, 16, 'c'),
     (16, 17, "'"), (17, 20, 'est')]
    """
    return [(m.start(), m.end(), m.group()) for m in _WORD_RE.finditer(text)]


@dataclass(frozen=True)
class _Word:
    index: int  # position in split_words(text); -1 for special tokens / fallback words
    text: str
    tokens: tuple[int, ...]


def _has_offsets(att: Attention) -> bool:
    return bool(att.text) and any(b > a for (a, b), sp in zip(att.offsets, att.special) if not sp)


def _words(att: Attention) -> list[_Word]:
    """Words of an Attention's text that own at least one token (tokens in order)."""
    if not _has_offsets(att):
        return _words_from_markers(att)
    text = att.text
    spans = split_words(text)
    starts = [s for s, _, _ in spans]
    owned: dict[int, list[int]] = {}
    for t, ((a, b), sp) in enumerate(zip(att.offsets, att.special)):
        if sp or b <= a:
            continue
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        if lead == len(piece):
            continue  # a whitespace-only token belongs to no word
        p = a + lead
        w = bisect.bisect_right(starts, p) - 1
        if w >= 0 and spans[w][0] <= p < spans[w][1]:
            owned.setdefault(w, []).append(t)
    return [_Word(w, spans[w][2], tuple(owned[w])) for w in sorted(owned)]


def _words_from_markers(att: Attention) -> list[_Word]:
    """Fallback without offsets: glue WordPiece ``##`` pieces / unmarked byte-level pieces."""
    toks = att.tokens
    byte_level = any(t.startswith(("Ġ", "▁")) for t in toks)
    words: list[list[int]] = []
    for t, (tok, sp) in enumerate(zip(toks, att.special)):
        if sp:
            continue
        cont = tok.startswith("##") if not byte_level else not tok.startswith(("Ġ", "▁"))
        if cont and words and words[-1][-1] == t - 1:
            words[-1].append(t)
        else:
            words.append([t])
    return [_Word(-1, "".join(normalize_token(toks[t]) for t in w), tuple(w)) for w in words]


def word_tokens(att: Attention) -> list[tuple[int, str, tuple[int, ...]]]:
    """The words of an analysed text and their tokens: ``[(word_index, word, tokens), ...]``.

    ``word_index`` is the position in :func:`split_words` (``-1`` when the tokenizer gave no
    offsets); ``tokens`` are positions in ``att`` (the first one represents the word).
    Words whose characters are all inside another word's token own no token and are left out.
    """
    return [(w.index, w.text, w.tokens) for w in _words(att)]


# ---------------------------------------------------------------- shared words
@dataclass(frozen=True)
class SharedToken:
    """A token (word) present in both texts.

    Attributes
    ----------
    key : str
        Unique label: the normalized word, with ``#k`` for its k-th occurrence (k ≥ 2),
        ``"a/b"`` for aligned words that differ (``"theory/théorie"``).
    text_a, text_b : str
        The word as written in each text (special tokens: the token string).
    a, b : int
        Representative token (the word's first token) in each text: position in
        ``comparison.a.attention`` / ``comparison.b.attention``.
    tokens_a, tokens_b : tuple of int
        All tokens of the word in each text.
    word_a, word_b : int
        Word index in :func:`split_words` of each text (``-1`` for special tokens and
        token-level alignments).
    occurrence : int
        0 for the first occurrence of this word in both texts, 1 for the second, …
    """

    key: str
    text_a: str
    text_b: str
    a: int
    b: int
    tokens_a: tuple[int, ...]
    tokens_b: tuple[int, ...]
    word_a: int = -1
    word_b: int = -1
    occurrence: int = 0

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "text_a": self.text_a,
            "text_b": self.text_b,
            "a": self.a,
            "b": self.b,
            "tokens_a": list(self.tokens_a),
            "tokens_b": list(self.tokens_b),
            "word_a": self.word_a,
            "word_b": self.word_b,
            "occurrence": self.occurrence,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "SharedToken":
        return cls(
            key=d["key"],
            text_a=d["text_a"],
            text_b=d["text_b"],
            a=int(d["a"]),
            b=int(d["b"]),
            tokens_a=tuple(int(x) for x in d["tokens_a"]),
            tokens_b=tuple(int(x) for x in d["tokens_b"]),
            word_a=int(d.get("word_a", -1)),
            word_b=int(d.get("word_b", -1)),
            occurrence=int(d.get("occurrence", 0)),
        )


def _special_words(att: Attention) -> list[_Word]:
    return [_Word(-1, tok, (t,)) for t, (tok, sp) in enumerate(zip(att.tokens, att.special)) if sp]


def match_words(A: Attention, B: Attention, *, include_special: bool = False) -> list[SharedToken]:
    """The words two texts share, matched by :func:`normalize_token` key and occurrence.

    The k-th occurrence of a word in ``A`` is matched with its k-th occurrence in ``B``;
    with ``include_special`` special tokens are matched by their exact string too (they
    come first).  Returns the shared words in the order of text ``A``.
    """

    def keyed(words: list[_Word], special: bool) -> list[tuple[tuple[str, int], _Word]]:
        seen: dict[str, int] = {}
        out = []
        for w in words:
            k = w.text if special else normalize_token(w.text)
            if not k:
                continue
            occ = seen.get(k, 0)
            seen[k] = occ + 1
            out.append(((k, occ), w))
        return out

    out: list[SharedToken] = []
    groups = [(_words(A), _words(B), False)]
    if include_special:
        groups.insert(0, (_special_words(A), _special_words(B), True))
    for wa, wb, special in groups:
        right = dict(keyed(wb, special))
        for (k, occ), w in keyed(wa, special):
            v = right.get((k, occ))
            if v is None:
                continue
            out.append(
                SharedToken(
                    key=k if occ == 0 else f"{k}#{occ + 1}",
                    text_a=w.text,
                    text_b=v.text,
                    a=w.tokens[0],
                    b=v.tokens[0],
                    tokens_a=w.tokens,
                    tokens_b=v.tokens,
                    word_a=w.index,
                    word_b=v.index,
                    occurrence=occ,
                )
            )
    return out


def check_alignment(alignment: Any) -> list[tuple[int, int]]:
    """A one-to-one list of ``(index_a, index_b)`` int pairs, or :class:`InvalidInputError`."""
    try:
        pairs = [tuple(p) for p in alignment]
    except TypeError:
        raise InvalidInputError(
            "alignment must be a list of (index_a, index_b) pairs of ints"
        ) from None
    out = []
    for p in pairs:
        if len(p) != 2 or not all(is_int(x) for x in p):
            raise InvalidInputError(
                f"alignment must be a list of (index_a, index_b) pairs of ints, got {p!r}"
            )
        out.append((int(p[0]), int(p[1])))
    if not out:
        raise InvalidInputError("alignment is empty: give at least one (index_a, index_b) pair")
    for side, name in ((0, "A"), (1, "B")):
        seen = set()
        for p in out:
            if p[side] in seen:
                raise InvalidInputError(
                    f"alignment must be one-to-one: index {p[side]} of text {name} appears twice; "
                    f"keep one pair per word"
                )
            seen.add(p[side])
    return out


def match_aligned(
    A: Attention, B: Attention, pairs: list[tuple[int, int]], units: str
) -> list[SharedToken]:
    """Shared words from a user alignment (:func:`check_alignment`'s pairs).

    ``units="word"``: pairs of word indices in :func:`split_words` of each text (needs
    character offsets); ``"token"``: pairs of token positions.  Negative indices count
    from the end.
    """
    out: list[SharedToken] = []
    keys: dict[str, int] = {}

    def unique(k: str) -> tuple[str, int]:
        occ = keys.get(k, 0)
        keys[k] = occ + 1
        return (k if occ == 0 else f"{k}#{occ + 1}"), occ

    if units == "word":
        sides = []
        for att, name in ((A, "A"), (B, "B")):
            if not _has_offsets(att):
                raise InvalidInputError(
                    f"text {name}: the tokenizer gave no character offsets, so word indices cannot "
                    f"be mapped to tokens; use alignment_units='token'"
                )
            spans = split_words(att.text)
            owned = {w.index: w for w in _words(att)}
            sides.append((spans, owned, name))
        for ia, ib in pairs:
            ws = []
            for idx, (spans, owned, name) in zip((ia, ib), sides):
                if not -len(spans) <= idx < len(spans):
                    raise OutOfRangeError(
                        f"alignment: word {idx} is out of range for text {name}, which has "
                        f"{len(spans)} words (see attntopo.words.split_words)"
                    )
                idx %= len(spans)
                if idx not in owned:
                    raise InvalidInputError(
                        f"alignment: word {idx} ({spans[idx][2]!r}) of text {name} owns no token "
                        f"(truncated, or inside a token of the previous word)"
                    )
                ws.append(owned[idx])
            wa, wb = ws
            na, nb = normalize_token(wa.text), normalize_token(wb.text)
            key, occ = unique(na if na == nb else f"{na}/{nb}")
            out.append(
                SharedToken(
                    key,
                    wa.text,
                    wb.text,
                    wa.tokens[0],
                    wb.tokens[0],
                    wa.tokens,
                    wb.tokens,
                    wa.index,
                    wb.index,
                    occ,
                )
            )
        return out
    for ia, ib in pairs:
        idx = []
        for i, att, name in ((ia, A, "A"), (ib, B, "B")):
            n = att.n_tokens
            if not -n <= i < n:
                raise OutOfRangeError(
                    f"alignment: token {i} is out of range for text {name}, which has {n} tokens"
                )
            idx.append(i % n)
        ta, tb = idx
        la, lb = A.labels[ta], B.labels[tb]
        # match on the text (display labels carry marks: "·word", "the#2", "[UNK]")
        na, nb = (normalize_token(att.sources[t] or att.tokens[t]) for att, t in ((A, ta), (B, tb)))
        key, occ = unique(na if na == nb else f"{na}/{nb}")
        out.append(SharedToken(key, la, lb, ta, tb, (ta,), (tb,), -1, -1, occ))
    return out


# ------------------------------------------------------------------ phrases
def find_phrase(phrase: str, context: str, *, occurrence: int = 0) -> tuple[int, int]:
    """Character span of the ``occurrence``-th case-insensitive match of ``phrase`` in ``context``.

    Whitespace in the phrase matches any run of whitespace.  Raises
    :class:`~attntopo.errors.InvalidInputError` if it does not occur (that often).
    """
    words = phrase.split()
    pattern = r"\s+".join(re.escape(w) for w in words)
    hits = list(re.finditer(pattern, context, flags=re.IGNORECASE))
    if len(hits) <= occurrence:
        short = context if len(context) <= 60 else context[:57] + "..."
        if not hits:
            raise InvalidInputError(f"phrase {phrase!r} does not occur in context {short!r}")
        raise InvalidInputError(
            f"phrase {phrase!r} occurs {len(hits)} time(s) in context {short!r}, "
            f"so occurrence={occurrence} does not exist (0-based)"
        )
    h = hits[occurrence]
    return h.start(), h.end()


def phrase_tokens(att: Attention, span: tuple[int, int]) -> list[int]:
    """Positions of the non-special tokens whose characters overlap ``span`` (not only spaces)."""
    s, e = span
    return [
        t
        for t, ((a, b), sp) in enumerate(zip(att.offsets, att.special))
        if not sp and b > a and a < e and b > s and att.text[max(a, s) : min(b, e)].strip()
    ]


# ------------------------------------------------------------------ token strings
def strip_markers(tok: str) -> str:
    """A token string as text: leading ``##`` removed, ``Ġ``/``▁`` as spaces, ``Ċ`` as a newline."""
    if tok.startswith("##"):
        tok = tok[2:]
    return tok.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\n")


def token_strings(att: Attention, *, tokenizer: Any = None) -> list[str]:
    """The text of each token: decoded by ``tokenizer`` when given, else from the offsets.

    Parameters
    ----------
    att : Attention
    tokenizer : transformers tokenizer, optional
        ``tokenizer.decode([id])`` of each token id (needs ``att.token_ids``).

    Returns
    -------
    list of str, length n_tokens
        Without the tokenizer: the text span ``att.text[a:b]`` of each token's offsets, or
        the token string with subword markers (``##``, ``Ġ``, ``▁``) removed when the
        token has no span.
    """
    n = att.n_tokens
    if tokenizer is not None and att.token_ids is not None:
        try:
            return [str(tokenizer.decode([int(i)])) for i in att.token_ids]
        except Exception:  # noqa: BLE001 - fall back to offsets for odd tokenizers
            pass
    out = []
    for k in range(n):
        a, b = att.offsets[k]
        if att.text and b > a:
            out.append(att.text[a:b])
        else:
            out.append(strip_markers(att.tokens[k]))
    return out


def _is_punctuation(s: str) -> bool:
    s = s.strip()
    return bool(s) and all(unicodedata.category(c).startswith("P") for c in s)


def punctuation_mask(att: Attention, *, tokenizer: Any = None) -> np.ndarray:
    """bool ndarray of shape (n_tokens,): True for non-special punctuation tokens.

    A token is punctuation when its text (:func:`token_strings`) stripped of whitespace is
    non-empty and every character is in a Unicode punctuation category (``P*``: ``.,;:!?``,
    quotes, brackets, dashes, ``¿``, ``、`` …).  Symbols (``$``, ``+``) are not punctuation.
    """
    strings = token_strings(att, tokenizer=tokenizer)
    return np.array(
        [(not sp) and _is_punctuation(s) for s, sp in zip(strings, att.special)], dtype=bool
    )
