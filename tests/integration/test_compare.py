"""Comparing texts and phrases: token matching, numbers against independent computations
(SciPy's minimum spanning tree, gudhi's bottleneck / hera Wasserstein, brute force), the
real packaged models, translations with an alignment, save/load."""

from __future__ import annotations

import itertools
import re

import gudhi
import gudhi.hera
import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree

import attntopo as at
from _reference import mst_minimax
from _tolerances import ATTENTION_ATOL
from attntopo import Comparison, PhraseTopology, compare, phrase_topology
from attntopo.attention import Attention
from attntopo.errors import InvalidInputError, OutOfRangeError
from attntopo.words import find_phrase, normalize_token, split_words, word_tokens

PAPER_A = "Quantum information theory allows us to study attention using entanglement"
PAPER_B = "Classical information theory studies entropy and coding of messages"


# ----------------------------------------------------------------------- helpers
def fake_attention(text, pieces=None, L=2, H=3, seed=0, model="fake", bos=True):
    """An Attention with [CLS] … [SEP] around tokens (default: one per word) and random rows.

    ``pieces``: list of (token string, start, end) to force a tokenization.
    """
    if pieces is None:
        pieces = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", text)]
    toks = [p[0] for p in pieces]
    offs = [(p[1], p[2]) for p in pieces]
    special = [False] * len(toks)
    if bos:
        toks = ["[CLS]"] + toks + ["[SEP]"]
        offs = [(0, 0)] + offs + [(0, 0)]
        special = [True] + special + [True]
    n = len(toks)
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(n, 0.4), size=(L, H, n)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    return Attention(
        weights=w,
        tokens=toks,
        offsets=offs,
        special=np.array(special),
        causal=False,
        model=model,
        text=text,
    )


def gudhi_distances(da, db, d):
    """bottleneck (gudhi, exact) and W1/W2 (hera, tight delta) of one dimension."""
    a, b = np.asarray(da[d]), np.asarray(db[d])
    fa, fb = a[np.isfinite(a[:, 1])], b[np.isfinite(b[:, 1])]
    ia, ib = np.sort(a[~np.isfinite(a[:, 1]), 0]), np.sort(b[~np.isfinite(b[:, 1]), 0])
    assert len(ia) == len(ib)
    inf_part = np.abs(ia - ib)
    bn = max(gudhi.bottleneck_distance(fa, fb, 0.0), inf_part.max(initial=0.0))
    w = []
    for p in (1, 2):
        x = gudhi.hera.wasserstein_distance(fa, fb, order=p, internal_p=np.inf, delta=1e-9)
        w.append((x**p + np.sum(inf_part**p)) ** (1 / p))
    return [bn] + w


# ------------------------------------------------------------------ word matching
def test_split_words_and_normalize():
    assert [w for _, _, w in split_words("Hello, l'information!")] == [
        "Hello",
        ",",
        "l",
        "'",
        "information",
        "!",
    ]
    assert normalize_token("##ment") == "ment"
    assert normalize_token("ĠTheory") == "theory"
    assert normalize_token("▁Ｔheory ") == "theory"  # NFKC folds the full-width T


def test_subword_splits_match_at_word_level():
    A = fake_attention(
        "quantum entanglement",
        [("quantum", 0, 7), ("en", 8, 10), ("##tangle", 10, 16), ("##ment", 16, 20)],
    )
    B = fake_attention("Entanglement is", [("entangle", 0, 8), ("##ment", 8, 12), ("is", 13, 15)])
    c = compare(A, B, scale=0.5)
    assert [s.key for s in c.shared_tokens] == ["entanglement"]
    s = c.shared_tokens[0]
    assert (s.a, s.b) == (2, 1) and s.tokens_a == (2, 3, 4) and s.tokens_b == (1, 2)
    assert (s.text_a, s.text_b, s.word_a, s.word_b) == ("entanglement", "Entanglement", 1, 0)
    assert word_tokens(A) == [(0, "quantum", (1,)), (1, "entanglement", (2, 3, 4))]


def test_occurrences_match_in_order_and_specials_excluded_unless_asked():
    A = fake_attention("the cat saw the dog")
    B = fake_attention("The dog and the cat")
    c = compare(A, B, scale=0.5)
    assert c.keys == ["the", "cat", "the#2", "dog"]
    pos = {s.key: (s.a, s.b) for s in c.shared_tokens}
    # tokens: [CLS] the cat saw the dog [SEP] / [CLS] The dog and the cat [SEP]
    assert pos == {"the": (1, 1), "cat": (2, 5), "the#2": (4, 4), "dog": (5, 2)}
    c2 = compare(A, B, scale=0.5, include_special=True)
    assert c2.keys[:2] == ["[CLS]", "[SEP]"] and c2.keys[2:] == c.keys
    assert (c2.shared_tokens[1].a, c2.shared_tokens[1].b) == (6, 6)
    c3 = compare(A, B, scale=0.5, drop_special=True, include_special=True)
    assert c3.keys == c.keys and c3.a.attention.n_tokens == 5


