"""attntopo on a CUDA GPU: the same numbers as on the CPU, within float32 tolerances.

Skipped where torch sees no CUDA device (CI has none).  On a machine with one it checks that

* a model loaded with ``device="cuda"`` runs there and gives the CPU's attention weights (single
  texts and padded batches) within the two-pass tolerances of tests/_tolerances.py, and that the
  CUDA pass alone stays within the one-pass bound of an exact (float64) pass of the same weights;
* the distance functions take CUDA tensors (float64 and float32 work) and give the CPU's numbers;
* persistence of a CUDA tensor equals persistence of the same matrix on the CPU;
* :func:`attntopo.analyze` with the CUDA model gives the CPU's distances and diagrams;
* the calls that build their own tensors on ``model.device`` work: hidden states
  (``forward_capture``), queries and keys (``capture_qk``), compression (bidirectional and
  causal), the hardmax model functions, the context diagnostic with a rotary causal model;
* ``--device``/``--dtype``: the checks accept the GPUs there and refuse one more, a bfloat16 model
  on the GPU gives renormalized rows and runs the analyses, and the command line runs on the GPU.

The model: ``"minilm"`` (the packaged one), or the folder named by ``ATTNTOPO_GPU_TEST_MODEL`` (for
a GPU machine without the package installed, e.g. a float16 copy of its weights: both devices load
it with ``dtype="float32"``, so they run the same float32 weights).  A small causal Llama with
random weights (rotary positions, grouped-query attention, tied embeddings) is built in a
temporary folder for the causal paths; it needs no download.

Tolerances (tests/README.md, "Tolerances for float32 forward passes").  A CPU pass and a CUDA pass
are two float32 computations of the same function that add the same products in different orders
(MKL/oneDNN kernels against cuBLAS and PyTorch's CUDA kernels), exactly the situation the suite's
error model covers: ``for_model(model).weights_atol`` / ``weights_rtol`` between the two weights
(about 8e-5 absolute for MiniLM; real differences are around 1e-6), ``distance_atol`` between
the JS distances and ``diagram_atol`` between the diagrams.  The model assumes IEEE float32
products: TF32 matrix products (``torch.set_float32_matmul_precision("high")`` or
``torch.backends.cuda.matmul.allow_tf32 = True``) round the inputs to 10-bit mantissas
(``u = 2**-11``: the error model's logit bound becomes about 0.65 for MiniLM), so the fixture
below runs the module with full float32 precision and restores the caller's setting.  Distances
computed in float64 from the same input on both devices differ by at most twice the float64
accuracy of one distance (``2 * JS_EVAL_ATOL``); the float32 distance path has its own bound
(:func:`_js_float32_bound`).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

import attntopo as at
from _tolerances import JS_EVAL_ATOL, TINY, U, for_model, forward_tolerance

pytestmark = [
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available())"
    ),
    pytest.mark.slow,
    pytest.mark.model,
    pytest.mark.forward_compare,
]

MODEL = os.environ.get("ATTNTOPO_GPU_TEST_MODEL") or "minilm"
TEXT = "The cat sat on the mat because it was tired, and the dog slept by the door."
TEXTS = [
    "Quantum information theory allows us to study attention using entanglement",
    "Short one.",
    "The old lighthouse keeper climbed the stairs, trimmed the wick, and watched the sea.",
]
#: two float64 evaluations of the same distances (CPU: the C kernel or torch; CUDA: torch), each
#: within JS_EVAL_ATOL of the exact value (the distances module's documented float64 accuracy;
#: Hellinger, Fisher–Rao and total variation are more accurate than that)
FLOAT64_ATOL = 2 * JS_EVAL_ATOL
LN2 = math.log(2.0)


@pytest.fixture(scope="module", autouse=True)
def full_float32_matmuls():
    """IEEE float32 products on the GPU for the module (no TF32), the caller's setting restored."""
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        assert not torch.backends.cuda.matmul.allow_tf32
        yield
    finally:
        torch.set_float32_matmul_precision(old)


@pytest.fixture(scope="module")
def models():
    """The same weights on the CPU and on the GPU (float32 both)."""
    return (
        at.load_model(MODEL, device="cpu", dtype="float32", progress=False),
        at.load_model(MODEL, device="cuda", dtype="float32", progress=False),
    )


