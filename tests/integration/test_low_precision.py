"""Low-precision models (bfloat16, float16) in every analysis: rows renormalized in float64
within the derived tolerance, and numbers within a derived distance of the float32 model's
(tests/README.md, "Low-precision forward passes").

Models: MiniLM loaded in bfloat16 and float16, and a tiny random-weight causal Llama (rotary
positions, grouped-query attention) in bfloat16 (and float16 for the prompt scores and H1),
wrapped as a user's own model."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attntopo as at
from _tiny_llama import tiny_llama
from _tolerances import U, low_precision_row_distance_bound
from attntopo import corpus
from attntopo.models import row_sum_tolerance
from attntopo.models._qk import capture_qk

pytestmark = pytest.mark.slow

TEXT = "Quantum information theory allows us to study attention using entanglement"
T1 = "The cat sat on the mat because it was tired, and the dog slept by the door near the bank."
T2 = "A quiet river runs past the old mill where the bank of the river is green."
T3 = "She walked to the bank to deposit the money before the bank closed for the day."

LOW = ["minilm-bfloat16", "minilm-float16", "llama-bfloat16"]


def _load(which: str):
    name, dtype = which.split("-")
    return tiny_llama(dtype) if name == "llama" else at.load_model("minilm", dtype=dtype)


@pytest.fixture(scope="module", params=LOW)
def low_model(request):
    return _load(request.param)


@pytest.fixture(scope="module", params=["bfloat16", "float16"])
def low_minilm(request):
    return at.load_model("minilm", dtype=request.param)


def test_minilm_low_precision_rows_are_float32_distributions(low_minilm):
    att = low_minilm.attention(TEXT)
    n = len(att.tokens)
    assert att.weights.dtype == np.float32
    # renormalized in float64, rounded once to float32
    np.testing.assert_allclose(att.weights.astype(np.float64).sum(-1), 1.0, atol=(n + 1) * 2.0**-24)
    # the raw rows of the model in its dtype are what the tolerance was derived for
    hf = low_minilm.hf_model
    ids = torch.tensor([att.token_ids.tolist()])
    with torch.inference_mode():
        raw = torch.stack(hf(input_ids=ids, output_attentions=True).attentions, 1)[0]
    assert raw.dtype == getattr(torch, low_minilm.dtype)
    dev = float((raw.double().sum(-1) - 1).abs().max())
    assert dev <= row_sum_tolerance(low_minilm.dtype, n)
    expected = (raw.double() / raw.double().sum(-1, keepdim=True)).float().numpy()
    np.testing.assert_array_equal(att.weights, expected)


def test_tiny_llama_is_a_bfloat16_causal_gqa_model():
    m = tiny_llama("bfloat16")
    assert m.causal and m.dtype == "bfloat16" and m.n_kv_heads < m.n_heads
    assert (
        m.hf_model.config.model_type == "llama"
        and m.hf_model.config._attn_implementation == "eager"
    )
    att = m.attention(T1)
    w = att.weights.astype(np.float64)
    assert not np.triu(w, 1).any()  # the masked future is exactly zero
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=(w.shape[-1] + 1) * 2.0**-24)


def _finite(*arrays) -> bool:
    return all(np.isfinite(np.asarray(a, dtype=float)).all() for a in arrays)


def _check_analysis(name: str, m, tmp_path):
    """Run one analysis on ``m`` and check what it returns (sizes, finite numbers)."""
    if name == "analyze":
        r = at.analyze(T1, m, progress=False)
        s = r.summary()
        assert len(s["layer"]) == m.n_layers * m.n_heads and _finite(s["total_persistence_h0"])
    elif name == "compare":
        c = at.compare(T1, T2, m, progress=False)
        assert [s.key for s in c.shared_tokens]
    elif name == "phrase":
        p = at.phrase_topology("the bank", [T1, T2, T3], m, progress=False)
        assert len(p.summary()[next(iter(p.summary()))]) > 0
    elif name == "timeline":
        t = at.timeline(T1, m, layers=0, heads=0, progress=False)
        assert len(t.summary()[next(iter(t.summary()))]) > 0
    elif name == "heads":
        hs = at.head_space([T1, T2], m, progress=False)
        assert _finite(hs.distances) and hs.distances.shape[0] == m.n_layers * m.n_heads
    elif name == "features":
        t = at.features([T1, T2], model=m, layers=[0], n_jobs=1)
        assert len(t) == 2 and _finite(t.to_pandas().select_dtypes("number").to_numpy())
    elif name == "features_prompt":
        t = at.features([(T1, T2)], model=m, sets=("prompt",), layers=[0], n_jobs=1)
        assert len(t) == 1 and _finite(t.to_pandas().select_dtypes("number").to_numpy())
    elif name == "corpus":
        store = corpus.run([T1, T2], out=tmp_path / "s", model=m, layers=[0], progress=False)
        assert len(store.to_pandas()) == 2
    elif name == "compress":
        c = at.compress(T1, m, layers=[0], scale="gap")
        assert (
            _finite(*c.summary().values())
            if all(np.asarray(v).dtype.kind in "fiu" for v in c.summary().values())
            else len(c.summary())
        )
    elif name == "depth":
        d = at.depth([T1, T2], m, k=3, progress=False)
        assert len(d.summary()[next(iter(d.summary()))]) > 0
    elif name == "approx":
        a = at.approximability(T1, model=m, layers=[0], heads=[0], draws=1)
        assert len(a.summary()[next(iter(a.summary()))]) > 0
    elif name == "context":
        c = at.context(
            [T1, T2, T3], m, word="bank", n_permutations=1, equivariance_texts=1, progress=False
        )
        assert len(c.summary()[next(iter(c.summary()))]) > 0
    else:  # pragma: no cover
        raise AssertionError(name)


ANALYSES = [
    "analyze",
    "compare",
    "phrase",
    "timeline",
    "heads",
    "features",
    "features_prompt",
    "corpus",
    "compress",
    "depth",
    "approx",
    "context",
]


@pytest.mark.parametrize("analysis", ANALYSES)
def test_every_analysis_runs_on_a_low_precision_model(low_model, analysis, tmp_path):
    _check_analysis(analysis, low_model, tmp_path)


def _logits(cap):
    Q, K = cap.queries.astype(np.float64), cap.keys.astype(np.float64)
    s = cap.scaling[:, None, None, None]
    return s * np.einsum("lhid,lhjd->lhij", Q, K), s * np.einsum(
        "lhid,lhjd->lhij", np.abs(Q), np.abs(K)
    )


def _mst_edges(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The n - 1 edges (i, j) of a minimum spanning tree of the distance matrix D (SciPy; zero
    distances kept as edges)."""
    from scipy.sparse.csgraph import minimum_spanning_tree

    W = np.where(D > 0, D, 1e-300)
    np.fill_diagonal(W, 0.0)
    T = minimum_spanning_tree(W).tocoo()
    assert T.nnz == D.shape[0] - 1
    return T.row, T.col


