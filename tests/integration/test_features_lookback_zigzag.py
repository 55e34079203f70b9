"""The lookback and zigzag sets on the real packaged models: SmolLM2 (causal) and MiniLM
(bidirectional), through features(), the corpus store and AttentionFeatures, on short pairs.

The lookback ratio is recomputed from the model's full attention of the joined pair by the
paper's formula, one answer token at a time; the zigzag from the model's attention by the set's
own graph and zigzag functions (those are checked against dionysus, gudhi and networkx on
hand-built graphs in tests/unit/features/test_features_zigzag.py): here the layer-by-layer
stream must give what the whole attention gives."""

from __future__ import annotations

import numpy as np
import pytest

import attntopo as at
from attntopo import corpus
from attntopo.errors import InvalidInputError
from attntopo.features import features, layer_graph, zigzag_features
from attntopo.features._compute import join_pair
from attntopo.features._lookback import answer_start
from attntopo.features._zigzag import zigzag_names

pytestmark = pytest.mark.slow
pytest.importorskip("dionysus")

PAIRS = [
    ("What is the capital of France? Answer in one word.", "Paris."),
    ("Peru's capital is Lima. What is the capital of Peru?", "The capital of Peru is Lima."),
]
LAYERS = [0, 1, 2]


def _lookback_by_formula(A: np.ndarray, start: int, causal: bool) -> float:
    n = A.shape[0]
    ratios = []
    for i in range(start, n):
        a_ctx = A[i, :start].sum() / start
        new = [j for j in range(start, n) if j <= i or not causal]
        a_new = A[i, new].sum() / len(new)
        ratios.append(a_ctx / (a_ctx + a_new))
    return float(np.mean(ratios))


@pytest.fixture(scope="module")
def smol_table(smollm2):
    # one pair a chunk: the forward pass of each pair alone, as attention() runs it below
    return features(
        PAIRS, model=smollm2, sets=("lookback", "zigzag"), layers=LAYERS, n_jobs=1, batch_size=1
    )


def test_lookback_and_zigzag_on_smollm2_equal_their_definitions(smol_table, smollm2):
    H = smollm2.n_heads
    assert smol_table.columns[0] == "L0H0.lookback.ratio"
    assert smol_table.columns[len(LAYERS) * H] == "L*H*.zigzag.h0.n_bars"
    assert smol_table.shape == (2, len(LAYERS) * H + len(zigzag_names()))
    assert list(smol_table.columns) == at.features.feature_names(
        smollm2, sets=("lookback", "zigzag"), layers=LAYERS
    )
    for k, pair in enumerate(PAIRS):
        text, boundary = join_pair(*pair)
        att = smollm2.attention(text, layers=LAYERS)
        start = answer_start(att.special, att.offsets, boundary)
        assert 0 < start < att.n_tokens
        want = [
            _lookback_by_formula(att.weights[li, h].astype(np.float64), start, True)
            for li in range(len(LAYERS))
            for h in range(H)
        ]
        got = smol_table.select(sets="lookback").values[k]
        # the same float32 weights summed in another order: a few float64 ulps
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
        assert np.all((got > 0) & (got < 1))
        graphs = [layer_graph(att.weights[li]) for li in range(len(LAYERS))]
        np.testing.assert_array_equal(
            smol_table.select(sets="zigzag").values[k], zigzag_features(graphs, att.n_tokens)
        )


def test_lookback_on_minilm_without_special_tokens(minilm):
    """Bidirectional: every answer token sees the whole answer; with drop_special [CLS] and
    [SEP] leave both means (the formula on Attention.drop_special's renormalized rows)."""
    t = features(
        PAIRS[:1],
        model=minilm,
        sets=("lookback",),
        layers=[3],
        heads=[0, 7],
        drop_special=True,
        n_jobs=1,
    )
    text, boundary = join_pair(*PAIRS[0])
    att = minilm.attention(text, layers=[3], heads=[0, 7])
    real = att.drop_special()
    start = answer_start(real.special, real.offsets, boundary)
    want = [
        _lookback_by_formula(real.weights[0, h].astype(np.float64), start, False) for h in range(2)
    ]
    # real's rows were renormalized and rounded to float32; the set reads the raw rows
    np.testing.assert_allclose(t.values[0], want, rtol=1e-6, atol=0)


def test_lookback_needs_pairs_in_one_line(minilm, tmp_path):
    with pytest.raises(
        InvalidInputError,
        match=r"^the lookback set needs \(prompt, response\) "
        r"pairs of strings; texts\[0\] is a str$",
    ):
        features(["just a text"], model=minilm, sets=("lookback",))
    with pytest.raises(
        InvalidInputError, match="the lookback set needs \\(prompt, answer\\) pairs"
    ):
        corpus.run(["just a text"], out=tmp_path / "s", model=minilm, sets=("lookback",))


def test_corpus_store_holds_the_features_rows(smol_table, smollm2, tmp_path):
    import pandas as pd

    df = pd.DataFrame(PAIRS, columns=["prompt", "answer"])
    store = corpus.run(
        df,
        tmp_path / "s",
        model=smollm2,
        text_column="prompt",
        answer_column="answer",
        sets=("lookback", "zigzag"),
        layers=LAYERS,
        n_jobs=1,
        batch_size=1,
        progress=False,
    )  # each pair alone, as above
    assert list(store.feature_columns) == list(smol_table.columns)
    got = np.array(store.to_pandas()[list(smol_table.columns)], dtype=np.float64)
    np.testing.assert_array_equal(got, smol_table.values)


def test_attention_features_takes_pairs(smol_table):
    from attntopo.sklearn import AttentionFeatures, SelectHeads

    est = AttentionFeatures(
        model="smollm2", sets=("lookback", "zigzag"), layers=LAYERS, n_jobs=1, batch_size=1
    )
    X = est.fit_transform(np.array(PAIRS, dtype=object))
    np.testing.assert_array_equal(X, smol_table.values)
    assert list(est.get_feature_names_out()) == list(smol_table.columns)
    # head selection chooses among the lookback heads; the zigzag columns (no head) stay
    sel = SelectHeads(k=2, criterion="anova", feature_names=list(smol_table.columns))
    noise = np.random.default_rng(0).normal(scale=1e-3, size=(4, X.shape[1]))
    sel.fit(np.vstack([X, X]) + noise, [0, 0, 1, 1])
    kept = [c for c, k in zip(smol_table.columns, sel.support_) if k]
    assert sum(c.startswith("L*H*.") for c in kept) == len(zigzag_names())
    assert len(kept) == 2 + len(zigzag_names())