def _weights_close(a: np.ndarray, b: np.ndarray, tol) -> None:
    """Two float32 passes: |a - b| <= weights_atol
    and |a - b| <= weights_rtol · max(a, b) + 4 TINY."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    err = np.abs(a64 - b64)
    assert err.max() <= tol.weights_atol, (err.max(), tol.weights_atol)
    assert np.all(err <= tol.weights_rtol * np.maximum(a64, b64) + 4 * TINY), float(
        (err / np.maximum(np.maximum(a64, b64), TINY)).max()
    )


# ----------------------------------------------------------------------------- the model
def test_model_is_on_the_gpu(models):
    cpu, gpu = models
    assert {p.device.type for p in gpu.hf_model.parameters()} == {"cuda"}
    assert {p.dtype for p in gpu.hf_model.parameters()} == {torch.float32}
    assert gpu.info()["device"] == "cuda" and cpu.info()["device"] == "cpu"
    assert gpu is not cpu and gpu.causal == cpu.causal
    assert at.load_model(MODEL, device="cuda", progress=False) is gpu  # cached per device


def test_attention_cpu_vs_cuda(models):
    cpu, gpu = models
    for text in TEXTS + [TEXT]:
        a, b = cpu.attention(text), gpu.attention(text)
        assert a.tokens == b.tokens and a.offsets == b.offsets
        assert b.weights.dtype == np.float32 and b.weights.shape == a.weights.shape
        _weights_close(a.weights, b.weights, for_model(gpu, len(a.tokens)))
    # padded batches on the GPU (another kernel shape): no mass on padding, the CPU's numbers
    batch = gpu.attention(TEXTS)
    tol = for_model(gpu, max(len(b.tokens) for b in batch))
    for b, text in zip(batch, TEXTS):
        np.testing.assert_allclose(b.weights.sum(-1), 1.0, atol=1e-5)
        _weights_close(b.weights, cpu.attention(text).weights, tol)
    # layer and head selection, special tokens dropped: the same selection as on the CPU
    kw = dict(layers=[1, -1], heads=slice(0, 3), drop_special=True)
    a, b = cpu.attention(TEXT, **kw), gpu.attention(TEXT, **kw)
    assert b.layers == a.layers and b.heads == a.heads and b.tokens == a.tokens
    np.testing.assert_allclose(a.weights, b.weights, atol=tol.weights_atol, rtol=0)
    ids = [gpu.tokenize(t).ids for t in TEXTS]
    for x, y in zip(cpu.forward_ids(ids), gpu.forward_ids(ids)):
        _weights_close(x, y, tol)


def _within_one_pass_bounds(cpu, gpu, texts, tol_for) -> float:
    """Every CUDA float32 pass of ``texts`` against a float64 pass of the same weights (on the CPU):
    within the one-pass bounds ``pass_atol`` / ``pass_rtol`` that the two-pass tolerances are
    built from.  Returns the largest error seen."""
    import copy

    exact_model = copy.deepcopy(cpu.hf_model).double()
    worst = 0.0
    for text in texts:
        x = cpu.tokenize(text).ids
        with torch.inference_mode():
            ids = torch.tensor([x])
            out = exact_model(
                input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True
            )
        exact = torch.stack(out.attentions, 1)[0].numpy()
        tol = tol_for(len(x))
        err = np.abs(gpu.forward_ids([x])[0].astype(np.float64) - exact)
        assert err.max() <= tol.pass_atol, (len(x), err.max(), tol.pass_atol)
        assert np.all(err <= tol.pass_rtol * exact + TINY), float(
            (err / np.maximum(exact, TINY)).max()
        )
        worst = max(worst, float(err.max()))
    return worst


def test_cuda_pass_within_the_error_model(models):
    """The error model's assumptions hold for cuBLAS's kernels as for the CPU's
    (tests/integration/test_float32_error_model.py)."""
    cpu, gpu = models
    worst = _within_one_pass_bounds(cpu, gpu, TEXTS + [TEXT], lambda n: for_model(gpu, n))
    assert worst > 10 * U  # real float32 round-off was measured, not a float64 pass by mistake


def test_wrapped_cuda_model(models):
    """A transformers model the caller put on the GPU runs where it is."""
    from transformers import AutoModel

    cpu, gpu = models
    hf = AutoModel.from_pretrained(cpu.source, dtype=torch.float32).to("cuda")
    m = at.load_model(hf, tokenizer=gpu.tokenizer)
    assert m.device.startswith("cuda") and m.hf_model.config._attn_implementation == "eager"
    a = cpu.attention(TEXT)
    _weights_close(a.weights, m.attention(TEXT).weights, for_model(m, len(a.tokens)))


# ------------------------------------------------------------------------- distances
def _js_float32_bound(d32: np.ndarray, d64: np.ndarray, k: int) -> np.ndarray:
    """Largest |d32 - d64| of the float32 Jensen–Shannon path (``dtype=torch.float32``), per pair.

    The path computes ``JS = ½ (c_p + c_q − Σ u ln u)`` with ``c_p = Σ p ln p + ln 2 · Σ p`` in
    float32 over ``k`` keys: each sum of ``k`` products of a float32 logarithm (a few ulp) has an
    error of at most ``γ_{k+3} Σ |term|`` (Higham §3.1), with ``Σ |p ln p| <= ln k``, ``ln 2 · Σ p
    <= ln 2`` and ``Σ |u ln u| <= 2 ln k + 2 ln 2`` (``u = p + q`` sums to 2), so
    ``|δJS| <= γ_{k+3} (2 ln k + 2 ln 2)`` nats; twice that covers the rounding of the rows to
    float32.  Pairs below 1e-4 nats are recomputed in float64 (``JS_EVAL_ATOL``).  Then
    ``|d32 − d64| = |JS32 − JS64| / (ln 2 · (d32 + d64))`` for ``d = sqrt(JS / ln 2)``.
    """
    gamma = (k + 3) * U / (1 - (k + 3) * U)
    djs = 2 * gamma * (2 * math.log(k) + 2 * LN2)
    s = d32 + d64
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.where(s > 0, djs / (LN2 * s), 0.0)
    return np.minimum(bound, 1.0) + FLOAT64_ATOL


def test_distances_of_cuda_tensors(models):
    cpu, _ = models
    w = cpu.attention(TEXT).weights  # one input for both devices: float64 accuracy applies
    wt = torch.from_numpy(w).to("cuda")
    for metric in at.METRICS:
        d_cpu = at.token_distances(w, metric=metric)
        d_gpu = at.token_distances(wt, metric=metric)
        assert (
            isinstance(d_gpu, np.ndarray)
            and d_gpu.dtype == np.float64
            and d_gpu.shape == d_cpu.shape
        )
        assert np.array_equal(d_gpu, np.swapaxes(d_gpu, -1, -2))
        assert np.all(np.diagonal(d_gpu, axis1=-2, axis2=-1) == 0.0)
        np.testing.assert_allclose(d_gpu, d_cpu, atol=FLOAT64_ATOL, rtol=0, err_msg=metric)
    for mode in ("notebook", "listing"):
        np.testing.assert_allclose(
            at.token_distances(wt, paper_compat=mode),
            at.token_distances(w, paper_compat=mode),
            atol=FLOAT64_ATOL,
            rtol=0,
        )
    # a float64 tensor that carries gradients (detached, never modified)
    wg = wt.double().requires_grad_()
    np.testing.assert_allclose(
        at.token_distances(wg), at.token_distances(w), atol=FLOAT64_ATOL, rtol=0
    )
    # the float32 work on the GPU
    d64 = at.token_distances(w)
    d32 = at.token_distances(wt, dtype=torch.float32)
    assert np.all(np.abs(d32 - d64) <= _js_float32_bound(d32, d64, w.shape[-1]))
    # the rows of a stack (the head-space layout: heads as rows, one matrix per query token)
    from attntopo.distances import row_distances

    x = torch.from_numpy(
        np.ascontiguousarray(w.reshape(-1, w.shape[-2], w.shape[-1]).transpose(1, 0, 2))
    )
    np.testing.assert_allclose(
        row_distances(x.to("cuda")), row_distances(x), atol=FLOAT64_ATOL, rtol=0
    )


def test_close_rows_refined_on_the_gpu():
    """Nearly identical rows go through the cancellation-free recomputation on the GPU too
    (relative accuracy about 1e-15 there, so they are compared relatively as well)."""
    from attntopo.distances import row_distances

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(40), size=(3, 8))
    p[:, 1] = p[:, 0] * (1 + 1e-9 * rng.standard_normal((3, 40)))
    p[:, 1] /= p[:, 1].sum(-1, keepdims=True)
    p[:, 2] = p[:, 0]
    for metric in at.METRICS:
        d_cpu = row_distances(p, metric=metric)
        d_gpu = row_distances(torch.from_numpy(p).to("cuda"), metric=metric)
        assert np.all(d_gpu[:, 0, 2] == 0.0) and np.all(
            (0 < d_gpu[:, 0, 1]) & (d_gpu[:, 0, 1] < 1e-8)
        )
        np.testing.assert_allclose(d_gpu, d_cpu, atol=FLOAT64_ATOL, rtol=1e-9, err_msg=metric)


def test_persistence_of_a_cuda_tensor(models):
    cpu, _ = models
    D = at.token_distances(cpu.attention(TEXT).weights[2, 3])
    a = at.persistence(D, maxdim=1)
    b = at.persistence(torch.from_numpy(D).to("cuda"), maxdim=1)  # the same float64 numbers
    for k in (0, 1):
        np.testing.assert_array_equal(a[k], b[k])


# -------------------------------------------------------------------------- analyses
def test_analyze_cpu_vs_cuda(models):
    cpu, gpu = models
    a, b = at.analyze(TEXT, model=cpu), at.analyze(TEXT, model=gpu)
    tol = for_model(gpu, a.attention.n_tokens)
    np.testing.assert_allclose(b.distances, a.distances, atol=tol.distance_atol, rtol=0)
    L, H = a.distances.shape[:2]
    for layer in range(L):
        for head in range(H):
            da, db = a.diagram(layer, head), b.diagram(layer, head)
            for k in (0, 1):
                assert at.bottleneck(da[k], db[k]) <= tol.diagram_atol, (layer, head, k)


def test_hidden_states_and_queries_on_the_gpu(models):
    """forward_capture and capture_qk build their input on model.device."""
    from attntopo.models._hidden import forward_capture
    from attntopo.models._qk import SELF_CHECK_ATOL, capture_qk

    cpu, gpu = models
    tol = for_model(gpu)
    for x, y in zip(
        forward_capture(cpu, TEXTS, attention=True), forward_capture(gpu, TEXTS, attention=True)
    ):
        assert x.encoding == y.encoding and y.hidden.dtype == np.float32
        # relative Frobenius error of two float32 passes
        # (the bound tests/integration/test_context.py uses)
        for i in range(x.hidden.shape[0]):
            assert np.linalg.norm(x.hidden[i] - y.hidden[i]) <= tol.weights_rtol * np.linalg.norm(
                x.hidden[i]
            )
        _weights_close(x.attention, y.attention, tol)
    q = capture_qk(gpu, TEXT)
    assert q.self_check <= SELF_CHECK_ATOL
    _weights_close(q.attention, cpu.attention(TEXT).weights, tol)


def test_compress_and_hardmax_on_the_gpu(models):
    from attntopo import hardmax as hm
    from attntopo.compress import compress

    cpu, gpu = models
    c = compress(TEXT, gpu, scale=0.0)  # every row its own group: the model's own output
    assert c.effect["cosine"] == pytest.approx(1.0, abs=1e-6)
    assert gpu.hf_model.config._attn_implementation == "eager"  # put back
    assert {p.device.type for p in gpu.hf_model.parameters()} == {"cuda"}
    # the key-query matrix is read from the weights: exactly the CPU's
    A_cpu, _ = hm.key_query_matrix(cpu, layer=2, head=7)
    A_gpu, _ = hm.key_query_matrix(gpu, layer=2, head=7)
    np.testing.assert_array_equal(A_gpu, A_cpu)
    Z_cpu, labels = hm.token_states(cpu, TEXT, layer=2)
    Z_gpu, labels_gpu = hm.token_states(gpu, TEXT, layer=2)
    assert labels == labels_gpu
    assert np.linalg.norm(Z_gpu - Z_cpu) <= for_model(gpu).weights_rtol * np.linalg.norm(Z_cpu)
    r = hm.simulate_text(TEXT, gpu, layer=2, head=7, steps=10)
    assert list(r.tokens) == list(labels)


# ------------------------------------------------------------ a causal, rotary model
@pytest.fixture(scope="module")
def tiny_llama(models, tmp_path_factory):
    """A 2-layer causal Llama with random weights (4 query heads, 2 key/value heads, rotary
    positions, tied embeddings), on both devices; built locally, no download.

    The weights' standard deviation is 1/sqrt(hidden_size), so that queries and keys of the
    normalized hidden states have entries of order one, as the error model behind the
    tolerances assumes (assumption (c) in tests/README.md; with 0.3 the logits were several
    times larger and two passes differed by more than its relative bound).
    """
    from transformers import LlamaConfig, LlamaModel

    cpu, _ = models
    folder = tmp_path_factory.mktemp("tiny_llama")
    tok = cpu.tokenizer
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        initializer_range=64**-0.5,
    )
    torch.manual_seed(0)
    LlamaModel(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return (
        at.load_model(folder, device="cpu", progress=False),
        at.load_model(folder, device="cuda", progress=False),
    )


def test_causal_model_on_the_gpu(tiny_llama):
    from attntopo.compress import compress

    cpu, gpu = tiny_llama
    assert cpu.causal and gpu.causal
    a, b = cpu.attention(TEXT), gpu.attention(TEXT)
    assert np.all(np.triu(b.weights, 1) == 0)
    tol = forward_tolerance(2, 128, 16, len(a.tokens))
    _within_one_pass_bounds(cpu, gpu, TEXTS + [TEXT], lambda n: forward_tolerance(2, 128, 16, n))
    _weights_close(a.weights, b.weights, tol)
    for x, text in zip(gpu.attention(TEXTS), TEXTS):
        _weights_close(x.weights, cpu.attention(text).weights, tol)
    # next-token distributions (tied embeddings) compared on the GPU: nothing changes at scale 0
    c = compress(TEXT, gpu, scale=0.0)
    assert c.effect["kl"] == pytest.approx(0.0, abs=1e-9)
    assert c.effect["perplexity"] == pytest.approx(c.effect["perplexity_compressed"], rel=1e-9)
    assert math.isfinite(c.effect["perplexity"]) and c.effect["perplexity"] > 1


def test_causal_context_and_queries_on_the_gpu(tiny_llama):
    """Rotary queries and keys, and the context diagnostic's permuted passes, on the GPU."""
    from attntopo.models._qk import SELF_CHECK_ATOL, capture_qk

    _, gpu = tiny_llama
    q = capture_qk(gpu, TEXT)
    assert q.self_check <= SELF_CHECK_ATOL and q.queries.shape[1] == 4
    r = at.context(
        [TEXT, TEXTS[0], TEXTS[2]], gpu, n_permutations=1, equivariance_texts=1, progress=False
    )
    assert "no_rotary_causal" in r.conditions and np.all(np.isfinite(r.layer_error))