def test_byte_level_offsets_with_leading_space():
    # SmolLM2-style: "Ġtheory" with offsets that include the space before the word
    A = fake_attention(
        "Quantum information theory",
        [("Quantum", 0, 7), ("Ġinformation", 7, 19), ("Ġtheory", 19, 26)],
        bos=False,
    )
    B = fake_attention(
        "information theory rocks",
        [("information", 0, 11), ("Ġtheory", 11, 18), ("Ġ", 18, 19), ("rocks", 19, 24)],
        bos=False,
    )
    c = compare(A, B, scale=0.5)
    assert [(s.key, s.a, s.b) for s in c.shared_tokens] == [("information", 1, 0), ("theory", 2, 1)]


def test_fallback_without_offsets_uses_markers():
    A = fake_attention("x", [("en", 0, 0), ("##tangle", 0, 0), ("cat", 0, 0)])
    B = fake_attention("y", [("cat", 0, 0), ("entangle", 0, 0)])
    c = compare(A, B, scale=0.5)
    assert [(s.key, s.a, s.b) for s in c.shared_tokens] == [("entangle", 1, 2), ("cat", 3, 1)]
    assert word_tokens(A)[0] == (-1, "entangle", (1, 2))


# --------------------------------------------------------- numbers, independently
@pytest.fixture(scope="module")
def fake_pair():
    A = fake_attention("the cat saw the dog near the old red barn", seed=1)
    B = fake_attention("a dog and the cat sat by the red barn", seed=2)
    return A, B


@pytest.mark.parametrize("threshold", [None, 0.45])
def test_numbers_against_independent_computations(fake_pair, threshold):
    A, B = fake_pair
    c = compare(A, B, scale=threshold, maxdim=1)
    DA, DB = at.token_distances(A), at.token_distances(B)
    np.testing.assert_array_equal(c.a.distances, DA)
    keys = c.keys
    assert keys == ["the", "cat", "the#2", "dog", "red", "barn"]
    m = len(keys)
    L, H = 2, 3
    for i, j in itertools.product(range(L), range(H)):
        da, db = at.persistence(DA[i, j]), at.persistence(DB[i, j])
        assert c.a.diagrams[i][j] == da and c.b.diagrams[i][j] == db
        # adaptive scale = median of the pooled minimum-spanning-tree edge lengths
        mst = np.r_[minimum_spanning_tree(DA[i, j]).data, minimum_spanning_tree(DB[i, j]).data]
        eps = np.median(mst) if threshold is None else threshold
        assert c.scales[i, j] == pytest.approx(eps, abs=1e-15)
        Ua, Ub = mst_minimax(DA[i, j]), mst_minimax(DB[i, j])
        for p, q in itertools.combinations(range(m), 2):
            sp, sq = c.shared_tokens[p], c.shared_tokens[q]
            r = c.pair(keys[p], keys[q], i, j)
            assert (
                r["edge_birth_a"] == DA[i, j, sp.a, sq.a]
                and r["edge_birth_b"] == DB[i, j, sp.b, sq.b]
            )
            assert r["connection_a"] == pytest.approx(Ua[sp.a, sq.a], abs=1e-15)
            assert r["connection_b"] == pytest.approx(Ub[sp.b, sq.b], abs=1e-15)
            assert r["connection_a"] <= r["edge_birth_a"]
        # shared simplices: brute force over shared keys
        ia, ib = c.index_a, c.index_b
        exp = []
        for k in (2, 3):
            for s in itertools.combinations(range(m), k):
                ba = max(DA[i, j, ia[x], ia[y]] for x, y in itertools.combinations(s, 2))
                bb = max(DB[i, j, ib[x], ib[y]] for x, y in itertools.combinations(s, 2))
                if ba <= eps and bb <= eps:
                    exp.append((tuple(keys[x] for x in s), ba, bb))
        got = [(s["tokens"], s["birth_a"], s["birth_b"]) for s in c.shared_simplices(i, j)]
        assert got == exp
        assert c.counts["shared_edges"][i, j] == sum(len(t) == 2 for t, _, _ in exp)
        assert c.counts["shared_triangles"][i, j] == sum(len(t) == 3 for t, _, _ in exp)
        assert c.counts["edges_a"][i, j] == sum(
            DA[i, j, ia[x], ia[y]] <= eps for x, y in itertools.combinations(range(m), 2)
        )
        # diagram distances per dimension against gudhi / hera
        for d in range(2):
            ref = gudhi_distances(da, db, d)
            got = [
                c.diagram_distances[n][i, j, d]
                for n in ("bottleneck", "wasserstein1", "wasserstein2")
            ]
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-12)
        # shared-token diagrams: persistence of the sub-matrices
        sa = at.persistence(DA[i, j][np.ix_(ia, ia)])
        sb = at.persistence(DB[i, j][np.ix_(ib, ib)])
        assert c.shared_diagrams_a[i][j] == sa and c.shared_diagrams_b[i][j] == sb
        assert c.shared_diagram_distances["bottleneck"][i, j, 0] == pytest.approx(
            gudhi_distances(sa, sb, 0)[0]
        )


