"""Head types on constructed attention matrices of known type (no model)."""

from __future__ import annotations

import numpy as np
import pytest

import attntopo as at
from attntopo.analyses._head_types import (
    BAND_WIDTH,
    FEATURES,
    LABEL_DESCRIPTIONS,
    LABELS,
    HeadTypes,
    _one_hot_js_distance,
    head_features,
    head_types,
    label_heads,
)
from attntopo.attention import Attention
from attntopo.distances import pairwise_distance
from attntopo.errors import InvalidInputError, OutOfRangeError
from attntopo.words import punctuation_mask, token_strings

# ------------------------------------------------------------ constructions
BIDIRECTIONAL = {  # kind -> expected label
    "identity": "self",
    "previous": "previous",
    "next": "next",
    "band": "banded",
    "column": "vertical",
    "cls_sink": "sink",
    "uniform": "broad",
    "scattered": "mixed",
}
CAUSAL = {
    "identity": "self",
    "previous": "previous",
    "band": "banded",
    "column": "vertical",
    "first_sink": "sink",
    "uniform": "broad",
    "scattered": "mixed",
}


def pattern(kind: str, n: int, causal: bool, rng, noise: float = 0.1) -> np.ndarray:
    """An (n, n) attention matrix of one type, mixed with ``noise`` of random attention."""
    i = np.arange(n)
    avail = (i[:, None] >= i[None, :]) if causal else np.ones((n, n), bool)
    P = np.zeros((n, n))
    if kind == "identity":
        P[i, i] = 1
    elif kind == "previous":
        P[i[1:], i[1:] - 1] = 1
        P[0, 0] = 1
    elif kind == "next":
        P[i[:-1], i[:-1] + 1] = 1
        P[-1, -1] = 1
    elif kind == "band":
        P = ((np.abs(i[:, None] - i[None, :]) <= BAND_WIDTH) & avail).astype(float)
    elif kind == "column":  # every query attends to one content token (not first, not special)
        c = n // 3
        P[:, c] = 1
        if causal:  # rows before c cannot see it: they spread over what they can see
            P[:c] = avail[:c]
    elif kind in ("cls_sink", "first_sink"):
        P[:, 0] = 1
    elif kind == "uniform":
        P = avail.astype(float)
    elif kind == "scattered":  # each query on 3 random far-away keys: no single pattern
        for r in range(n):
            choices = np.flatnonzero(avail[r] & (np.abs(i - r) > BAND_WIDTH))
            if choices.size == 0:
                choices = np.flatnonzero(avail[r])
            P[r, rng.choice(choices, size=min(3, choices.size), replace=False)] = 1
    P = P * avail
    P = P / P.sum(1, keepdims=True)
    R = rng.random((n, n)) * avail
    R = R / R.sum(1, keepdims=True)
    A = (1 - noise) * P + noise * R
    return A / A.sum(1, keepdims=True)


def make_att(kinds, n=32, causal=False, seed=0, noise=0.1, text="", offsets=None, special=None):
    rng = np.random.default_rng(seed)
    W = np.stack([pattern(k, n, causal, rng, noise) for k in kinds])[None]  # one layer
    if special is None:
        special = np.zeros(n, bool)
        if not causal:  # [CLS] ... [SEP]
            special[0] = special[-1] = True
    return Attention(
        weights=W,
        tokens=[f"t{j}" for j in range(n)],
        offsets=offsets or [(0, 0)] * n,
        special=special,
        causal=causal,
        model="synthetic",
        text=text,
    )


# ------------------------------------------------------------------ labels
@pytest.mark.parametrize("n", [24, 64])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_bidirectional_label_from_its_construction(n, seed):
    kinds = list(BIDIRECTIONAL)
    t = head_types(make_att(kinds, n=n, seed=seed))
    assert t.labels[0].tolist() == [BIDIRECTIONAL[k] for k in kinds]
    # each label of LABELS is produced by some construction
    assert set(BIDIRECTIONAL.values()) == set(LABELS)


@pytest.mark.parametrize("n", [24, 64])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_causal_label_from_its_construction(n, seed):
    kinds = list(CAUSAL)
    t = head_types(make_att(kinds, n=n, causal=True, seed=seed))
    assert t.labels[0].tolist() == [CAUSAL[k] for k in kinds]
    assert set(CAUSAL.values()) == set(LABELS) - {"next"}


def test_causal_models_never_get_next_token():
    t = head_types(make_att(["identity", "uniform"], causal=True))
    assert np.all(np.isnan(t.features["next"])) and np.all(np.isnan(t.features["dist_next"]))
    # even a features table claiming next-token mass is not labelled "next" when causal
    f = {k: np.array([0.0]) for k in ("sink", "self", "previous", "entropy_norm")}
    f.update(
        next=np.array([1.0]),
        band_error=np.array([0.9]),
        vertical_error=np.array([0.9]),
        fit_error_rel=np.array([0.95]),
    )
    assert label_heads(f, causal=True).tolist() == ["mixed"]
    assert label_heads(f, causal=False).tolist() == ["next"]