# ------------------------------------------------------------ --device, --dtype (issue 26)
def test_device_and_dtype_checks_on_a_gpu():
    from attntopo._validation import check_device, check_dtype
    from attntopo.errors import DeviceError

    n = torch.cuda.device_count()
    assert check_device("auto") == "cuda:0" and check_device("cuda") == "cuda"
    assert check_device(f"cuda:{n - 1}") == f"cuda:{n - 1}"
    with pytest.raises(DeviceError, match=rf"^device 'cuda:{n}': this machine has {n} CUDA GPU"):
        check_device(f"cuda:{n}")
    assert check_dtype("float16", "cuda") == "float16"
    if torch.cuda.get_device_capability(0)[0] >= 8:
        assert check_dtype("bfloat16", "cuda:0") == "bfloat16"
    else:
        with pytest.raises(DeviceError, match="compute capability"):
            check_dtype("bfloat16", "cuda:0")


def test_a_bfloat16_model_on_the_gpu():
    """Rows renormalized on the GPU within bfloat16's derived tolerance, the analyses and the
    passes that capture queries and keys or replace rows run."""
    from attntopo.models._qk import capture_qk

    if torch.cuda.get_device_capability(0)[0] < 8:
        pytest.skip("bfloat16 needs compute capability 8.0")
    gpu = at.load_model(MODEL, device="cuda", dtype="bfloat16", progress=False)
    assert gpu.dtype == "bfloat16" and {p.dtype for p in gpu.hf_model.parameters()} == {
        torch.bfloat16
    }
    att = gpu.attention(TEXT)
    n = att.n_tokens
    np.testing.assert_allclose(att.weights.astype(np.float64).sum(-1), 1.0, atol=(n + 1) * 2.0**-24)
    r = at.analyze(TEXT, gpu, maxdim=1, progress=False)
    assert np.isfinite(r.summary()["total_persistence_h0"]).all()
    capture_qk(gpu, TEXT)  # its self-check at bfloat16's bound (models._qk.self_check_atol)
    at.compress(TEXT, gpu, layers=[0], scale="gap")


