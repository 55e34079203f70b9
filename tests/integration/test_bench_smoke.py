"""The benchmarks run (smoke test, no timing assertions) and compare like with like."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attntopo as at
from _tolerances import for_model

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"

pytestmark = pytest.mark.slow


def _baseline():
    spec = importlib.util.spec_from_file_location("attntopo_bench_baseline", BENCH / "baseline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.model
def test_quick_benchmark_runs_and_reports_every_section(tmp_path):
    out = tmp_path / "bench.md"
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = proc.stdout
    for title in (
        "## Targets",
        "## How to read this",
        "## 1. One text",
        "## 2. Stage by stage",
        "## 3. Distance matrices alone",
        "## 4. Throughput",
        "## 5. The causal model",
        "## 6. The Jensen–Shannon kernel alone",
        "## 8. Persistence engines on small matrices",
        "## 9. Short texts",
        "## Machine and versions",
    ):
        assert title in report, f"missing section {title!r}"
    # the goals of issues 3 and 36, each with a value or "not measured" and a verdict
    goals = report.split("## Targets (issues 3 and 36)", 1)[1].split("\n## ", 1)[0]
    assert "short texts (32 tokens)" in goals and "the C kernel, one thread" in goals
    assert "load average" in report.split("## Targets", 1)[0]  # the run's load, at the top
    # every numbered section holds a markdown table with at least one data row
    for i in (1, 2, 3, 4, 5, 6, 9):
        chunk = report.split(f"## {i}. ", 1)[1].split("\n## ", 1)[0]
        lines = [ln for ln in chunk.splitlines() if ln.startswith("|")]
        assert len(lines) >= 3 and lines[1].startswith("|---"), f"section {i} has no table"
    assert "failed" not in report.split("## Run details", 1)[1]
    assert out.read_text() == report  # --out writes the same report


@pytest.fixture(scope="module")
def baseline_run(minilm, sample_text):
    bl = _baseline()
    tok, model = bl.load()
    heads = [(0, 0), (2, 5), (5, 11)]
    return bl, bl.run(tok, model, sample_text, heads=heads, keep=True), heads


@pytest.mark.forward_compare
def test_baseline_does_the_same_work_as_attntopo(minilm, sample_text, baseline_run):
    bl, b, heads = baseline_run
    att = minilm.attention(sample_text)
    assert b["n_tokens"] == att.n_tokens and b["n_heads_total"] == 72
    h1_bars = 0
    for layer, head in heads:
        # the same forward pass (same model folder, eager attention)
        np.testing.assert_allclose(
            b["attentions"][layer][head],
            att.weights[layer, head],
            atol=for_model(minilm).weights_atol,
            rtol=0,
        )
        # the same Jensen–Shannon matrix, base 2, from the same attention rows
        P = b["attentions"][layer][head]
        D_bl = b["distances"][(layer, head)]
        D_at = at.token_distances(P)
        np.testing.assert_allclose(D_bl, D_at, rtol=0, atol=1e-9)
        # the same H0/H1 diagrams (gudhi, full complex, min_persistence 0) as attntopo's
        ours = at.persistence(D_at, maxdim=1)
        theirs = bl.diagram_arrays(b["diagrams"][(layer, head)], maxdim=1)
        for d in (0, 1):
            mine = np.asarray(ours[d], dtype=np.float64).reshape(-1, 2)
            mine = mine[np.lexsort((mine[:, 1], mine[:, 0]))]
            assert mine.shape == theirs[d].shape, (layer, head, d, mine.shape, theirs[d].shape)
            np.testing.assert_allclose(theirs[d], mine, rtol=0, atol=1e-9)
        h1_bars += len(theirs[1])
    assert h1_bars > 0  # the H1 comparison is not vacuous


def test_baseline_subset_rows_match_full_loop(baseline_run):
    bl, b, heads = baseline_run
    P = b["attentions"][2][5]
    part = bl.js_matrix(P, rows=4)
    np.testing.assert_array_equal(part[:4], b["distances"][(2, 5)][:4])
    assert not part[4:].any()


def test_engines_benchmark_runs_and_compares_every_engine(tmp_path):
    """benchmarks/engines_bench.py (the measurement behind the 'auto' engine): runs alone and in
    two processes at once, reports every installed engine, and checks that each gives
    giotto-ph's diagrams bit for bit (it fails otherwise)."""
    from attntopo.topology import engines

    out = tmp_path / "engines.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "engines_bench.py"),
            "--sizes",
            "12,41",
            "--stacks",
            "1",
            "--rounds",
            "1",
            "--procs",
            "2",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    import json

    doc = json.loads(out.read_text())
    assert [r["n"] for r in doc["table"]] == [12, 41] and doc["procs"] == 2
    for e in ("giotto", "ripser", "auto"):
        if e in engines.available_engines():
            assert all(r[f"{e}_alone_ms"] > 0 and r[f"{e}_busy_ms"] > 0 for r in doc["table"])
    if "ripser" in engines.available_engines():  # ripser.py's core starts no threads
        assert all(r["ripser_switches_per_call"] < 0.5 for r in doc["table"])