def test_fit_class_and_errors_on_band_and_column():
    t = head_types(make_att(["band", "column", "identity"], n=40))
    assert t.fit_class[0].tolist() == ["band", "vertical", "band"]
    f = t.features
    assert f["band_error"][0] < 0.15 and f["vertical_error"][1] < 0.15
    np.testing.assert_allclose(f["fit_error"], np.minimum(f["band_error"], f["vertical_error"]))
    np.testing.assert_allclose(f["band_error"], 1 - f["band"])
    assert t.vertical_k == 2 * BAND_WIDTH + 1
    assert head_types(make_att(["band"], causal=True)).vertical_k == BAND_WIDTH + 1
    assert f["max_column"][1] == 40 // 3


def test_exact_features_of_pure_patterns():
    n = 12
    t = head_types(make_att(["identity", "uniform", "cls_sink", "previous"], n=n, noise=0.0))
    f = {k: v for k, v in t.features.items()}
    # identity
    assert f["self"][0] == pytest.approx(1) and f["dist_identity"][0] == pytest.approx(0, abs=1e-7)
    assert f["entropy"][0] == pytest.approx(0) and f["band"][0] == pytest.approx(1)
    # uniform: every mass 1/n, entropy log2 n, distance to uniform 0
    assert f["entropy_norm"][1] == pytest.approx(1) and f["entropy"][1] == pytest.approx(np.log2(n))
    assert f["dist_uniform"][1] == pytest.approx(0, abs=1e-7)
    assert f["self"][1] == pytest.approx(1 / n) and f["max_column_mass"][1] == pytest.approx(1 / n)
    # uniform attention is the yardstick of the relative fit error; identity fits perfectly
    assert f["fit_error_rel"][1] == pytest.approx(1, abs=0.1) and f["fit_error_rel"][
        0
    ] == pytest.approx(0)
    kept = np.minimum(np.arange(n), 2) + 1 + np.minimum(n - 1 - np.arange(n), 2)
    assert f["band_error"][1] == pytest.approx(np.mean(1 - kept / n))
    assert f["vertical_error"][1] == pytest.approx(1 - 5 / n)
    assert f["special"][1] == pytest.approx(2 / n) and f["sink"][1] == pytest.approx(2 / n)
    # [CLS] sink: first and special and sink mass 1, one-hot JS distance to the identity is
    # 1 for every row but [CLS]'s own
    assert f["first"][2] == f["special"][2] == f["sink"][2] == pytest.approx(1)
    assert f["dist_first"][2] == pytest.approx(0, abs=1e-7)
    assert f["dist_identity"][2] == pytest.approx((n - 1) / n)
    # previous: rows i >= 1 on i - 1
    assert f["previous"][3] == pytest.approx(1) and f["dist_previous"][3] == pytest.approx(
        0, abs=1e-7
    )


def test_pattern_distances_against_pairwise_reference():
    rng = np.random.default_rng(4)
    att = make_att(["band"], n=10, noise=0.5, seed=4)
    A = att.weights[0, 0].astype(np.float64)
    f = head_features(att)
    ident = np.mean([pairwise_distance(A[i], np.eye(10)[i]) for i in range(10)])
    unif = np.mean([pairwise_distance(A[i], np.full(10, 0.1)) for i in range(10)])
    prev = np.mean([pairwise_distance(A[i], np.eye(10)[i - 1]) for i in range(1, 10)])
    nxt = np.mean([pairwise_distance(A[i], np.eye(10)[i + 1]) for i in range(9)])
    first = np.mean([pairwise_distance(A[i], np.eye(10)[0]) for i in range(10)])
    np.testing.assert_allclose(
        [
            f["dist_identity"][0, 0],
            f["dist_uniform"][0, 0],
            f["dist_previous"][0, 0],
            f["dist_next"][0, 0],
            f["dist_first"][0, 0],
        ],
        [ident, unif, prev, nxt, first],
        atol=1e-7,
    )
    t = rng.random(50)
    ref = [pairwise_distance([x, 1 - x], [1.0, 0.0]) for x in t]
    np.testing.assert_allclose(_one_hot_js_distance(t), ref, atol=1e-7)
    # causal uniform reference: row i uniform on 0..i; row 0 is not free
    catt = make_att(["band"], n=8, causal=True, noise=0.5, seed=2)
    C = catt.weights[0, 0].astype(np.float64)
    cu = np.mean(
        [
            pairwise_distance(C[i], np.r_[np.full(i + 1, 1 / (i + 1)), np.zeros(7 - i)])
            for i in range(1, 8)
        ]
    )
    assert head_features(catt)["dist_uniform"][0, 0] == pytest.approx(cu, abs=1e-7)
    ent = np.mean(
        [-(C[i][C[i] > 0] * np.log2(C[i][C[i] > 0])).sum() / np.log2(i + 1) for i in range(1, 8)]
    )
    assert head_features(catt)["entropy_norm"][0, 0] == pytest.approx(ent)