def test_first_triangle_brute_force(fake_pair):
    A, B = fake_pair
    c = compare(A, B, scale=0.4)
    t = c.first_triangle("cat", "dog", 1, 2)
    cat, dog = (next(s for s in c.shared_tokens if s.key == k) for k in ("cat", "dog"))
    for side, an in (("a", c.a), ("b", c.b)):
        D = an.distances[1, 2]
        x, y = getattr(cat, side), getattr(dog, side)
        best = min((max(D[x, y], D[x, k], D[y, k]), k) for k in range(len(D)) if k not in (x, y))
        assert t[f"birth_{side}"] == best[0] and t[f"third_{side}_index"] == best[1]
        assert t[f"third_{side}"] == an.attention.labels[best[1]]


def test_tables_rankings_and_summary(fake_pair):
    A, B = fake_pair
    c = compare(A, B, scale=0.45)
    g = c.grid(name="bottleneck", dim=0)
    assert g.shape == (2, 3)
    sim = c.most_similar_heads(k=3, dim=0)
    dif = c.most_different_heads(k=3, dim=0)
    flat = sorted(((g[i, j], i, j) for i in range(2) for j in range(3)))
    assert [(li, h) for li, h, _ in sim] == [(i, j) for _, i, j in flat[:3]]
    assert [(li, h) for li, h, _ in dif][0] == (flat[-1][1], flat[-1][2])
    top = c.most_similar_heads(k=1, by="shared_triangles")[0]
    assert top[2] == c.counts["shared_triangles"].max()
    s = c.summary()
    assert len(s["layer"]) == 6 and "bottleneck_h1" in s and "shared_wasserstein2_h0" in s
    np.testing.assert_array_equal(s["shared_edges"], c.counts["shared_edges"].ravel())
    assert c.grid(name="scale").shape == (2, 3)
    with pytest.raises(InvalidInputError, match="unknown table"):
        c.grid(name="nope")
    with pytest.raises(InvalidInputError, match="by must be"):
        c.most_similar_heads(k=2, by="nope")
    with pytest.raises(InvalidInputError, match="dim"):
        c.grid(name="bottleneck", dim=2)
    with pytest.raises(InvalidInputError, match="layer= and head="):
        c.scale()
    with pytest.raises(InvalidInputError, match="not a shared token"):
        c.pair("cat", "zebra", 0, 0)
    rep = c.head_report(1, 2)
    assert rep["layer"] == 1 and len(rep["pairs"]) == 15


def test_single_head_selection(fake_pair):
    A, B = fake_pair
    c = compare(A, B, layers=1, heads=[2])
    assert c.layers == (1,) and c.heads == (2,) and c.scales.shape == (1, 1)
    full = compare(A, B)
    assert c.scale() == full.scale(1, 2)
    assert c.pair("cat", "dog") == full.pair("cat", "dog", 1, 2)
    with pytest.raises(OutOfRangeError):
        compare(A, B, layers=5)


def test_no_shared_tokens():
    c = compare(fake_attention("alpha beta"), fake_attention("gamma delta"), scale=0.3)
    assert c.shared_tokens == [] and c.shared_diagrams_a is None
    assert np.isnan(c.grid(name="bottleneck", scope="shared")).all()
    assert (c.counts["shared_edges"] == 0).all() and c.pairs(0, 0) == []
    assert len(c.most_similar_heads(k=2, scope="shared")) == 2


