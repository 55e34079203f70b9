"""The default ranking of heads: the dimension it uses has information, ties stay ties.

Synthetic attentions, no model.  Texts of three tokens have no H1 at all (three points: any
loop is filled by the triangle), so every H1 distance between two such texts is 0 — the
situation of short texts where a ranking by H1 was a ranking of zeros (issue 15, item 4).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import rankdata

import attntopo as at
from attntopo.analyses import RANKING_RULE
from attntopo.analyses._ranking import informative_dim, rank_order
from attntopo.attention import Attention


def _attention(
    words: list[str],
    rng: np.random.Generator,
    L: int = 2,
    H: int = 3,
    same_as: Attention | None = None,
    copy_heads=(),
) -> Attention:
    n = len(words)
    W = rng.dirichlet(np.full(n, 0.5), size=(L, H, n)).astype(np.float32)
    for i, j in copy_heads:  # the same rows as `same_as` in these heads: identical diagrams
        W[i, j] = same_as.weights[i, j]
    text = " ".join(words)
    offsets, pos = [], 0
    for w in words:
        offsets.append((pos, pos + len(w)))
        pos += len(w) + 1
    return Attention(
        weights=W,
        tokens=list(words),
        offsets=offsets,
        special=np.zeros(n, dtype=bool),
        causal=False,
        model="synthetic",
        text=text,
    )


@pytest.fixture(scope="module")
def short_pair() -> at.Comparison:
    """Two three-token texts: every H1 distance is 0; heads (0, 1) and (1, 2) identical."""
    rng = np.random.default_rng(7)
    a = _attention(["the", "cat", "sat"], rng)
    b = _attention(["a", "cat", "sat"], rng, same_as=a, copy_heads=[(0, 1), (1, 2)])
    return at.compare(a, b, n_jobs=1)


@pytest.fixture(scope="module")
def long_pair() -> at.Comparison:
    rng = np.random.default_rng(11)
    words = "the old cat sat on the warm mat while the dog slept by the door".split()
    a = _attention(words, rng)
    b = _attention(words[::-1], rng)
    return at.compare(a, b, n_jobs=1)


# ------------------------------------------------------------------- the rule
def test_informative_dim_rule():
    v = np.zeros((2, 3, 3))  # 6 heads, H0..H2
    assert informative_dim(v) == 0  # nothing differs: H0
    v[..., 0] = np.arange(6).reshape(2, 3)
    assert informative_dim(v) == 0  # H1, H2 all zero
    v[0, :, 1] = [0.5, 0.6, 0.7]
    assert informative_dim(v) == 1  # H1: 0 shared by 3 of 6, half: not more
    v[0, :, 1] = [0.5, 0.0, 0.0]
    assert informative_dim(v) == 0  # 0 shared by 5 of 6
    v[1, 0, 1] = 0.8
    assert informative_dim(v) == 0  # 0 shared by 4 of 6
    v[1, 1, 1] = 0.9
    assert informative_dim(v) == 1  # 0 shared by 3 of 6: half
    v[..., 2] = 0.3
    assert informative_dim(v) == 1  # H2 constant (not zero): no information
    v[:, :, 2] = [[0.1, 0.2, 0.3], [0.4, np.nan, np.nan]]
    assert informative_dim(v) == 2  # NaN left out: 4 distinct values
    v[1, 0, 2] = 0.1
    assert informative_dim(v) == 2  # 0.1 shared by 2 of 4: half, not more
    v[0, 1, 2] = 0.1
    assert informative_dim(v) == 1  # 0.1 shared by 3 of 4
    assert informative_dim(np.full((4, 2), np.nan)) == 0
    assert informative_dim(np.array([[0.0, 1.0]])) == 0  # one head: nothing to order
    assert "more than half of the heads" in RANKING_RULE


def _majority_rule(v: np.ndarray) -> int:
    """The rule written out with Counter, dimension by dimension from the top."""
    from collections import Counter

    for d in range(v.shape[-1] - 1, 0, -1):
        col = [x for x in v[..., d].ravel().tolist() if x == x]
        if len(col) >= 2 and 2 * max(Counter(col).values()) <= len(col):
            return d
    return 0


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 12), st.integers(1, 3)),
        elements=st.sampled_from([0.0, 0.0, 0.1, 0.2, 0.3, np.nan]),
    )
)
def test_informative_dim_matches_the_rule_written_out(v):
    assert informative_dim(v) == _majority_rule(v)


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 30), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0, np.nan])),
    st.integers(0, 2**32 - 1),
)
def test_rank_order_is_rankdata_min_with_nan_last(key, seed):
    tie = np.random.default_rng(seed).random(key.size)
    order, ranks = rank_order(key, tie)
    finite = ~np.isnan(key)
    np.testing.assert_array_equal(ranks[finite], rankdata(key[finite], method="min"))
    assert (ranks[~finite] == finite.sum() + 1).all()
    # the order lists ranks from the best, NaN last; within a tie the tiebreak decides
    assert (np.diff(ranks[order]) >= 0).all()
    for r in np.unique(ranks):
        members = order[ranks[order] == r]
        assert (np.diff(tie[members]) >= 0).all()
    # the tiebreak never changes a rank
    np.testing.assert_array_equal(rank_order(key, -tie)[1], ranks)


# ----------------------------------------------------------- comparison of texts
def test_short_texts_rank_by_h0_not_by_zeros(short_pair):
    c = short_pair
    b = c.diagram_distances["bottleneck"]
    assert (b[..., 1] == 0).all() and np.unique(b[..., 0]).size > 1  # every H1 is 0
    assert c.ranking_dim == 0 and c.default_dim() == 0
    sim = c.most_similar_heads(k=6)
    assert [v for _, _, v in sim] == sorted(b[..., 0].ravel().tolist())
    np.testing.assert_array_equal(c.grid(name="bottleneck"), b[..., 0])
    s = c.summary()
    assert set(s["rank_by"].tolist()) == {"bottleneck_h0"}
    np.testing.assert_array_equal(s["rank"], rankdata(b[..., 0].ravel(), method="min"))
    d = json.loads(json.dumps(c.to_dict(k=6), allow_nan=False))
    assert d["ranking"] == {
        "by": "bottleneck",
        "dim": 0,
        "column": "bottleneck_h0",
        "default": True,
        "rule": RANKING_RULE,
    }
    # an explicit dimension is still obeyed, and the JSON says it was not the default
    assert [v for _, _, v in c.most_similar_heads(k=3, dim=1)] == [0.0, 0.0, 0.0]
    assert c.to_dict(dim=1)["ranking"]["default"] is False


def test_ties_share_a_rank(short_pair):
    c = short_pair
    r = c.ranking()
    # heads (0, 1) and (1, 2) have identical attention in both texts: distance 0, tied first
    assert {(int(r["layer"][t]), int(r["head"][t])) for t in range(2)} == {(0, 1), (1, 2)}
    assert r["value"][:2].tolist() == [0.0, 0.0]
    assert r["rank"][:2].tolist() == [1, 1] and r["n_tied"][:2].tolist() == [2, 2]
    assert r["rank"][2] == 3 and r["n_tied"][2] == 1
    d = c.to_dict(k=3)
    assert [e[3:] for e in d["most_similar_heads"]] == [[1, 2], [1, 2], [3, 1]]
    # in H1 every head ties
    r1 = c.ranking(dim=1)
    assert (r1["rank"] == 1).all() and (r1["n_tied"] == 6).all()
    # the most different: the largest distance first, ranks of the reversed order
    rd = c.ranking(similar=False)
    assert rd["value"][0] == c.grid(name="bottleneck", dim=0).max() and rd["rank"][0] == 1
    assert rd["rank"][-2:].tolist() == [5, 5]


def test_longer_texts_rank_by_h1(long_pair):
    c = long_pair
    b = c.diagram_distances["bottleneck"]
    assert np.unique(b[..., 1]).size > 1
    assert c.ranking_dim == 1
    assert [v for _, _, v in c.most_similar_heads(k=3)] == sorted(b[..., 1].ravel())[:3]
    assert c.to_dict()["ranking"]["column"] == "bottleneck_h1"


def test_counts_and_shared_scope(short_pair):
    c = short_pair
    r = c.ranking(by="shared_edges")
    v = r["value"]
    assert (np.diff(v) <= 0).all()
    np.testing.assert_array_equal(r["rank"], rankdata(-v, method="min"))
    assert c.default_dim(scope="shared") in (0, 1)
    with pytest.raises(at.errors.InvalidInputError, match="by must be"):
        c.default_dim(by="shared_edges")


def test_mostly_zero_h1_ranks_by_h0(long_pair):
    """Some heads with an H1 difference, most without (two six-token MiniLM texts: 59–68 of 72
    zeros): the top of an H1 ranking would be one long tie, so H0 ranks."""
    import dataclasses

    c = long_pair
    dist = {k: v.copy() for k, v in c.diagram_distances.items()}
    for v in dist.values():
        v[1:, :, 1] = 0.0  # layer 1: 3 of 6 heads keep their H1 value -> half: still H1
    assert dataclasses.replace(c, diagram_distances=dist).ranking_dim == 1
    for v in dist.values():
        v[0, 0, 1] = 0.0  # 4 of 6 heads tie at 0
    mostly = dataclasses.replace(c, diagram_distances=dist)
    assert mostly.ranking_dim == 0 and mostly.to_dict()["ranking"]["dim"] == 0
    assert [v for _, _, v in mostly.most_similar_heads(k=2)] == sorted(
        dist["bottleneck"][..., 0].ravel()
    )[:2]


# ------------------------------------------------------------- one text's heads
def test_analysis_short_text_ranks_by_h0():
    """Three tokens: no head has an H1 bar, every max_persistence_h1 is 0: the heads are
    ranked, reported and drawn by their longest H0 bar."""
    from attntopo._html import analysis_html, default_heads
    from attntopo.plots.bundles import analysis_bundle

    rng = np.random.default_rng(3)
    an = at.analyze(_attention(["the", "cat", "sat"], rng), n_jobs=1)
    s = an.summary()
    assert (s["max_persistence_h1"] == 0).all() and an.ranking_dim == 0
    h0 = s["max_persistence_h0"]
    top = an.most_persistent_heads(k=3)
    assert [v for _, _, v in top] == sorted(h0.tolist(), reverse=True)[:3]
    assert default_heads(an, n=2) == [(lay, hd) for lay, hd, _ in top[:2]]
    assert analysis_bundle(an).heads == default_heads(an, n=3)
    assert "max persistence h0" in analysis_html(an)
    r = an.ranking(dim=1)
    assert (r["rank"] == 1).all() and (r["n_tied"] == 6).all()  # all tied in H1
    np.testing.assert_array_equal(
        an.ranking()["rank"], rankdata(-an.ranking()["value"], method="min")
    )
    with pytest.raises(at.errors.InvalidInputError, match="unknown statistic"):
        an.ranking(stat="nope")


def test_analysis_longer_text_ranks_by_h1():
    rng = np.random.default_rng(5)
    words = "the old cat sat on the warm mat while the dog slept by the door".split()
    an = at.analyze(_attention(words, rng), n_jobs=1)
    m1 = an.summary()["max_persistence_h1"]
    assert 2 * np.unique(m1, return_counts=True)[1].max() <= m1.size and an.ranking_dim == 1
    assert an.most_persistent_heads(k=1)[0][2] == m1.max()