def test_thresholds_are_parameters():
    att = make_att(["uniform", "identity"])
    assert head_types(att).labels[0].tolist() == ["broad", "self"]
    t = head_types(att, broad_entropy=1.01, self_threshold=0.95)
    assert t.labels[0, 0] != "broad" and t.labels[0, 1] != "self"
    assert t.thresholds["broad_entropy"] == 1.01


# -------------------------------------------------------------- punctuation
def test_punctuation_found_from_text_and_from_tokenizer():
    text = "Hello, world! ¿Qué? $5"
    spans = [(0, 5), (5, 6), (7, 12), (12, 13), (14, 15), (15, 18), (18, 19), (20, 21), (21, 22)]
    n = len(spans) + 2
    offsets = [(0, 0)] + spans + [(0, 0)]
    special = np.zeros(n, bool)
    special[0] = special[-1] = True
    att = make_att(["uniform"], n=n, text=text, offsets=offsets, special=special)
    mask = punctuation_mask(att)
    # ',' '!' '¿' '?' are punctuation; '$' (a symbol), words, [CLS]/[SEP] are not
    assert mask.tolist() == [
        False,
        False,
        True,
        False,
        True,
        True,
        False,
        True,
        False,
        False,
        False,
    ]
    strings = token_strings(att)
    assert strings[1] == "Hello" and strings[0] == "t0"

    class FakeTokenizer:  # decodes ids the way a real tokenizer's decode would
        def decode(self, ids):
            return {0: "[CLS]", 1: " ...", 2: "word", 3: "[SEP]"}[ids[0]]

    att2 = Attention(
        weights=att.weights[:, :, :4, :4] / att.weights[:, :, :4, :4].sum(-1, keepdims=True),
        tokens=["[CLS]", "Ġ...", "word", "[SEP]"],
        offsets=[(0, 0)] * 4,
        special=np.array([True, False, False, True]),
        causal=False,
        model="x",
        token_ids=np.arange(4),
    )
    assert punctuation_mask(att2, tokenizer=FakeTokenizer()).tolist() == [False, True, False, False]
    t = head_types(att2, tokenizer=FakeTokenizer())
    A = att2.weights[0, 0].astype(np.float64)
    assert t.features["punctuation"][0] == pytest.approx(A[:, 1].mean())


# ------------------------------------------------------------ the result
def test_many_texts_average_and_table():
    a1 = make_att(["identity", "uniform"], n=20, seed=1)
    a2 = make_att(["identity", "uniform"], n=30, seed=2)
    t = head_types([a1, a2])
    f1, f2 = head_features(a1), head_features(a2)
    np.testing.assert_allclose(t.feature("self"), (f1["self"] + f2["self"]) / 2)
    assert np.all(t.features["max_column"] == -1) and t.n_texts == 2 and t.n_tokens == (20, 30)
    tab = t.table()
    assert list(tab)[:4] == ["layer", "head", "label", "fit_class"]
    assert set(FEATURES) <= set(tab) and len(tab["label"]) == 2
    rows = t.rows()
    assert rows[0]["label"] == "self" and rows[0]["layer"] == 0
    assert t.label(0, 1) == "broad" and t.heads_of("broad") == [(0, 1)]
    c = t.counts()
    assert set(c) == set(LABELS) and sum(c.values()) == 2
    assert set(LABEL_DESCRIPTIONS) == set(LABELS)
    assert "HeadTypes" in repr(t)
    with pytest.raises(OutOfRangeError):
        t.label(1, 0)
    with pytest.raises(InvalidInputError):
        t.heads_of("positional")
    with pytest.raises(InvalidInputError):
        t.feature("nope")


def test_save_load_round_trip(tmp_path):
    t = head_types(make_att(list(CAUSAL), causal=True))
    t.save(tmp_path / "types")
    back = at.load_result(tmp_path / "types")
    assert isinstance(back, HeadTypes) and back == t


def test_errors():
    with pytest.raises(InvalidInputError):
        head_types([])
    with pytest.raises(InvalidInputError):
        head_types(np.ones((1, 1, 3, 3)) / 3)
    with pytest.raises(InvalidInputError, match="band_width"):
        head_types(make_att(["identity"]), band_width=-1)
    with pytest.raises(InvalidInputError, match="vertical_k"):
        head_types(make_att(["identity"]), vertical_k=0)
    one = Attention(
        weights=np.ones((1, 1, 1, 1)),
        tokens=["a"],
        offsets=[(0, 1)],
        special=np.zeros(1, bool),
        causal=False,
        model="x",
    )
    with pytest.raises(InvalidInputError, match="at least 2 tokens"):
        head_types(one)
    with pytest.raises(InvalidInputError, match="same model"):
        head_types([make_att(["identity"]), make_att(["identity", "uniform"])])