TEXTS = [
    TEXT,
    T1,
    " ".join(open("/usr/share/games/fortunes/science", encoding="utf-8").read().split()[:120]),
]


@pytest.mark.parametrize("which", LOW)
def test_h0_totals_stay_within_the_derived_bound_of_the_float32_model(which):
    """Per head, |H0 total (low) − H0 total (float32)| ≤ (n − 1)(2 max_i d_i + 2u₃₂), where
    d_i bounds the JS distance between the two passes' row i from their captured logits
    (proven chain; tests/README.md).  The captured queries and keys are independent of the
    attention → distances → persistence pipeline the totals go through."""
    low = _load(which)
    ref = tiny_llama("float32") if which.startswith("llama") else at.load_model("minilm")
    dtype = low.dtype
    head_dim = low.hf_model.config.hidden_size // low.n_heads
    worst = 0.0
    for text in TEXTS:
        cap_low, cap_ref = (
            capture_qk(low, text, truncate=True),
            capture_qk(ref, text, truncate=True),
        )
        assert cap_low.encoding.ids == cap_ref.encoding.ids
        z_low, mag_low = _logits(cap_low)
        z_ref, _ = _logits(cap_ref)
        d_row = low_precision_row_distance_bound(z_low, mag_low, z_ref, dtype, head_dim, low.causal)
        n = cap_low.n_tokens
        D_low = at.token_distances(low.attention(text, truncate=True))
        D_ref = at.token_distances(ref.attention(text, truncate=True))
        # the distances: |D - D'| <= d(p_i, p'_i) + d(p_j, p'_j) (JS distance is a metric)
        dist_bound = 2 * d_row.max(-1)  # (L, H)
        assert (np.abs(D_low - D_ref).max((-1, -2)) <= dist_bound + 1e-9).all()
        tot = {}
        for key, m in (("low", low), ("ref", ref)):
            s = at.analyze(text, m, maxdim=0, truncate=True, progress=False).summary()
            tot[key] = s["total_persistence_h0"].reshape(m.n_layers, m.n_heads)
        bound = (n - 1) * (dist_bound + 2 * U)  # n - 1 finite H0 deaths, each moves <= ||ΔD||∞
        diff = np.abs(tot["low"] - tot["ref"])
        assert (diff <= bound).all(), (text[:20], float((diff / bound).max()))
        # tighter, through the minimum spanning trees (SciPy's, independent of the engines):
        # an H0 total is the weight of an MST, and MST(D') <= w'(T) for the MST T of D, so
        # |MST(D) - MST(D')| <= max over T, T' of sum_e |ΔD_e| <= sum_e (d_i + d_j)
        for li in range(low.n_layers):
            for h in range(low.n_heads):
                trees = [_mst_edges(D[li, h]) for D in (D_ref, D_low)]
                for key, D, (i, j) in (("ref", D_ref, trees[0]), ("low", D_low, trees[1])):
                    # the free cross-check: H0 total = MST weight (engines in float32)
                    assert abs(D[li, h][i, j].sum() - tot[key][li, h]) <= 4 * (n - 1) * U
                tight = (
                    max(float((d_row[li, h][i] + d_row[li, h][j]).sum()) for i, j in trees)
                    + 2 * (n - 1) * U
                )
                assert diff[li, h] <= tight <= bound[li, h] + 1e-12
                worst = max(worst, diff[li, h] / tight)
    assert worst > 0  # the two models differ: the test compares something


