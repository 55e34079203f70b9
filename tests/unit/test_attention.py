"""The Attention container without a model: indexing, selection, renormalization."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo import Attention
from attntopo.attention import NEWLINE_MARK, SPACE_MARK, token_labels
from attntopo.errors import InvalidInputError, OutOfRangeError


def make(n=5, L=2, H=3, causal=False, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(n), size=(L, H, n)).astype(np.float32)
    if causal:
        w = np.tril(w)
        w /= w.sum(-1, keepdims=True)
    special = np.zeros(n, bool)
    special[0] = special[-1] = True
    text = "a b c d e f g h"[: 2 * n]
    return Attention(
        weights=w,
        tokens=[f"t{i}" for i in range(n)],
        offsets=[(2 * i, 2 * i + 1) for i in range(n)],
        special=special,
        causal=causal,
        model="test",
        text=text,
    )


def test_indexing_and_select():
    a = make()
    assert a.shape == (2, 3, 5, 5) and len(a) == 5
    np.testing.assert_array_equal(a[1, 2], a.weights[1, 2])
    np.testing.assert_array_equal(a[-1, -1], a.weights[1, 2])
    s = a.select(layers=[1], heads=[0, 2])
    assert s.layers == (1,) and s.heads == (0, 2)
    # one selection vocabulary: int, sequence, slice, None; negatives count from the end
    assert a.select(layers=-1, heads=slice(1, None)).layers == (1,)
    assert a.select(layers=-1, heads=slice(1, None)).heads == (1, 2)
    assert a.select(heads=np.array([-1, 0])).heads == (2, 0)
    assert a.select().layers == (0, 1) and a.layers == (0, 1) and a.heads == (0, 1, 2)
    np.testing.assert_array_equal(s.weights[0, 1], a.weights[1, 2])
    with pytest.raises(OutOfRangeError, match=r"valid are 0\.\.2"):
        a[0, 3]
    with pytest.raises(OutOfRangeError):
        a.select(layers=[2])
    with pytest.raises(InvalidInputError):
        a.select(heads=[0, 0])


def test_drop_special_and_prefix():
    a = make(causal=True)
    d = a.drop_special()
    assert d.n_tokens == 3 and d.special_dropped
    np.testing.assert_allclose(d.weights.sum(-1), 1, atol=1e-6)
    p = a.prefix(3)
    # causal: the prefix's rows are the top-left block unchanged
    np.testing.assert_allclose(p.weights, a.weights[:, :, :3, :3], atol=1e-6)
    with pytest.raises(OutOfRangeError):
        a.prefix(0)


def test_bad_shapes():
    with pytest.raises(InvalidInputError):
        Attention(np.zeros((2, 2, 3, 4)), ["a"] * 3, [(0, 0)] * 3, np.zeros(3, bool), False, "m")
    with pytest.raises(InvalidInputError):
        Attention(np.zeros((2, 2, 3, 3)), ["a"] * 2, [(0, 0)] * 3, np.zeros(3, bool), False, "m")


def test_equality():
    assert make() == make()
    assert make() != make(seed=1)


def test_default_model_is_a_packaged_alias():
    from attntopo.constants import DEFAULT_MODEL
    from attntopo.models import ALIASES
    from attntopo.models import DEFAULT_MODEL as models_default

    assert models_default == DEFAULT_MODEL and DEFAULT_MODEL in ALIASES


# ------------------------------------------------------------------ labels
# Token lists below are real tokenizer output (SmolLM2's byte-level BPE, MiniLM's WordPiece),
# written down so these tests need no model; tests/integration/test_labels.py runs the models.

SMOL_TEXT = "🍕🍕 П П\nnext"
SMOL_TOKENS = ["ðŁ", "į", "ķ", "ðŁ", "į", "ķ", "ĠÐ", "Ł", "ĠÐ", "Ł", "Ċ", "next"]
SMOL_OFFSETS = [(0, 1)] * 3 + [(1, 2)] * 3 + [(2, 4), (3, 4), (4, 6), (5, 6), (6, 7), (7, 11)]


def test_byte_level_labels_are_decoded_and_unique():
    labels, sources = token_labels(SMOL_TOKENS, SMOL_OFFSETS, [False] * 12, text=SMOL_TEXT)
    assert labels == [
        "🍕(1/3)",
        "🍕(2/3)",
        "🍕(3/3)",
        "🍕(1/3)#2",
        "🍕(2/3)#2",
        "🍕(3/3)#2",
        "·П(1/2)",
        "П(2/2)",
        "·П(1/2)#2",
        "П(2/2)#2",
        "↵",
        "next",
    ]
    assert sources == ["🍕"] * 6 + [" П", "П", " П", "П", "\n", "next"]
    # without the text (a result of Attention.from_weights): the same decoding
    assert token_labels(SMOL_TOKENS, [(0, 0)] * 12, [False] * 12, text="")[0] == labels


def test_space_newline_tab_marks():
    toks = ["ĠHello", "Ġ", "Ġworld", "ĊĊ", "ĉ", "x"]
    text = " Hello  world\n\n\tx"
    offs = [(0, 6), (6, 7), (7, 13), (13, 15), (15, 16), (16, 17)]
    assert token_labels(toks, offs, [False] * 6, text=text)[0] == [
        "·Hello",
        "·",
        "·world",
        "↵↵",
        "⇥",
        "x",
    ]
    assert SPACE_MARK == "·" and NEWLINE_MARK == "↵"
    # trimmed offsets (the space not in the span) give the same labels
    trimmed = [(1, 6), (6, 7), (8, 13), (13, 15), (15, 16), (16, 17)]
    assert token_labels(toks, trimmed, [False] * 6, text=text)[0][:3] == ["·Hello", "·", "·world"]
    # tokens given as decoded text (TransformerLens' to_str_tokens)
    assert token_labels([" Hello", " world", "\n"], [(0, 0)] * 3, [False] * 3)[0] == [
        "·Hello",
        "·world",
        "↵",
    ]


def test_wordpiece_labels_unknown_and_special():
    text = "I love 🍕 and 猫"
    toks = ["[CLS]", "i", "love", "[UNK]", "and", "[UNK]", "[SEP]"]
    offs = [(0, 0), (0, 1), (2, 6), (7, 8), (9, 12), (13, 14), (0, 0)]
    special = [True, False, False, False, False, False, True]
    labels, sources = token_labels(toks, offs, special, text=text)
    assert labels == ["[CLS]", "I", "love", "[UNK]", "and", "[UNK]#2", "[SEP]"]
    assert sources == ["", "I", "love", "🍕", "and", "猫", ""]
    # continuation pieces read as the text they cover; accents and case as uncased BERT folds them
    labels, _ = token_labels(
        ["en", "##tangle", "##ment", "cafe"],
        [(0, 2), (2, 8), (8, 12), (13, 17)],
        [False] * 4,
        text="entanglement café",
    )
    assert labels == ["en", "tangle", "ment", "café"]
    # SentencePiece's ▁ is a leading space
    assert token_labels(["▁Hello", "▁world"], [(0, 5), (6, 11)], [False] * 2, text="Hello world")[
        0
    ] == ["·Hello", "·world"]


def test_attention_labels_and_sources_follow_the_tokens():
    n = len(SMOL_TOKENS)
    w = np.tril(np.ones((n, n), np.float32))
    att = Attention(
        w[None, None] / w.sum(-1, keepdims=True),
        SMOL_TOKENS,
        SMOL_OFFSETS,
        np.zeros(n, bool),
        True,
        "m",
        text=SMOL_TEXT,
    )
    assert att.tokens == SMOL_TOKENS  # the tokenizer's strings, untouched
    assert att.labels[10] == "↵" and att.sources[6] == " П"
    p = att.prefix(7)  # a prefix recomputes its labels: the cut character's piece is marked
    assert p.labels[:6] == att.labels[:6] and p.labels[6] == "·П(part)"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["the", "the#2", "a", "Ġthe", "[UNK]", "##s", "ðŁ", " x", "", "\n"]),
        min_size=1,
        max_size=30,
    )
)
def test_labels_are_unique_and_one_per_token(tokens):
    labels, sources = token_labels(tokens, [(0, 0)] * len(tokens), [False] * len(tokens), text="")
    assert len(labels) == len(tokens) == len(sources)
    assert len(set(labels)) == len(labels) and all(labels)
    assert not any("\n" in lab for lab in labels)  # line breaks always show as ↵


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["the", "Ġthe", "Ċ", "ĠÐ", "Ł", "ðŁ", "į", "ķ", "ĠĠ"]),
        min_size=1,
        max_size=30,
    )
)
def test_byte_level_tokens_never_leak_markers(tokens):
    tokens = ["Ġa"] + tokens  # a byte-level text of two words or more
    labels, _ = token_labels(tokens, [(0, 0)] * len(tokens), [False] * len(tokens), text="")
    assert len(set(labels)) == len(labels)
    # whole characters are decoded; only bytes cut off from their character keep their spelling
    assert not any(ch in lab for lab in labels for ch in "ĠĊ"), (tokens, labels)


# ------------------------------------------------------------ from_weights
def _rows(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(shape[-1]), size=shape[:-1]).astype(np.float32)


@pytest.mark.parametrize("shape", [(2, 3, 5, 5), (3, 5, 5), (5, 5)])
def test_from_weights_shapes(shape):
    w = _rows(shape)
    a = Attention.from_weights(w, list("abcde"))
    assert a.weights.shape == (1,) * (4 - len(shape)) + shape and a.weights.dtype == np.float32
    np.testing.assert_array_equal(a.weights.reshape(shape), w)
    assert a.model == "custom" and not a.causal and not a.special.any()
    assert a.offsets == [(0, 0)] * 5 and a.labels == list("abcde") and a.sources == [""] * 5


def test_from_weights_torch_and_causal():
    torch = pytest.importorskip("torch")
    logits = torch.randn(2, 4, 6, 6, requires_grad=True)
    mask = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
    w = torch.softmax(logits.masked_fill(mask, float("-inf")), -1)  # carries a gradient
    a = Attention.from_weights(w, [f"t{i}" for i in range(6)], model="mine", layers=[3, 4])
    assert a.causal and a.model == "mine" and a.layers == (3, 4)  # zeros above the diagonal
    np.testing.assert_array_equal(a.weights, w.detach().numpy())
    assert not Attention.from_weights(w, [f"t{i}" for i in range(6)], causal=False).causal
    # float16 rows are checked at float16's precision
    h = Attention.from_weights(torch.softmax(torch.randn(3, 40, 40), -1).half(), ["x"] * 40)
    assert h.n_heads == 3 and h.labels[1] == "x#2"
    # a 1-token text cannot show causality
    assert not Attention.from_weights(np.ones((1, 1)), ["only"]).causal


def test_from_weights_row_sums_and_renormalize():
    w = _rows((2, 3, 64, 64)).astype(np.float64)
    Attention.from_weights(w, ["t"] * 64)
    tol = (64 + 2) * 2.0**-24  # row_sum_tolerance("float32", 64)
    off = w.copy()
    off[1, 2, 7] *= 1 + 3 * tol
    with pytest.raises(
        InvalidInputError,
        match=r"^every row of attention must sum to 1 .*layer 1, head 2, row 7 "
        r"sums to .*renormalize=True",
    ):
        Attention.from_weights(off, ["t"] * 64)
    r = Attention.from_weights(off * 3, ["t"] * 64, renormalize=True)
    np.testing.assert_allclose(r.weights.sum(-1), 1, rtol=0, atol=64 * 2.0**-24)
    zero = w.copy()
    zero[0, 0, 0] = 0
    with pytest.raises(InvalidInputError, match=r"layer 0, head 0, row 0 sums to 0"):
        Attention.from_weights(zero, ["t"] * 64, renormalize=True)


def test_from_weights_low_precision_rows_are_checked_at_their_rounding_and_renormalized():
    torch = pytest.importorskip("torch")
    from attntopo.models import row_sum_tolerance

    gen = torch.Generator().manual_seed(3)
    n = 40
    w = torch.softmax(torch.randn((2, 3, n, n), generator=gen) * 3, -1).to(torch.bfloat16)
    a = Attention.from_weights(w, ["x"] * n)
    # bfloat16 rows (off by up to 2^-8) are divided by their float64 sums, like the model's
    expected = (w.double() / w.double().sum(-1, keepdim=True)).float().numpy()
    np.testing.assert_array_equal(a.weights, expected)
    # a bfloat16 row off by more than a softmax's rounding explains is refused: the tolerance
    # is about 2^-8 whatever n, not n times it (which would pass anything at n = 40)
    bad = w.double()
    bad[1, 2, 5] *= 1 + 2 * row_sum_tolerance("bfloat16", n)
    with pytest.raises(
        InvalidInputError,
        match=r"within 0.0039, the rounding of a bfloat16 .*layer 1, head 2, row 5 sums to",
    ):
        Attention.from_weights(bad.to(torch.bfloat16), ["x"] * n)


@pytest.mark.parametrize(
    "weights, tokens, kwargs, message",
    [
        (
            None,
            ["a"],
            {},
            r"^weights must be an array or a torch tensor of shape \(L, H, n, n\), \(H, n, n\) "
            r"or \(n, n\), got NoneType$",
        ),
        ("abc", ["a"], {}, r"got str$"),
        ({"w": 1}, ["a"], {}, r"got dict$"),
        ([[1, 0], [1]], ["a", "b"], {}, r"^weights must be an array or a torch tensor, got list"),
        (np.array([["a"]]), ["a"], {}, r"^weights must be real numbers"),
        (np.ones((2, 3)) / 3, ["a", "b"], {}, r"^weights must have shape .* got shape \(2, 3\)$"),
        (np.ones((1, 1, 1, 2, 2)) / 2, ["a", "b"], {}, r"pick one text: weights\[0\]\)$"),
        (np.ones(3) / 3, ["a"] * 3, {}, r"got shape \(3,\)$"),
        (
            np.eye(2),
            None,
            {},
            r"^tokens must be a list of 2 strings \(one per row of the weights\), got NoneType$",
        ),
        (np.eye(2), "ab", {}, r"got str$"),
        (np.eye(2), ["a"], {}, r"got 1$"),
        (np.eye(2), ["a", 2], {}, r"got an item of type int$"),
        (
            np.array([[np.nan, 1], [0, 1]]),
            ["a", "b"],
            {},
            r"^weights hold NaN or infinity \(first at layer 0, head 0, row 0\)",
        ),
        (np.array([[1.5, -0.5], [0, 1]]), ["a", "b"], {}, r"^weights hold negative values"),
        (
            np.ones((2, 2)) / 2,
            ["a", "b"],
            {"causal": True},
            r"^causal=True but some weights above the diagonal",
        ),
        (np.eye(2), ["a", "b"], {"causal": "yes"}, r"^causal must be True or False"),
        (np.eye(2), ["a", "b"], {"model": None}, r"^model must be a non-empty name"),
        (np.eye(2), ["a", "b"], {"renormalize": 1}, r"^renormalize must be True or False"),
    ],
)
def test_from_weights_errors_are_one_typed_line(weights, tokens, kwargs, message):
    with pytest.raises(InvalidInputError, match=message) as e:
        Attention.from_weights(weights, tokens, **kwargs)
    assert "\n" not in str(e.value)


def test_token_alignment_keys_come_from_the_text_not_the_display_labels():
    import attntopo as at

    def byte_level(text, pieces):
        n = len(pieces)
        return Attention.from_weights(
            _rows((1, 1, n, n)),
            [p for p, _, _ in pieces],
            text=text,
            offsets=[(a, b) for _, a, b in pieces],
        )

    A = byte_level(
        "theory, the theory", [("theory", 0, 6), (",", 6, 7), ("Ġthe", 7, 11), ("Ġtheory", 11, 18)]
    )
    B = byte_level(
        "theory of the theory",
        [("theory", 0, 6), ("Ġof", 6, 9), ("Ġthe", 9, 13), ("Ġtheory", 13, 20)],
    )
    assert A.labels[3] == "·theory" and B.labels[3] == "·theory"
    c = at.compare(A, B, alignment=[(0, 3), (3, 0), (2, 2)], alignment_units="token", scale=0.5)
    assert [(s.key, s.a, s.b) for s in c.shared_tokens] == [
        ("theory", 0, 3),
        ("theory#2", 3, 0),
        ("the", 2, 2),
    ]
