"""The template and prompt sets against direct formulas, scipy's MST and gudhi."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree

from _feature_refs import attention_matrices, random_attention
from attntopo.distances import token_distances
from attntopo.features import TEMPLATES, spanning_forest_length, template_features
from attntopo.features._prompt import prompt_features
from attntopo.features._template import punctuation_mask

gudhi = pytest.importorskip("gudhi")


def _template_reference(A: np.ndarray, punct: np.ndarray) -> list[float]:
    """la-tda's template distances of one matrix, each template built by hand."""
    n = A.shape[0]
    temps = []
    for name in TEMPLATES:
        T = np.zeros((n, n))
        for i in range(n):
            if name == "identity":
                T[i, i] = 1
            elif name == "prev" and i >= 1:
                T[i, i - 1] = 1
            elif name == "next" and i + 1 < n:
                T[i, i + 1] = 1
            elif name == "first":
                T[i, 0] = 1
            elif name == "last":
                T[i, n - 1] = 1
            elif name == "punct" and punct.any():
                T[i, punct] = 1 / punct.sum()
        temps.append(T)
    return [
        np.linalg.norm(A - T, "fro")
        / np.sqrt(np.linalg.norm(A, "fro") ** 2 + np.linalg.norm(T, "fro") ** 2)
        for T in temps
    ]


@settings(max_examples=100, deadline=None)
@given(attention_matrices(max_n=9), st.integers(0, 2**31 - 1))
def test_template_distances_equal_direct_formula(A, seed):
    punct = np.random.default_rng(seed).random(A.shape[-1]) < 0.3
    got = template_features(A, punct)
    assert got.shape == (A.shape[0], len(TEMPLATES))
    assert np.all((got >= 0) & (got <= 1 + 1e-15))
    for b in range(A.shape[0]):
        np.testing.assert_allclose(got[b], _template_reference(A[b], punct), rtol=1e-13, atol=1e-15)


def test_templates_are_at_distance_zero_from_themselves():
    n = 6
    shift = np.eye(n, k=-1)
    shift[0, 0] = 1  # row 0 has no previous token: anything there moves it off the template
    got = template_features(np.stack([np.eye(n), shift]), np.zeros(n, dtype=bool))
    assert got[0, TEMPLATES.index("identity")] == 0
    assert got[1, TEMPLATES.index("prev")] == pytest.approx(np.sqrt(1 / (n + n - 1)))
    assert got[0, TEMPLATES.index("punct")] == 1.0  # no punctuation: the empty template


def test_punctuation_found_through_offsets():
    text = "Hello, world ... ok!"
    offsets = [(0, 0), (0, 5), (5, 6), (7, 12), (13, 16), (17, 19), (19, 20), (0, 0)]
    special = [True, False, False, False, False, False, False, True]
    np.testing.assert_array_equal(
        punctuation_mask(text, offsets, special), [0, 0, 1, 0, 1, 0, 1, 0]
    )


def _contracted_mst(D: np.ndarray, prompt: np.ndarray) -> float:
    """MST of the graph with the prompt contracted to one vertex (scipy)."""
    resp = np.flatnonzero(~prompt)
    m = resp.size + 1
    C = np.zeros((m, m))
    C[0, 1:] = C[1:, 0] = D[np.ix_(prompt, resp)].min(axis=0)
    C[1:, 1:] = D[np.ix_(resp, resp)]
    # scipy reads 0 as "no edge": lengthen every edge by 1, then take the m - 1 edges back
    return float(minimum_spanning_tree(C + 1 - np.eye(m)).sum() - (m - 1))


def _h0_with_prompt_zeroed(D: np.ndarray, prompt: np.ndarray) -> float:
    """TOHA's definition: the sum of finite H0 deaths with prompt-prompt distances set to 0."""
    Z = D.copy()
    Z[np.ix_(prompt, prompt)] = 0.0
    st_ = gudhi.RipsComplex(distance_matrix=Z).create_simplex_tree(max_dimension=1)
    st_.persistence()
    h0 = np.asarray(st_.persistence_intervals_in_dimension(0)).reshape(-1, 2)
    return float(h0[np.isfinite(h0[:, 1]), 1].sum())


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=9, max_b=2), st.integers(0, 2**31 - 1))
def test_spanning_forest_equals_scipy_and_h0_of_zeroed_prompt(A, seed):
    n = A.shape[-1]
    rng = np.random.default_rng(seed)
    prompt = np.zeros(n, dtype=bool)
    prompt[: int(rng.integers(1, n + 1))] = True
    D = token_distances(A)
    got = spanning_forest_length(D, prompt)
    for b in range(A.shape[0]):
        assert got[b] == pytest.approx(_contracted_mst(D[b], prompt), abs=1e-12)
        assert got[b] == pytest.approx(_h0_with_prompt_zeroed(D[b], prompt), abs=1e-12)