def test_save_load_round_trip(fake_pair, tmp_path):
    A, B = fake_pair
    c = compare(A, B, scale=0.4)
    c.save(tmp_path / "cmp")
    back = at.load_result(tmp_path / "cmp")
    assert isinstance(back, Comparison) and back == c
    assert back.pair("cat", "dog", 1, 1) == c.pair("cat", "dog", 1, 1)
    c0 = compare(fake_attention("alpha beta"), fake_attention("gamma delta"))
    c0.save(tmp_path / "c0")
    assert at.load_result(tmp_path / "c0") == c0


def test_validation_errors(fake_pair):
    A, B = fake_pair
    for bad in (-1, float("nan"), float("inf"), "x", True):
        with pytest.raises(InvalidInputError, match="scale"):
            compare(A, B, scale=bad)
    with pytest.raises(InvalidInputError, match="metric"):
        compare(A, B, metric="cosine")
    with pytest.raises(InvalidInputError, match="maxdim"):
        compare(A, B, maxdim=3)
    with pytest.raises(InvalidInputError, match="alignment_units"):
        compare(A, B, alignment=[(0, 0)], alignment_units="char")
    with pytest.raises(InvalidInputError, match="one-to-one"):
        compare(A, B, alignment=[(0, 0), (0, 1)])
    with pytest.raises(InvalidInputError, match="pairs"):
        compare(A, B, alignment=[(0, 0, 1)])
    with pytest.raises(InvalidInputError, match="empty"):
        compare(A, B, alignment=[])
    with pytest.raises(OutOfRangeError, match="word 40"):
        compare(A, B, alignment=[(40, 0)])
    with pytest.raises(InvalidInputError, match="mix"):
        compare(A, "a text", scale=0.2)
    with pytest.raises(InvalidInputError, match="same layers"):
        compare(A, fake_attention("x y", L=1), scale=0.2)


def test_token_alignment(fake_pair):
    A, B = fake_pair
    c = compare(A, B, alignment=[(2, 5), (3, 1)], alignment_units="token", scale=0.4)
    assert [(s.key, s.a, s.b) for s in c.shared_tokens] == [("cat", 2, 5), ("saw/a", 3, 1)]
    assert c.pair(0, 1, 0, 0)["edge_birth_a"] == c.a.distances[0, 0, 2, 3]


# -------------------------------------------------------------------- phrases
def test_phrase_span_never_every_matching_token():
    ctx = [
        "the cat and the theory of the mind",
        "The Theory of everything",
        "we need the   theory now",
    ]
    atts = [fake_attention(t, seed=k) for k, t in enumerate(ctx)]
    p = phrase_topology("the theory", atts, maxdim=1)
    assert isinstance(p, PhraseTopology)
    # first context: the *second* "the" only (token 4) and "theory" (5), not the other "the"s
    assert p.token_indices == [[4, 5], [1, 2], [3, 4]]
    assert p.token_labels[1] == ["The", "Theory"]
    assert p.spans[2] == (8, 20)
    for c, att in enumerate(atts):
        D = at.token_distances(att)
        idx = p.token_indices[c]
        np.testing.assert_array_equal(p.sub_distances[c], D[:, :, idx][:, :, :, idx])
        assert p.diagram(c, 1, 2) == at.persistence(D[1, 2][np.ix_(idx, idx)])
    M = p.matrix(1, 2, dim=0)
    assert M.shape == (3, 3) and np.allclose(M, M.T) and np.all(np.diag(M) == 0)
    assert M[0, 1] == pytest.approx(gudhi_distances(p.diagram(0, 1, 2), p.diagram(1, 1, 2), 0)[0])
    W = p.matrix(1, 2, dim=0, by="wasserstein2")
    assert W[0, 2] == pytest.approx(
        gudhi_distances(p.diagram(0, 1, 2), p.diagram(2, 1, 2), 0)[2], rel=1e-6
    )
    spread = p.spread()
    assert spread.shape == (2, 3)
    assert spread[1, 2] == pytest.approx(M[np.triu_indices(3, 1)].mean())
    best = p.most_stable_heads(k=2)
    assert best[0][2] == pytest.approx(np.nanmin(spread))


def test_phrase_errors_and_occurrence():
    atts = [fake_attention("the theory and the theory"), fake_attention("no such words")]
    with pytest.raises(InvalidInputError, match="context 1: phrase 'the theory' does not occur"):
        phrase_topology("the theory", atts)
    p = phrase_topology("the theory", atts[:1], occurrence=1)
    assert p.token_indices == [[4, 5]] and np.isnan(p.spread()).all()
    with pytest.raises(InvalidInputError, match="occurs 2 time"):
        phrase_topology("the theory", atts[:1], occurrence=2)
    with pytest.raises(InvalidInputError, match="phrase is empty or only whitespace"):
        phrase_topology("  ", atts)
    with pytest.raises(InvalidInputError, match="phrase must be a string, got int"):
        phrase_topology(3, atts)
    with pytest.raises(InvalidInputError, match="list of strings"):
        phrase_topology("x", "x y")
    assert find_phrase("Information  Theory", "quantum information theory") == (8, 26)