def test_llm_benchmark_runs_and_reports_every_step(tmp_path):
    """benchmarks/llm_bench.py on a tiny random Llama: every step measured or skipped with its
    reason, ratios to the forward pass, the JSON and markdown written."""
    import json

    out, js = tmp_path / "llm.md", tmp_path / "llm.json"
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "llm_bench.py"),
            "--shape",
            "tiny",
            "--tokens",
            "48,64",
            "--budget",
            "1000",
            "--out",
            str(out),
            "--json",
            str(js),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(js.read_text())
    (model,) = res["models"]
    assert (model["layers"], model["heads"], model["kv_heads"]) == (2, 4, 2)
    assert [r["n"] for r in model["runs"]] == [48, 64]
    for row in model["runs"]:
        for key in (
            "forward",
            "prompt_attention",
            "prompt_js",
            "prompt_attention_rag",
            "prompt_js_rag",
            "analyze0_ten",
            "analyze1_ten",
            "analyze0_all",
            "analyze1_all",
        ):
            r = row[key]
            assert r["s"] > 0 and r["host_extra"] is not None, (key, r)
            assert (
                r.get("ratio", 1.0) == pytest.approx(r["s"] / row["forward"]["s"])
                or key == "forward"
            )
    assert "features(prompt), attention score, all heads" in out.read_text()
    # the RAG-shaped pair (issue 36): the answer about an eighth of the tokens
    for row in model["runs"]:
        assert 0 < row["rag"]["answer_tokens"] <= row["rag"]["n"] // 8 + 2
    # --merge keeps a step this run left out at the same length, marked with its date
    full = json.loads(js.read_text())
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "llm_bench.py"),
            "--shape",
            "tiny",
            "--tokens",
            "64",
            "--steps",
            "forward,prompt_js_rag",
            "--merge",
            "--json",
            str(js),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    row48, row64 = json.loads(js.read_text())["models"][0]["runs"]
    assert row48 == full["models"][0]["runs"][0]
    assert "earlier_run" not in row64["prompt_js_rag"] and row64["prompt_js_rag"]["s"] > 0
    before = full["models"][0]["runs"][1]
    assert row64["analyze1_all"] == {**before["analyze1_all"], "earlier_run": before["date"]}
    assert "(earlier run, " in out.read_text()
    # a budget of 0 skips what it estimates, and says why
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "llm_bench.py"),
            "--shape",
            "tiny",
            "--tokens",
            "48",
            "--budget",
            "0",
            "--json",
            str(js),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    row = json.loads(js.read_text())["models"][0]["runs"][0]
    assert row["prompt_js"]["skipped"].startswith("estimated") and "s" not in row["analyze1_all"]
    # --steps: the steps named only, the others skipped with the reason given; --merge keeps the
    # earlier run's rows of other lengths (the 2,048-token CPU run adds its row this way)
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "llm_bench.py"),
            "--shape",
            "tiny",
            "--tokens",
            "64",
            "--steps",
            "forward,prompt_attention",
            "--skip-reason",
            "too slow here",
            "--merge",
            "--json",
            str(js),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = json.loads(js.read_text())["models"][0]["runs"]
    assert [r["n"] for r in runs] == [48, 64] and runs[0] == row
    assert runs[1]["prompt_attention"]["s"] > 0
    assert all(
        runs[1][k] == {"skipped": "too slow here", "ratio": None}
        for k in ("prompt_js", "analyze0_ten", "analyze1_ten", "analyze0_all", "analyze1_all")
    )
    report = out.read_text()
    assert "skipped: too slow here" in report and "**Goals (issues 26 and 36)" in report