def test_prompt_scores_per_response_token():
    rng = np.random.default_rng(2)
    A = np.tril(random_attention(rng, 3, 10))
    A /= A.sum(-1, keepdims=True)
    prompt = np.arange(10) < 6
    D = token_distances(A)
    got = prompt_features(A, D, prompt)
    att_D = 1 - np.maximum(A, A.transpose(0, 2, 1))
    for b in range(3):
        np.fill_diagonal(att_D[b], 0)
        assert got[b, 0] == pytest.approx(_contracted_mst(D[b], prompt) / 4, abs=1e-12)
        assert got[b, 1] == pytest.approx(_contracted_mst(att_D[b], prompt) / 4, abs=1e-12)
    # a response identical to the prompt's last token costs nothing
    assert spanning_forest_length(np.zeros((1, 3, 3)), np.array([True, False, False]))[0] == 0


def _causal_pair(seed: int, L: int, H: int, n: int):
    """A causal synthetic Attention (L, H, n, n) with [CLS]/[SEP]-like special tokens at both
    ends, and the character where its response starts (content tokens 1..n//2-1 the prompt)."""
    from _feature_refs import synthetic_attention

    rng = np.random.default_rng(seed)
    W = np.tril(random_attention(rng, L * H, n)).reshape(L, H, n, n)
    W /= W.sum(-1, keepdims=True)
    special = np.zeros(n, dtype=bool)
    special[[0, n - 1]] = True
    att = synthetic_attention(W, special=special)
    return att, att.offsets[n // 2][0]


def _chunk_rows(att, boundary, sets=("prompt",), quantities=None):
    """One text's feature row through ChunkFeatures, layer by layer."""
    from attntopo.features import FeatureSettings, _layers

    kw = {} if quantities is None else {"prompt_quantities": quantities}
    st_ = FeatureSettings(
        sets=sets, thresholds=(0.1,), scales=(0.1,), quantiles=(0.5,), cycle_cap=50, **kw
    ).st()
    chunk = _layers.ChunkFeatures(1, [boundary], st_, True, None, 1)
    chunk.add_attention(0, att)
    chunk.start()
    return chunk.finish()[0]


def test_prompt_set_alone_equals_the_score_from_the_full_js_matrices():
    """Through ChunkFeatures (what features, corpus and the sklearn transformer run): the prompt
    set alone takes the response rows' distances, beside the js set it reads the full
    matrices that set computes anyway; the same scores."""
    att, boundary = _causal_pair(11, 2, 3, 14)
    alone = _chunk_rows(att, boundary).reshape(-1)
    beside = _chunk_rows(att, boundary, sets=("prompt", "js")).reshape(-1)[: alone.size]
    _same_js_forest(alone, beside)


def test_attention_score_alone_computes_no_distances(monkeypatch):
    """The attention quantity asked alone: the same number as beside JS, and no JS distance is
    computed (both distance entry points would raise)."""
    from attntopo.distances import _rows
    from attntopo.features import _layers

    att, boundary = _causal_pair(5, 2, 3, 12)  # tokens 1..5 are the prompt, 6..10 the response

    def run(quantities):
        return _chunk_rows(att, boundary, quantities=quantities)

    both = run(("js", "attention")).reshape(2 * 3, 2)

    def refuse(*a, **k):
        raise AssertionError("JS distances computed for the attention score alone")

    monkeypatch.setattr(_rows, "token_distances_tensor", refuse)
    monkeypatch.setattr(_layers, "token_distances", refuse)
    alone = run(("attention",)).reshape(2 * 3)
    np.testing.assert_array_equal(alone, both[:, 1])
    # and the number is scipy's MST of the contracted attention graph, per response token
    real = att.drop_special().weights.reshape(6, 10, 10).astype(np.float64)
    prompt = np.arange(10) < 5
    for b in range(6):
        D = 1 - np.maximum(real[b], real[b].T)
        np.fill_diagonal(D, 0)
        assert alone[b] == pytest.approx(_contracted_mst(D, prompt) / 5, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(attention_matrices(max_n=10, max_b=3), st.integers(0, 2**31 - 1))
def test_prompt_quantities_in_any_order_and_heads_in_groups(A, seed):
    n = A.shape[-1]
    if n < 2:
        return
    rng = np.random.default_rng(seed)
    prompt = rng.random(n) < 0.5
    prompt[0], prompt[-1] = True, False
    D = token_distances(A)
    full = prompt_features(A, D, prompt, ("js", "attention"))
    # D given: the full matrix's forest; None: the response rows' distances alone
    _same_js_forest(prompt_features(A, None, prompt, ("attention", "js"))[:, ::-1], full)
    from attntopo.features import _prompt

    old = _prompt._GROUP_ELEMENTS
    try:
        _prompt._GROUP_ELEMENTS = 1  # two heads a group
        _same_js_forest(prompt_features(A, None, prompt), full)
    finally:
        _prompt._GROUP_ELEMENTS = old


def _same_js_forest(got: np.ndarray, want: np.ndarray) -> None:
    """The JS score from the response rows' distances against the full matrix's: the same bits
    with the C kernel (its rows are the full matrix's bits, the forest reads the same values);
    on the torch path each distance within 1e-12 of the full one (tests/unit/distances), and a
    spanning forest's length per response token moves by at most the largest change of an
    edge (it is the sum of r edges, each 1-Lipschitz in the sup norm), so within 1e-12 too."""
    from attntopo import _native

    if _native.available():
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def _scipy_js(M: np.ndarray) -> np.ndarray:
    """JS distance matrix (base 2) by scipy, pair by pair."""
    from scipy.spatial.distance import jensenshannon

    n = M.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            D[i, j] = D[j, i] = jensenshannon(M[i], M[j], base=2)
    return np.nan_to_num(D)  # scipy's NaN for near-identical rows: 0 (their distance < 1e-8)


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=10, max_b=2), st.integers(0, 2**31 - 1), st.booleans())
def test_prompt_js_score_equals_scipy_distances_and_scipys_mst(A, seed, prefix):
    """``prompt.js`` (computed from the response rows alone) against scipy's JS distances of
    all pairs and scipy's minimum spanning tree of the contracted graph, per response token."""
    n = A.shape[-1]
    if n < 2:
        return
    rng = np.random.default_rng(seed)
    if prefix:
        prompt = np.arange(n) < int(rng.integers(1, n))
    else:
        prompt = rng.random(n) < 0.5
        i, j = rng.choice(n, size=2, replace=False)
        prompt[i], prompt[j] = True, False
    r = int(np.count_nonzero(~prompt))
    got = prompt_features(A, None, prompt, ("js",))[:, 0]
    for b in range(A.shape[0]):
        # scipy's divergence has an absolute error of ~n·eps, ~1e-8 in a distance near 0
        # (tests/unit/distances/test_native.py): each of the r edges within 1e-7
        assert got[b] == pytest.approx(_contracted_mst(_scipy_js(A[b]), prompt) / r, abs=1e-7)


