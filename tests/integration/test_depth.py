"""attntopo.theory.depth on the real models: every number against a direct computation on the same
forward pass, the storage round trip and bad input
(the command line: tests/cli/test_cli_depth.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from attntopo.errors import EmptyTextError, InvalidInputError, TextTooLongError
from attntopo.io import load_payload
from attntopo.models._hidden import forward_capture
from attntopo.theory import Depth, depth

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "The cat sat on the mat because it was tired, and the dog slept by the door.",
    "Attention is all you need, said the paper, and everybody believed it for a while.",
    "A quiet river runs past the old mill where the miller's daughter sings every morning.",
]


@pytest.fixture(scope="module")
def minilm_depth(minilm):
    return depth(TEXTS, minilm, k=5)


@pytest.fixture(scope="module")
def captures(minilm):
    return forward_capture(minilm, TEXTS, attention=True)


def _res(X):
    """Dong et al.'s residual, written out: numpy's induced 1- and inf-norms, mean row."""
    R = X - X.mean(axis=0, keepdims=True)
    return math.sqrt(np.linalg.norm(R, 1) * np.linalg.norm(R, np.inf)) / math.sqrt(
        np.linalg.norm(X, 1) * np.linalg.norm(X, np.inf)
    )


def test_shapes_and_table(minilm_depth):
    d = minilm_depth
    T, L, H = 3, 6, 12
    assert (d.model, d.causal, d.n_layers, d.n_heads, d.texts) == ("minilm", False, L, H, TEXTS)
    assert d.res_hidden.shape == (T, L + 1) and d.res_path_head.shape == (T, L, H)
    assert d.fisher_rao.shape == (T, L - 1, H) and d.knn_overlap.shape == (T, L)
    assert d.summary().n_rows == L + 1 and d.head_table().n_rows == L * H
    assert d.k_used.tolist() == [5, 5, 5]
    # pooled TwoNN: every token of every text is distinct but [CLS]/[SEP] in the embeddings
    assert (
        d.id_points[1:].tolist() == [d.n_tokens.sum()] * L
        and d.id_points[0] == d.n_tokens.sum() - 4
    )


def test_numbers_against_direct_computation(minilm_depth, captures):
    """Each measure of text 1, recomputed from a second run of the same forward pass."""
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import pdist, squareform
    from scipy.stats import entropy
    from sklearn.neighbors import NearestNeighbors

    d, cap = minilm_depth, captures[1]
    X = cap.hidden.astype(np.float64)
    A = cap.attention.astype(np.float64)
    A /= A.sum(-1, keepdims=True)
    L, H, n = A.shape[:3]
    assert d.n_tokens[1] == n
    # the same text run twice in one process: the same computation (tests/README.md, kind 1)
    for depth_ in range(L + 1):
        assert d.res_hidden[1, depth_] == pytest.approx(_res(X[depth_]), rel=1e-12)
    P = np.eye(n)
    for layer in range(L):
        P = A[layer].mean(0) @ P
        assert d.res_path_mean[1, layer] == pytest.approx(_res(P), rel=1e-9, abs=1e-15)
    Ph = np.eye(n)
    for layer in range(L):
        Ph = A[layer, 7] @ Ph
    assert d.res_path_head[1, -1, 7] == pytest.approx(_res(Ph), rel=1e-9, abs=1e-15)
    for layer, h in [(0, 0), (3, 5), (5, 11)]:
        dist = pdist(A[layer, h], "jensenshannon") / math.sqrt(math.log(2))
        assert d.js_mean[1, layer, h] == pytest.approx(dist.mean(), abs=1e-10)
        assert d.js_diameter[1, layer, h] == pytest.approx(dist.max(), abs=1e-10)
        assert d.h0_total[1, layer, h] == pytest.approx(
            minimum_spanning_tree(squareform(dist)).sum(), abs=1e-9
        )
        assert d.entropy[1, layer, h] == pytest.approx(
            np.mean([entropy(r, base=2) for r in A[layer, h]]), rel=1e-10
        )
    for layer, h in [(0, 3), (4, 8)]:
        bc = np.clip(np.sqrt(A[layer, h] * A[layer + 1, h]).sum(-1), 0, 1)
        assert d.fisher_rao[1, layer, h] == pytest.approx(np.mean(2 * np.arccos(bc)), abs=1e-7)
    for depth_ in (0, 3, 5):
        sets = [
            [
                set(r) - {i}
                for i, r in enumerate(
                    NearestNeighbors(n_neighbors=6).fit(Z).kneighbors(Z, return_distance=False)
                )
            ]
            for Z in (X[depth_], X[depth_ + 1])
        ]
        want = np.mean([len(a & b) for a, b in zip(*sets)]) / 5
        assert d.knn_overlap[1, depth_] == pytest.approx(want, abs=1e-12)


def test_pooled_intrinsic_dimension_is_skdims_twonn(minilm_depth, captures):
    import skdim

    for depth_ in (0, 6):
        U = np.unique(
            np.concatenate([c.hidden[depth_] for c in captures]).astype(np.float64), axis=0
        )
        assert minilm_depth.id_points[depth_] == U.shape[0]
        assert minilm_depth.intrinsic_dim[depth_] == pytest.approx(
            skdim.id.TwoNN().fit(U).dimension_, rel=1e-12
        )
    # per text: each has 20 distinct tokens, just enough (MIN_ID_POINTS) for an estimate of its own
    for t, cap in enumerate(captures):
        U = np.unique(cap.hidden[3].astype(np.float64), axis=0)
        assert minilm_depth.intrinsic_dim_text[t, 3] == pytest.approx(
            skdim.id.TwoNN().fit(U).dimension_, rel=1e-12
        )


def test_attention_products_collapse_and_hidden_states_do_not(minilm_depth):
    """The measured claim of docs/theory.md: pure attention products go to rank one; the residual
    stream (skip connections, MLPs, LayerNorm) keeps its tokens apart."""
    cols = minilm_depth.summary()
    path = cols["res_path_mean"][1:]
    assert np.all(np.diff(path) < 0) and path[-1] < 0.05 * path[0]
    assert cols["res_hidden"].min() > 0.3


def test_round_trip(minilm_depth, tmp_path):
    minilm_depth.save(tmp_path / "d")
    meta, arrays = load_payload(tmp_path / "d")
    back = Depth._from_payload(meta, arrays)
    assert back == minilm_depth
    assert back.provenance["settings"]["k"] == 5 and back.provenance["model"]["name"] == "minilm"


def test_bad_input(minilm):
    with pytest.raises(EmptyTextError, match="no texts"):
        depth([], minilm)
    with pytest.raises(EmptyTextError, match=r"texts\[1\] is empty"):
        depth(["a text", "  "], minilm)
    with pytest.raises(InvalidInputError, match=r"texts\[0\] must be a string"):
        depth([3], minilm)
    with pytest.raises(InvalidInputError, match="k must be an int >= 1"):
        depth("a text", minilm, k=0)
    with pytest.raises(TextTooLongError):
        depth("word " * 600, minilm)


@pytest.mark.smollm2
@pytest.mark.slow
def test_causal_model(smollm2):
    d = depth(["The cat sat on the mat because it was tired."], smollm2, k=3)
    assert d.causal and d.res_hidden.shape == (1, 31) and d.fisher_rao.shape == (1, 29, 9)
    # causal products: every row of A_l ⋯ A_0 ends on the first token, whose row is e_0
    assert d.res_path_mean[0, -1] < 1e-6 < d.res_path_mean[0, 0]
    assert np.all((d.fisher_rao >= 0) & (d.fisher_rao <= np.pi))
    with pytest.raises(
        InvalidInputError, match=r"texts\[0\] has 1 token with smollm2's special tokens"
    ):
        depth("Hi", smollm2)


@pytest.mark.model
def test_theory_bench_depth_section_runs(minilm):
    """benchmarks/theory_bench.py: its depth diagnostic
    runs and reports one row (no timing assertion)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "attntopo_theory_bench", ROOT / "benchmarks" / "theory_bench.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert "depth" in bench.DIAGNOSTICS
    rows = bench.run(["depth"], "minilm", 24, 1)
    assert [(r["diagnostic"], r["model"], r["tokens"]) for r in rows] == [("depth", "minilm", 24)]
    assert rows[0]["min_s"] > 0 and "| depth | minilm (6x12) | 24 |" in bench.table(rows)