@pytest.mark.parametrize(
    ("n", "causal", "rows"),
    [(9, True, None), (7, False, None), (10, True, [9, 8, 2]), (6, False, [0, 5])],
)
def test_kernel_section_counts_the_pair_keys_the_kernel_reads(n, causal, rows):
    """benchmarks/_kernel.py's pair-keys: for every pair the kernel computes (each once), the
    keys between the later first nonzero and the earlier last nonzero of the two rows."""
    sys.path.insert(0, str(BENCH))
    import _kernel

    A = _kernel._rows(n, causal)[0]
    lo = np.argmax(A > 0, axis=1)
    hi = n - np.argmax(A[:, ::-1] > 0, axis=1)
    pairs = (
        {(i, j) for i in range(n) for j in range(i + 1, n)}
        if rows is None
        else {(min(i, j), max(i, j)) for i in rows for j in range(n) if j != i}
    )
    want = sum(max(0, min(hi[i], hi[j]) - max(lo[i], lo[j])) for i, j in pairs)
    assert _kernel.pair_keys(n, causal, rows) == want


def test_precision_benchmark_runs_and_reports_every_quantity(tmp_path):
    """benchmarks/precision_bench.py on a random tiny Llama cast to each dtype (the same
    weights): every quantity, bar count, stability ratio and head selection reported, the
    labelled pairs the same in every run."""
    import json

    spec = importlib.util.spec_from_file_location(
        "attntopo_bench_precision", BENCH / "precision_bench.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pairs, labels = mod.labelled_pairs(8, seed=0)
    assert (pairs, labels) == mod.labelled_pairs(8, seed=0) and labels == [0] * 4 + [1] * 4
    assert [p for p, _ in pairs[:4]] == [p for p, _ in pairs[4:]]  # the same prompts, two answers
    paragraph = {
        s: i
        for i, p in enumerate(mod.corpus().split("\n\n"))
        for s in re.split(r"(?<=[.!?])\s+", p.strip())
    }
    assert all(paragraph[p] == paragraph[a] for p, a in pairs[:4])
    assert all(paragraph[p] != paragraph[a] for p, a in pairs[4:])

    js = tmp_path / "precision.json"
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "precision_bench.py"),
            "--model",
            "tiny",
            "--pairs",
            "8",
            "--js-texts",
            "2",
            "--json",
            str(js),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(js.read_text())
    assert res["k"] == 4 and res["tokens"]["min"] > 10
    for dt in ("bfloat16", "float16"):
        q = res["quantities"][dt]
        assert set(q) == {
            "prompt.attention",
            "prompt.js",
            "h0.total_persistence",
            "h1.total_persistence",
            "h1.max_persistence",
        }
        assert all(0 < v["median"] <= v["p95"] <= v["max"] for v in q.values())
        assert set(res["bars"][dt]) == {"h1.n_bars", "h1.n_bars>0.01", "h1.n_bars>0.05"}
        # stability: the H1 bottleneck distance is at most ||D - D'||inf (+ float32 rounding)
        assert 0 < res["stability"][dt]["bottleneck_h1_over_dist_max"] <= 1 + 1e-3
        assert all(0 <= s[dt] <= 4 for s in res["selection"].values())
    assert set(res["selection"]) == {
        f"prompt.{q}/{c}" for q in ("attention", "js") for c in ("cv_accuracy", "anova")
    }
    for heading in (
        "| `prompt.js` | float16 |",
        "| longer than 0.05 | bfloat16 |",
        "| top 4 heads by |",
    ):
        assert heading in proc.stdout