def test_prompt_js_score_reads_only_the_response_rows(distance_shapes):
    """No full matrix: the JS distances asked for are the response's rows, (B, r, n)."""
    rng = np.random.default_rng(4)
    A = np.tril(random_attention(rng, 3, 12))
    A /= A.sum(-1, keepdims=True)
    prompt = np.arange(12) < 9  # a RAG-shaped pair: a long prompt, 3 answer tokens
    got = prompt_features(A, None, prompt, ("js",))
    assert distance_shapes == [(3, 3, 12)]
    _same_js_forest(got, prompt_features(A, token_distances(A), prompt, ("js",)))


def test_prompt_quantities_are_checked():
    from attntopo.errors import InvalidInputError
    from attntopo.features import features

    with pytest.raises(InvalidInputError, match="prompt quantity"):
        features([("a b", "c d")], sets=("prompt",), prompt_quantities=("hellinger",))
    with pytest.raises(InvalidInputError, match="distinct quantities"):
        features([("a b", "c d")], sets=("prompt",), prompt_quantities=())


# --------------------------------------------------------------- the references' own recipes
def _latda_template_distances(
    A: np.ndarray, ids: np.ndarray, comma: int, dot: int, sep: int
) -> dict:
    """la-tda's template features of one unpadded matrix (its ``--do_not_pad``), from their
    definitions in la-tda's ``template_features.py``: templates by position for self, next,
    previous and beginning; by token id for comma, dot and sep, each row spread over the
    positions holding that id and divided by (count + 1e-7)."""
    n = A.shape[0]

    def dist(T):
        return np.sqrt(((A - T) ** 2).sum() / ((A**2).sum() + (T**2).sum()))

    def by_position(cells):
        T = np.zeros((n, n))
        for i, j in cells:
            if 0 <= j < n:
                T[i, j] = 1.0
        return T

    def by_id(token_id):
        cols = [k for k in range(n) if ids[k] == token_id]
        T = np.zeros((n, n))
        for i in range(n):
            for j in cols:
                T[i, j] = 1.0 / (len(cols) + 1e-7)
        return T

    return {
        "self": dist(by_position((i, i) for i in range(n))),
        "next": dist(by_position((i, i + 1) for i in range(n))),
        "prev": dist(by_position((i, i - 1) for i in range(n))),
        "beginning": dist(by_position((i, 0) for i in range(n))),
        "comma": dist(by_id(comma)),
        "dot": dist(by_id(dot)),
        "sep": dist(by_id(sep)),
    }