def test_the_command_line_runs_on_the_gpu(tmp_path):
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "attntopo",
            "analyze",
            TEXT,
            "--model",
            MODEL,
            "--device",
            "auto",
            "--dtype",
            "float16",
            "--layer",
            "0",
            "--maxdim",
            "0",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"]["device"] == "cuda:0" and doc["model"]["dtype"] == "float16"


# ------------------------------------------------- issue 26: H0 and the prompt score on the GPU
def test_minimum_spanning_trees_on_the_gpu(models):
    """The batched Prim gives the same edges on CUDA float64 tensors as on the CPU (min and
    argmin are exact), and the H0 diagrams of the engines."""
    from attntopo.topology._mst import h0_diagrams, prim_edges

    cpu, _ = models
    D = at.token_distances(cpu.attention(TEXT).weights[1])  # (H, n, n)
    a, b = prim_edges(D), prim_edges(torch.from_numpy(D).to("cuda"))
    assert b.device.type == "cuda"
    np.testing.assert_array_equal(b.cpu().numpy(), a.numpy())
    for k, dg in enumerate(h0_diagrams(torch.from_numpy(D).to("cuda"))):
        assert dg == at.persistence(D[k], maxdim=0)


def test_prompt_score_on_the_gpu(models):
    """Both prompt quantities of CUDA attention: the attention score exactly the CPU's (the same
    float64 operations), the JS score within twice one distance's float64 accuracy."""
    from attntopo.features._prompt import prompt_features

    cpu, _ = models
    A = cpu.attention(TEXT, drop_special=True).weights[2]
    mask = np.arange(A.shape[-1]) < A.shape[-1] // 2
    a = prompt_features(A, None, mask)
    b = prompt_features(torch.from_numpy(A).to("cuda"), None, mask)
    np.testing.assert_array_equal(b[:, 1], a[:, 1])
    np.testing.assert_allclose(b[:, 0], a[:, 0], atol=2 * JS_EVAL_ATOL, rtol=0)


