"""Head space, head types and model comparison on the packaged models (72 and 270 heads)."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

import attntopo as at
from attntopo import HeadSpace, ModelComparison, head_distances
from attntopo.analyses._head_types import LABELS
from attntopo.words import punctuation_mask

TEXTS = [
    "The old lighthouse keeper climbed the stairs, trimmed the wick, and watched the sea.",
    "Mix the flour, water and salt; let the dough rest, then bake it until golden.",
    "In 1905, Einstein published four papers that changed physics forever!",
]


def _scipy_pairs(att, pairs):
    """Independent check: the paper's head distance for some head pairs, scipy double loop."""
    W = att.weights.reshape(-1, att.n_tokens, att.n_tokens).astype(np.float64)
    return np.array(
        [
            sum(jensenshannon(W[a, i], W[b, i], base=2) for i in range(att.n_tokens))
            for a, b in pairs
        ]
    )


def _check_space(hs: HeadSpace, L: int, H: int, n_texts: int):
    N = L * H
    assert hs.n_points == N and hs.distances.shape == (N, N)
    assert hs.labels[0] == "L0H0" and hs.labels[-1] == f"L{L - 1}H{H - 1}"
    assert np.array_equal(hs.distances, hs.distances.T) and np.all(np.diag(hs.distances) == 0)
    off = hs.distances[np.triu_indices(N, 1)]
    assert 0 < off.min() and off.max() <= 1  # normalized: mean JS distance per token
    assert hs.diagram.counts()[0] == N
    deaths = np.sort(hs.diagram.finite(0)[:, 1])
    np.testing.assert_allclose(deaths, np.sort(hs.linkage[:, 2]), atol=1e-12)
    assert hs.embedding.shape == (N, 2) and 0 < hs.mds_explained() <= 1
    assert hs.types.labels.shape == (L, H) and set(np.unique(hs.types.labels)) <= set(LABELS)
    assert hs.n_texts == n_texts and hs.per_text.shape == (n_texts, N, N)


@pytest.mark.slow
def test_minilm_head_space(minilm, tmp_path):
    hs = at.head_space(TEXTS, minilm)
    _check_space(hs, 6, 12, 3)
    assert not hs.causal and hs.model == "minilm"
    atts = minilm.attention(TEXTS)
    pairs = [(0, 1), (5, 40), (13, 71), (60, 61)]
    for k, att in enumerate(atts):
        ref = _scipy_pairs(att, pairs) / att.n_tokens
        got = np.array([hs.per_text[k][a, b] for a, b in pairs])
        np.testing.assert_allclose(got, ref, atol=1e-9)
    # un-normalized = the paper's sum; the mean over texts of normalized per-text matrices
    raw = head_distances(atts[0])
    np.testing.assert_allclose(raw / atts[0].n_tokens, hs.per_text[0], atol=1e-12)
    np.testing.assert_allclose(hs.distances, hs.per_text.mean(0), atol=1e-12)
    # head types: [CLS]/[SEP] come from the tokenizer's special-token mask; bidirectional
    t = hs.types
    assert not np.isnan(t.features["next"]).any()
    hs.save(tmp_path / "hs")
    assert at.load_result(tmp_path / "hs") == hs


@pytest.mark.slow
def test_minilm_punctuation_and_special_found_through_the_tokenizer(minilm):
    att = minilm.attention(TEXTS[1])
    mask = punctuation_mask(att, tokenizer=minilm.tokenizer)
    decoded = [minilm.tokenizer.decode([int(i)]).strip() for i in att.token_ids]
    expect = [
        (not sp) and bool(s) and all(unicodedata.category(c).startswith("P") for c in s)
        for s, sp in zip(decoded, att.special)
    ]
    assert mask.tolist() == expect
    assert sorted(set(np.array(decoded)[mask])) == [",", ".", ";"]
    assert att.special[0] and att.special[-1] and att.special.sum() == 2
    t = at.head_types(att, tokenizer=minilm.tokenizer)
    W = att.weights.astype(np.float64)
    np.testing.assert_allclose(
        t.feature("punctuation"), W[:, :, :, mask].sum(-1).mean(-1), atol=1e-12
    )
    np.testing.assert_allclose(
        t.feature("special"), W[:, :, :, att.special].sum(-1).mean(-1), atol=1e-12
    )


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_smollm2_head_space(smollm2):
    text = TEXTS[0]
    hs = at.head_space(text, smollm2)
    _check_space(hs, 30, 9, 1)
    assert hs.causal
    att = smollm2.attention(text)
    pairs = [(0, 269), (100, 101), (17, 250)]
    np.testing.assert_allclose(
        [hs.distances[a, b] for a, b in pairs], _scipy_pairs(att, pairs) / att.n_tokens, atol=1e-9
    )
    t = hs.types
    # a causal model cannot attend to the next token
    assert np.isnan(t.features["next"]).all() and "next" not in t.labels
    # deep layers of SmolLM2 park attention on the first token (no special tokens here)
    assert not att.special.any()
    assert t.counts()["sink"] > 10
    np.testing.assert_allclose(t.features["sink"], t.features["first"])


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_compare_minilm_with_smollm2(minilm, smollm2, tmp_path):
    c = at.compare_models(TEXTS, model_a=minilm, model_b=smollm2, n_boot=10, seed=0)
    assert isinstance(c, ModelComparison)
    assert c.a.n_points == 72 and c.b.n_points == 270
    np.testing.assert_allclose(c.bottleneck, at.topology.bottleneck(c.a.diagram, c.b.diagram))
    assert np.all(c.bottleneck > 0)
    p = c.p_values(name="bottleneck")
    assert p.shape == (2,) and np.all((p > 0) & (p <= 1))
    c.save(tmp_path / "cmp")
    assert at.load_result(tmp_path / "cmp") == c