PAIRS = [
    (T1, T2),
    (
        "Where does the old ferry leave from in winter?",
        "It leaves from the harbor before dawn, when the fishermen mend their nets.",
    ),
]


def _per_head(table, quantity: str, m) -> np.ndarray:
    cols = [f"L{li}H{h}.prompt.{quantity}" for li in range(m.n_layers) for h in range(m.n_heads)]
    values = [table.values[0, table.columns.index(c)] for c in cols]
    return np.array(values).reshape(m.n_layers, m.n_heads)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_tiny_llama_prompt_scores_and_h1_stay_within_the_derived_bound(dtype):
    """The tiny causal Llama in ``dtype`` against its float32 twin, per head, within bounds
    derived from the dtype's unit roundoff and the two passes' captured logits (tests/README.md,
    "Low-precision forward passes"; docs/llm.md states what the same quantities move by on
    SmolLM2):

    * ``prompt.js`` moves by at most ``max_{i ∈ answer, j ≠ i} (d_i + d_j)``: the rows are the
      kept tokens' rows renormalized over them (``low_precision_subset_bounds``), each finite
      edge of the spanning forest moves by at most its ``|ΔD|`` and the score is their mean;
    * ``prompt.attention`` (``1 − max(A, Aᵀ)``) by at most the largest ``|ΔA_ij|`` on an
      edge at an answer token, ``|ΔA_ij| <= A_ij expm1(R_i) + a_i`` (a relative perturbation
      of range ``R_i`` in logit units, and float16's absolute rounding below 2⁻¹⁴);
    * the H1 diagrams of ``analyze`` are within bottleneck distance ``b = ‖D − D′‖∞ + 2u₃₂``
      (stability), and ``‖D − D′‖∞ <= max_{i≠j} (d_i + d_j)`` (the derived row bounds), so
      every H1 bar longer than ``2b`` has a partner: counts of bars longer than ``2b`` on one
      side never exceed all bars of the other; shorter bars may appear or vanish.

    The bounds hold whatever the weights; they are loose (measured changes are 0.5–2 % of
    them) because each adds every rounding's worst case with the same sign."""
    from _tolerances import JS_EVAL_ATOL, diagram_atol, low_precision_subset_bounds
    from attntopo.attention import renormalized_subset
    from attntopo.features import features
    from attntopo.features._compute import join_pair
    from attntopo.features._layers import prompt_mask
    from attntopo.topology.diagram_distances import bottleneck

    low, ref = tiny_llama(dtype), tiny_llama("float32")
    L, H = low.n_layers, low.n_heads
    head_dim = low.hf_model.config.hidden_size // H
    moved = 0.0
    for prompt, answer in PAIRS:
        text, boundary = join_pair(prompt, answer)
        cap_low, cap_ref = capture_qk(low, text), capture_qk(ref, text)
        assert cap_low.encoding.ids == cap_ref.encoding.ids
        (z_low, mag_low), (z_ref, _) = _logits(cap_low), _logits(cap_ref)
        att = ref.attention(text)
        keep = np.flatnonzero(~np.asarray(att.special, dtype=bool))
        answer_rows = ~prompt_mask(att.special, att.offsets, boundary)
        R, absolute, d = low_precision_subset_bounds(
            z_low, mag_low, z_ref, keep, dtype, head_dim, causal=True
        )
        scores = {
            key: features([(prompt, answer)], model=m, sets=("prompt",), n_jobs=1, progress=False)
            for key, m in (("low", low), ("ref", ref))
        }
        # prompt.js: every edge has an end in the answer
        m_s = keep.size
        off = np.where(np.eye(m_s, dtype=bool), -np.inf, 0.0)  # no edge from a token to itself
        pair_d = d[..., :, None] + d[..., None, :] + off
        js_bound = pair_d[..., answer_rows, :].max((-1, -2)) + 2 * JS_EVAL_ATOL
        diff = np.abs(_per_head(scores["low"], "js", low) - _per_head(scores["ref"], "js", ref))
        assert (diff <= js_bound).all(), (dtype, float((diff / js_bound).max()))
        moved = max(moved, float(diff.max()))
        # prompt.attention: the float32 pass's renormalized weights scale the relative bound
        A = renormalized_subset(att.weights.reshape(L * H, *att.weights.shape[-2:]), keep)
        A = A.astype(np.float64).reshape(L, H, m_s, m_s)
        dA = A * np.expm1(R)[..., :, None] + absolute[..., :, None]
        edge = np.maximum(dA, np.swapaxes(dA, -1, -2)) + off
        att_bound = edge[..., answer_rows, :].max((-1, -2)) + 1e-12
        diff = np.abs(
            _per_head(scores["low"], "attention", low) - _per_head(scores["ref"], "attention", ref)
        )
        assert (diff <= att_bound).all(), (dtype, float((diff / att_bound).max()))
        moved = max(moved, float(diff.max()))
        # H1 of the whole text (special tokens included, as analyze takes it)
        d_full = low_precision_row_distance_bound(z_low, mag_low, z_ref, dtype, head_dim, True)
        n = d_full.shape[-1]
        dist_bound = (
            d_full[..., :, None]
            + d_full[..., None, :]
            + np.where(np.eye(n, dtype=bool), -np.inf, 0.0)
        ).max((-1, -2))
        dist_bound += 2 * JS_EVAL_ATOL
        a = {
            key: at.analyze(text, m, maxdim=1, progress=False)
            for key, m in (("low", low), ("ref", ref))
        }
        for li in range(L):
            for h in range(H):
                dD = np.abs(
                    a["low"].distance_matrix(li, h).astype(np.float64)
                    - a["ref"].distance_matrix(li, h).astype(np.float64)
                ).max()
                assert dD <= dist_bound[li, h] + 2 * U
                # stability, with the measured ‖ΔD‖∞ (tighter) and with the derived bound
                b = diagram_atol(dD)
                dg = {key: a[key].diagram(li, h) for key in a}
                assert float(bottleneck(dg["low"], dg["ref"], dim=1)) <= b
                assert b <= diagram_atol(dist_bound[li, h]) + 2 * U
                for one, other in (("low", "ref"), ("ref", "low")):
                    assert (dg[one].lifetimes(1) > 2 * b).sum() <= dg[other].lifetimes(1).size
    assert moved > 0  # the two passes differ: the test compares something