def test_js_rows_and_the_prompt_score_in_r_n_on_the_gpu(models):
    """Issue 36: the distances from chosen rows to all rows of CUDA tensors stay on the GPU and
    are the CPU full matrix's rows within twice one distance's float64 accuracy (bidirectional
    MiniLM rows and causal rows, chosen rows in any order); the JS prompt score on the GPU, from
    the response's rows alone, is the CPU full matrix's score within the same bound (a mean of
    edge lengths, each within it)."""
    from attntopo.distances import token_distances_tensor
    from attntopo.features._prompt import prompt_features, spanning_forest_length

    cpu, _ = models
    A = cpu.attention(TEXT, drop_special=True).weights[3]  # (H, n, n)
    n = A.shape[-1]
    rng = np.random.default_rng(36)
    causal = np.tril(rng.dirichlet(np.ones(n), size=(4, n)))
    causal /= causal.sum(-1, keepdims=True)
    for W in (A, causal):
        full = at.token_distances(W)
        for rows in (list(range(n - 5, n)), [int(i) for i in rng.permutation(n)[:7]]):
            got = token_distances_tensor(torch.from_numpy(W).to("cuda"), rows=rows)
            assert got.device.type == "cuda" and got.dtype == torch.float64
            np.testing.assert_allclose(got.cpu().numpy(), full[:, rows], atol=FLOAT64_ATOL, rtol=0)
        prompt = np.arange(n) < n - 5  # a RAG-shaped pair: a long prompt, a short answer
        want = spanning_forest_length(full, prompt) / 5
        b = prompt_features(torch.from_numpy(W).to("cuda"), None, prompt, ("js",))[:, 0]
        np.testing.assert_allclose(b, want, atol=2 * JS_EVAL_ATOL, rtol=0)