@settings(max_examples=80, deadline=None)
@given(attention_matrices(max_n=9, max_b=1), st.integers(0, 2**31 - 1))
def test_templates_equal_latda_without_padding(A, seed):
    # a BERT-like token sequence: [CLS] … [SEP], some commas and dots in between (ids as
    # BERT's: [CLS] 101, [SEP] 102, "," 1010, "." 1012, words 2000+)
    A = A[0]
    n = A.shape[0]
    rng = np.random.default_rng(seed)
    ids = 2000 + rng.integers(0, 50, n)
    ids[0], ids[-1] = 101, 102
    inner = rng.random(n) < 0.4
    inner[0] = inner[-1] = False
    ids[inner] = rng.choice([1010, 1012], inner.sum())
    ref = _latda_template_distances(A, ids, 1010, 1012, 102)
    got = dict(zip(TEMPLATES, template_features(A[None], ids == 1010)[0]))
    # the position templates are la-tda's exactly
    for ours, theirs in [
        ("identity", "self"),
        ("next", "next"),
        ("prev", "prev"),
        ("first", "beginning"),
    ]:
        assert got[ours] == pytest.approx(ref[theirs], rel=1e-13, abs=1e-15)
    # last = la-tda's sep (one [SEP], at the end) but for la-tda's 1e-7 in the row sums
    assert got["last"] == pytest.approx(ref["sep"], rel=0, abs=2e-7)
    # punct over the commas alone = la-tda's comma template, likewise (no comma: both 1)
    assert got["punct"] == pytest.approx(ref["comma"], rel=0, abs=2e-7)


def _toha_reference(A: np.ndarray, n_response: int) -> float:
    """TOHA's MTopDiv(R, P) of one head as its published implementation computes it
    (lm-polygraph's ``TopologicalDivergence``): distances 1 - A clamped at 0 from below, zero
    diagonal, the smaller of the two directions; the prompt-prompt block (all tokens but the
    last ``n_response``) set to 0; the sum of the finite H0 deaths of ripser's diagram (not
    divided by the response length)."""
    from ripser import ripser

    n = A.shape[0]
    D = 1.0 - np.clip(A, 0.0, None)
    D = D * (1 - np.eye(n))
    D = np.minimum(D, D.T)
    D[: n - n_response, : n - n_response] = 0.0
    h0 = ripser(D, distance_matrix=True, maxdim=0)["dgms"][0]
    return float(h0[np.isfinite(h0[:, 1]), 1].sum())