def test_phrase_save_load(tmp_path):
    atts = [fake_attention("a b the theory c", seed=3), fake_attention("the theory d e", seed=4)]
    p = phrase_topology("the theory", atts)
    p.save(tmp_path / "ph")
    assert at.load_result(tmp_path / "ph") == p
    assert p.to_dict()["contexts"][0]["tokens"] == ["the", "theory"]


# ---------------------------------------------------------------- real models
@pytest.mark.forward_compare
@pytest.mark.slow
def test_paper_example_minilm(minilm):
    c = compare(PAPER_A, PAPER_B, model=minilm)
    n_a, n_b = len(minilm.tokenize(PAPER_A).ids), len(minilm.tokenize(PAPER_B).ids)
    assert c.a.distances.shape == (6, 12, n_a, n_a) and c.b.distances.shape == (6, 12, n_b, n_b)
    assert c.keys == ["information", "theory"]
    # one batched pass gives the same weights as running each text alone, within float32 round-off
    np.testing.assert_allclose(
        c.a.attention.weights, minilm.attention(PAPER_A).weights, atol=ATTENTION_ATOL, rtol=0
    )
    r = c.pair("information", "theory", 1, 3)
    assert 0 < r["connection_a"] <= r["edge_birth_a"] <= 1
    assert c.grid(name="bottleneck", dim=0).shape == (6, 12)
    assert len(c.most_different_heads(k=5)) == 5
    d = c.to_dict()
    assert d["shared_tokens"][0]["key"] == "information" and len(d["summary"]) == 72


@pytest.mark.slow
def test_translation_with_word_alignment_minilm(minilm):
    # MiniLM is English-only: the numbers mean little, but the mechanics are those of a
    # multilingual model (any hub id works the same way)
    en = "Information theory studies entropy"
    fr = "La théorie de l'information étudie l'entropie"
    words_fr = [w for _, _, w in split_words(fr)]
    assert words_fr == [
        "La",
        "théorie",
        "de",
        "l",
        "'",
        "information",
        "étudie",
        "l",
        "'",
        "entropie",
    ]
    c = compare(en, fr, model=minilm, alignment=[(0, 5), (1, 1), (2, 6), (3, 9)], layers=2)
    assert c.keys == ["information", "theory/théorie", "studies/étudie", "entropy/entropie"]
    att_b = c.b.attention
    spans_fr = split_words(fr)
    for s, w in zip(c.shared_tokens, [5, 1, 6, 9]):
        start, end, _ = spans_fr[w]
        assert s.word_b == w
        a0, b0 = att_b.offsets[s.b]
        assert a0 == start  # the representative token starts the aligned word
        assert all(start <= att_b.offsets[t][0] < end for t in s.tokens_b)
    assert c.layers == (2,) and c.heads == tuple(range(12))
    # without the alignment only "information" matches
    assert compare(en, fr, model=minilm, layers=2).keys == ["information"]


@pytest.mark.slow
def test_phrase_topology_minilm(minilm):
    ctx = [PAPER_A, PAPER_B, "Shannon founded information theory in 1948."]
    p = phrase_topology("Information Theory", ctx, model=minilm, layers=[1, 2])
    assert p.token_labels == [["information", "theory"]] * 3
    assert p.diagram_distances["bottleneck"].shape == (2, 12, 2, 3, 3)
    with pytest.raises(InvalidInputError, match="context 0"):
        phrase_topology("entropy", ctx, model=minilm)


@pytest.mark.slow
@pytest.mark.smollm2
def test_compare_smollm2(smollm2):
    c = compare(PAPER_A, PAPER_B, model=smollm2, layers=[0, 29], heads=[0, 8])
    assert c.keys == ["information", "theory"]
    assert c.a.attention.causal and c.a.distances.shape[:2] == (2, 2)
    r = c.pair("information", "theory", 29, 8)
    assert 0 < r["connection_a"] <= r["edge_birth_a"] <= 1
    p = phrase_topology("information theory", [PAPER_A, PAPER_B], model=smollm2, layers=5, heads=0)
    assert [len(t) for t in p.token_indices] == [2, 2]