def test_features_and_analyze_h0_on_the_gpu(tiny_llama):
    """features(prompt) of the causal Llama on the GPU (streamed layer by layer, scored there)
    and analyze(maxdim=0) (distances and H0 there) against the CPU model, within the two-pass
    tolerances: a score is a mean of edge lengths, each within the distance tolerance."""
    cpu, gpu = tiny_llama
    pair = (TEXTS[0], TEXTS[2])
    a = at.features([pair], cpu, sets=("prompt",))
    b = at.features([pair], gpu, sets=("prompt",))
    n = len(cpu.tokenize(pair[0] + " " + pair[1]).ids)
    tol = forward_tolerance(2, 128, 16, n)
    assert a.columns == b.columns
    np.testing.assert_allclose(
        b.values, a.values, atol=max(tol.distance_atol, tol.weights_atol), rtol=0
    )
    x, y = at.analyze(TEXT, cpu, maxdim=0), at.analyze(TEXT, gpu, maxdim=0)
    assert y.engine == "mst"
    for layer in range(2):
        for head in range(4):
            assert (
                at.bottleneck(x.diagram(layer, head)[0], y.diagram(layer, head)[0])
                <= tol.diagram_atol
            )


def test_single_linkage_on_the_gpu(models):
    """The batched single linkage of CUDA distances: SciPy's heights and cophenetic matrix of the
    same (float64) matrices exactly, and compare's connection scales (their trees on the GPU)
    within the diagram tolerance of the CPU model's (a connection scale is 1-Lipschitz in D)."""
    from scipy.cluster.hierarchy import cophenet

    from attntopo.topology import linkage, single_linkage

    cpu, gpu = models
    D = at.token_distances(cpu.attention(TEXT).weights[1])  # (H, n, n)
    Z = single_linkage(torch.from_numpy(D).to("cuda"))
    for k in range(D.shape[0]):
        want = linkage(D[k])
        np.testing.assert_array_equal(Z[k][:, 2], want[:, 2])
        np.testing.assert_array_equal(cophenet(Z[k]), cophenet(want))
    other = "The dog slept by the door because it was tired."
    a, b = at.compare(TEXT, other, model=cpu), at.compare(TEXT, other, model=gpu)
    tol = for_model(gpu, max(a.a.attention.n_tokens, a.b.attention.n_tokens))
    assert a.connection_a.shape == b.connection_a.shape and a.connection_a.size
    np.testing.assert_allclose(b.connection_a, a.connection_a, atol=tol.diagram_atol, rtol=0)
    np.testing.assert_allclose(b.connection_b, a.connection_b, atol=tol.diagram_atol, rtol=0)


