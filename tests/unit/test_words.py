"""attntopo.words without a model: words and subwords, matching keys, matching words across two
texts, alignments, phrases, token strings and punctuation.

Tokens are laid out by hand the way the real tokenizers do (WordPiece ``##`` pieces with
offsets, byte-level ``Ġ`` pieces without); weights are uniform rows through
``Attention.from_weights`` (their values play no part here).  Claims about every string
(the split covers the text, keys are idempotent) are hypothesis tests against the plain
``re`` and ``unicodedata`` definitions.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attntopo.attention import Attention
from attntopo.errors import InvalidInputError, OutOfRangeError
from attntopo.words import (
    SharedToken,
    check_alignment,
    find_phrase,
    match_aligned,
    match_words,
    normalize_token,
    phrase_tokens,
    punctuation_mask,
    split_words,
    strip_markers,
    token_strings,
    word_tokens,
)


def att_of(text: str, pieces: list[str], *, offsets=True) -> Attention:
    """An Attention over ``[CLS] pieces [SEP]``: each piece is a token string; with ``offsets``
    its span is found in ``text`` left to right (``##`` and ``Ġ`` stripped)."""
    tokens, spans, pos = ["[CLS]"], [(0, 0)], 0
    for p in pieces:
        bare = strip_markers(p).strip()
        if offsets:
            a = text.lower().index(bare.lower(), pos)  # uncased pieces, as in MiniLM's vocabulary
            pos = a + len(bare)
            spans.append((a, pos))
        else:
            spans.append((0, 0))
        tokens.append(p)
    tokens.append("[SEP]")
    spans.append((0, 0))
    n = len(tokens)
    w = np.full((1, 1, n, n), 1.0 / n)
    return Attention.from_weights(
        w, tokens, text=text, offsets=spans, special=[t in ("[CLS]", "[SEP]") for t in tokens]
    )


TEXT = "Entanglement entangles the theory, and the theory wins."
PIECES = [
    "en",
    "##tangle",
    "##ment",
    "en",
    "##tangles",
    "the",
    "theory",
    ",",
    "and",
    "the",
    "theory",
    "wins",
    ".",
]


# ------------------------------------------------------------------ strings
@given(st.text())
def test_split_words_is_the_word_and_punctuation_regex(text):
    spans = split_words(text)
    assert [w for _, _, w in spans] == re.findall(r"\w+|[^\w\s]", text)
    assert all(text[a:b] == w for a, b, w in spans)
    assert "".join(w for _, _, w in spans) == "".join(
        text.split()
    )  # every non-space character, once


@given(st.text())
def test_normalize_token_is_idempotent_and_marker_free(s):
    k = normalize_token(s)
    assert normalize_token(k) == k
    assert not any(m in k for m in ("##", "Ġ", "▁", "Ċ"))
    assert k == k.strip()


@pytest.mark.parametrize(
    "token, key",
    [
        ("##tangle", "tangle"),
        ("Ġtheory", "theory"),
        ("▁Theory", "theory"),
        ("Straße", "strasse"),
        ("ﬁne", "fine"),  # NFKC folds the ligature
        ("  The ", "the"),
        ("Ċ", ""),
    ],
)
def test_normalize_token_examples(token, key):
    assert normalize_token(token) == key


@pytest.mark.parametrize(
    "token, text", [("##ment", "ment"), ("Ġthe", " the"), ("▁a", " a"), ("Ċ", "\n"), ("x##", "x##")]
)
def test_strip_markers(token, text):
    assert strip_markers(token) == text


# ------------------------------------------------------------- words of a text
def test_subword_tokens_belong_to_the_word_of_their_first_character():
    att = att_of(TEXT, PIECES)
    words = word_tokens(att)
    assert words[0] == (0, "Entanglement", (1, 2, 3)) and words[1] == (1, "entangles", (4, 5))
    assert [w for _, w, _ in words] == [w for _, _, w in split_words(TEXT)]
    # every non-special token in exactly one word, the first one representing it
    owned = [t for _, _, toks in words for t in toks]
    assert sorted(owned) == list(range(1, att.n_tokens - 1))


def test_without_offsets_subword_markers_glue_the_words():
    att = att_of(TEXT, PIECES, offsets=False)
    words = word_tokens(att)
    assert words[0] == (-1, "entanglement", (1, 2, 3)) and words[1] == (-1, "entangles", (4, 5))
    byte = att_of("", ["Ġthe", "Ġent", "angle", "ment", "Ġwins"], offsets=False)
    assert [w for _, w, _ in word_tokens(byte)] == ["the", "entanglement", "wins"]


# ------------------------------------------------------------- shared words
def test_match_words_pairs_the_kth_occurrence_with_the_kth():
    A = att_of(TEXT, PIECES)
    B = att_of(
        "The theory and the entanglement",
        ["the", "theory", "and", "the", "en", "##tangle", "##ment"],
    )
    shared = match_words(A, B)
    assert [s.key for s in shared] == ["entanglement", "the", "theory", "and", "the#2"]
    the2 = shared[-1]
    assert (the2.a, the2.b, the2.occurrence) == (10, 4, 1)  # A's 2nd "the" with B's 2nd
    assert shared[0].tokens_a == (1, 2, 3) and shared[0].tokens_b == (5, 6, 7)
    assert all(A.tokens[s.a] and s.a == s.tokens_a[0] for s in shared)
    specials = match_words(A, B, include_special=True)
    assert [s.key for s in specials[:2]] == ["[CLS]", "[SEP]"] and specials[2:] == shared
    assert all(SharedToken.from_dict(s.to_dict()) == s for s in specials)


@given(
    st.lists(
        st.sampled_from(["the", "cat", "sat", "on", "mat", ",", "The"]), min_size=1, max_size=12
    )
)
def test_a_text_shares_every_word_with_itself(words):
    text = " ".join(words)
    att = att_of(text, words)
    shared = match_words(att, att)
    assert len(shared) == len(words) and all(
        s.a == s.b and s.tokens_a == s.tokens_b for s in shared
    )
    assert len({s.key for s in shared}) == len(shared)  # keys are unique (#k for repeats)


# ----------------------------------------------------------------- alignments
@pytest.mark.parametrize(
    "bad, fragment",
    [
        (5, "pairs of ints"),
        ([(1, 2, 3)], "pairs of ints"),
        ([(1.5, 2)], "pairs of ints"),
        ([], "empty"),
        ([(0, 1), (0, 2)], "index 0 of text A appears twice"),
        ([(0, 1), (2, 1)], "index 1 of text B appears twice"),
    ],
)
def test_check_alignment_refuses(bad, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        check_alignment(bad)


def test_match_aligned_words_and_tokens():
    A = att_of("the theory wins", ["the", "theory", "wins"])
    B = att_of("la théorie gagne", ["la", "th", "##éorie", "gagne"])
    pairs = check_alignment([(1, 1), (-1, -1)])
    words = match_aligned(A, B, pairs, "word")
    assert [s.key for s in words] == ["theory/théorie", "wins/gagne"]
    assert words[0].tokens_b == (2, 3) and (words[0].word_a, words[0].word_b) == (1, 1)
    toks = match_aligned(A, B, check_alignment([(1, 1)]), "token")
    assert (toks[0].a, toks[0].b, toks[0].tokens_a) == (1, 1, (1,))
    with pytest.raises(
        OutOfRangeError, match="word 7 is out of range for text A, which has 3 words"
    ):
        match_aligned(A, B, [(7, 0)], "word")
    with pytest.raises(OutOfRangeError, match="token 9 is out of range for text B"):
        match_aligned(A, B, [(0, 9)], "token")
    with pytest.raises(InvalidInputError, match="no character offsets"):
        match_aligned(att_of("", ["the"], offsets=False), B, [(0, 0)], "word")


# -------------------------------------------------------------------- phrases
def test_find_phrase_and_its_tokens():
    ctx = "The  Information\ntheory of information theory"
    assert find_phrase("information theory", ctx) == (5, 23)  # any whitespace run, any case
    assert find_phrase("information theory", ctx, occurrence=1) == (27, 45)
    with pytest.raises(InvalidInputError, match="occurs 2 time"):
        find_phrase("information theory", ctx, occurrence=2)
    with pytest.raises(InvalidInputError, match="does not occur"):
        find_phrase("quantum", ctx)
    att = att_of(TEXT, PIECES)
    s, e = find_phrase("entangles the", TEXT)
    assert phrase_tokens(att, (s, e)) == [4, 5, 6]


# ---------------------------------------------------------- token strings
def test_token_strings_from_offsets_a_tokenizer_or_the_markers():
    att = att_of(TEXT, PIECES)
    strings = token_strings(att)
    assert strings[1:4] == ["En", "tangle", "ment"] and strings[0] == "[CLS]"  # the text as written

    class Decoder:
        def decode(self, ids):
            return f"<{ids[0]}>"

    with_ids = dataclasses.replace(
        Attention.from_weights(np.full((1, 1, 2, 2), 0.5), ["a", "b"]), token_ids=[7, 9]
    )
    assert token_strings(with_ids, tokenizer=Decoder()) == ["<7>", "<9>"]
    assert token_strings(att_of("", ["Ġthe", "##x"], offsets=False))[1:3] == [" the", "x"]


@pytest.mark.parametrize(
    "piece, punct",
    [
        (",", True),
        (".", True),
        ("¿", True),
        ("、", True),
        ("«", True),
        ("—", True),
        ("$", False),
        ("+", False),
        ("a", False),
        ("1", False),
    ],
)
def test_punctuation_is_the_unicode_p_categories(piece, punct):
    att = att_of(f"x {piece} y", ["x", piece, "y"])
    mask = punctuation_mask(att)
    assert mask.tolist() == [False, False, punct, False, False]  # specials are never punctuation
    assert punct == all(unicodedata.category(c).startswith("P") for c in piece)