@settings(max_examples=80, deadline=None)
@given(attention_matrices(max_n=10, max_b=1), st.booleans(), st.integers(0, 2**31 - 1))
def test_prompt_attention_score_is_tohas_mtopdiv_per_response_token(A, causal, seed):
    A = A[0]
    n = A.shape[0]
    if causal:
        A = np.tril(A) + np.eye(n) * 1e-3
        A /= A.sum(-1, keepdims=True)
    r = int(np.random.default_rng(seed).integers(1, n)) if n > 1 else 0
    if r == 0:
        return
    prompt = np.arange(n) < n - r
    got = prompt_features(A[None], token_distances(A[None]), prompt)[0, 1]
    # ripser keeps distances in float32: each of the r deaths within float32 round-off
    assert got * r == pytest.approx(_toha_reference(A, r), rel=0, abs=r * 2.4e-7)


# --------------------------------------------------------------- the prompt set without copies


@settings(max_examples=60, deadline=None)
@given(attention_matrices(max_n=10, max_b=3), st.integers(0, 2**31 - 1), st.booleans())
def test_prompt_features_of_kept_tokens_equal_those_of_the_renormalized_copy(A, seed, contiguous):
    """``keep=``: each head's kept tokens renormalized a head at a time give exactly the numbers
    of the renormalized copy (drop_special's formula: numpy, float64 quotient rounded once)."""
    from attntopo.attention import renormalized_subset

    n = A.shape[-1]
    if n < 3:
        return
    rng = np.random.default_rng(seed)
    W = A.astype(np.float32)
    if contiguous:  # [CLS] ... [SEP]
        keep = np.arange(1, n - 1) if n > 3 else np.arange(1, n)
    else:
        keep = np.sort(rng.choice(n, size=int(rng.integers(2, n + 1)), replace=False))
    sub64 = W[:, keep][:, :, keep].astype(np.float64)
    sums = sub64.sum(-1, keepdims=True)
    if (sums <= 0).any():
        return
    copy = (sub64 / sums).astype(np.float32)
    np.testing.assert_array_equal(renormalized_subset(W, keep), copy)
    m = keep.size
    prompt = np.zeros(m, dtype=bool)
    prompt[: int(rng.integers(1, m))] = True
    if not contiguous and rng.random() < 0.5:  # a prompt that is not a prefix
        prompt = rng.random(m) < 0.5
        prompt[0], prompt[-1] = False, True
    for q in (("attention",), ("js",), ("js", "attention")):
        np.testing.assert_array_equal(
            prompt_features(W, None, prompt, q, keep=keep), prompt_features(copy, None, prompt, q)
        )


def test_prompt_set_alone_copies_no_layer(monkeypatch):
    """The prompt set asked alone takes each layer's content tokens a head at a time: it never
    builds the special-tokens-dropped copy of the whole layer (drop_special), and gives the same
    rows as the path that does (the prompt set beside a set that needs that copy)."""
    from attntopo.attention import Attention

    att, boundary = _causal_pair(11, 2, 4, 14)
    # beside the graph set, the prompt set reads the copy that set needs (its block comes first)
    with_copy = _chunk_rows(att, boundary, ("prompt", "graph"))[:, : 2 * 4 * 2]

    def refuse(self, *a, **k):
        raise AssertionError("a whole layer copied for the prompt set alone")

    monkeypatch.setattr(Attention, "drop_special", refuse)
    monkeypatch.setattr(Attention, "subset_tokens", refuse)
    np.testing.assert_array_equal(_chunk_rows(att, boundary), with_copy)


def test_attention_score_runs_on_one_torch_thread(monkeypatch):
    """The attention score's many short passes over each head's blocks run on one torch thread
    on the CPU (see test_precision's thread test); the caller's count is restored."""
    import torch

    import attntopo.topology as topology

    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        rng = np.random.default_rng(4)
        A = np.tril(random_attention(rng, 3, 12))
        A /= A.sum(-1, keepdims=True)
        prompt = np.arange(12) < 5
        want = prompt_features(A, None, prompt, ("attention",))
        seen = []
        real = topology.prim_contracted
        monkeypatch.setattr(
            topology, "prim_contracted", lambda *a: seen.append(torch.get_num_threads()) or real(*a)
        )
        for keep in (None, np.arange(12)):
            got = prompt_features(
                A.astype(np.float32) if keep is not None else A,
                None,
                prompt,
                ("attention",),
                keep=keep,
            )
            if keep is None:
                np.testing.assert_array_equal(got, want)
        assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)