def test_overlapped_h1_on_the_gpu(models):
    """analyze(maxdim=1) with the model on the GPU: distances layer by layer there, each layer's
    H1 in the engines on the CPU while the GPU does the next; every diagram is exactly the
    engines' diagram of the distances it returned (nothing lost or reordered in the overlap)."""
    _, gpu = models
    for an in at.analyze(TEXTS, model=gpu, maxdim=1):
        L, H, n, _ = an.distances.shape
        want = at.persistence_batch(list(an.distances.reshape(L * H, n, n)), maxdim=1)
        for k, w in enumerate(want):
            assert an.diagram(k // H, k % H) == w


def test_features_js_layer_by_layer_on_the_gpu(models):
    """features(sets=("js",)) with the model on the GPU: distances there, each layer's H0/H1 in
    the engines while the GPU does the next layer; the H0 total persistence (an MST's weight,
    within (n - 1)·diagram_atol) agrees with the CPU model's."""
    cpu, gpu = models
    a = at.features([TEXT], cpu, sets=("js",), layers=[0, 3])
    b = at.features([TEXT], gpu, sets=("js",), layers=[0, 3])
    assert a.columns == b.columns
    n = cpu.attention(TEXT).n_tokens
    tol = for_model(gpu, n)
    cols = [k for k, c in enumerate(a.columns) if c.endswith(".js.h0.total_persistence")]
    assert len(cols) == 2 * cpu.n_heads
    np.testing.assert_allclose(
        b.values[:, cols], a.values[:, cols], atol=(n - 1) * tol.diagram_atol, rtol=0
    )
