#!/usr/bin/env python
"""Feature throughput: attntopo.features against a tda4atd-style baseline (issue 16, section 5).

    python benchmarks/features_bench.py --out docs/benchmarks_features.md   # (part of make bench)
    python benchmarks/features_bench.py --quick                            # seconds, smoke test

Workload: texts of about 32 and 128 tokens (cut from ``benchmarks/corpus.txt``) on MiniLM,
all 72 heads, the sets js + graph + barcode + template. attntopo runs ``features(texts)``
(batched forward pass, vectorized sets, one persistence batch per chunk). The baseline does the
same work the way the reference code does: the same forward pass, then per head and threshold a
``networkx.MultiDiGraph`` and its invariants (la-tda's functions), ripser per head for the
barcode and JS diagrams (JS distances by ``scipy.spatial.distance.jensenshannon``, as the
founding paper's code), Python loops over heads for the templates. The baseline runs on a
subset of the texts and its per-text time is scaled; both are reported in texts per second.
Goals (issue 16): at least 20x the baseline's throughput, and js + graph + template at
10 texts/s or more at 32 tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from itertools import islice
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SETS = ("js", "graph", "barcode", "template")
FAST_SETS = ("js", "graph", "template")
THRESHOLDS = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75)


def texts_of(model, n_tokens: int, count: int) -> list[str]:
    """``count`` distinct windows of the corpus with about ``n_tokens`` tokens each."""
    words = (HERE / "corpus.txt").read_text(encoding="utf-8").split()
    out, start = [], 0
    per = max(4, int(n_tokens * 0.7))
    while len(out) < count:
        if start + per > len(words):
            start = (start + 7) % 50  # wrap with a shift: windows stay distinct
        chunk = words[start : start + per]
        while len(model.tokenize(" ".join(chunk)).ids) > n_tokens and len(chunk) > 4:
            chunk = chunk[:-1]
        out.append(" ".join(chunk))
        start += per
    return out


# ------------------------------------------------------------------ the baseline
def _baseline_graph(A: np.ndarray) -> list[float]:
    import networkx as nx

    feats = []
    for thr in THRESHOLDS:
        M = (A >= thr).astype(np.int8)
        g = nx.from_numpy_array(M, create_using=nx.MultiDiGraph())
        u = nx.Graph(g.to_undirected())
        w = nx.number_connected_components(u)
        no_loops = u.copy()
        no_loops.remove_edges_from(nx.selfloop_edges(no_loops))
        feats += [
            sum(1 for _ in islice(nx.strongly_connected_components(g), 500)),
            sum(1 for _ in islice(nx.weakly_connected_components(g), 500)),
            g.number_of_edges(),
            float(np.mean([d for _, d in g.degree()])),
            sum(1 for _ in islice(nx.simple_cycles(g), 50)),
            u.number_of_edges() - u.number_of_nodes() + w,
            int(nx.is_chordal(no_loops)),
            len(nx.maximal_matching(u)),
        ]
    return feats


def _stats(dgm: np.ndarray) -> list[float]:
    dgm = dgm[np.isfinite(dgm[:, 1])]
    if not len(dgm):
        return [0.0] * 4
    ln = dgm[:, 1] - dgm[:, 0]
    p = ln[ln > 0] / ln.sum() if ln.sum() > 0 else np.ones(1)
    return [ln.sum(), ln.max(), float(-(p * np.log(p)).sum()), len(ln)]


def baseline_features(model, texts: list[str]) -> None:
    """The tda4atd way: loops over texts, heads, thresholds; networkx and ripser per head."""
    from ripser import ripser
    from scipy.spatial.distance import jensenshannon

    for text in texts:
        att = model.attention(text)
        real = att.drop_special()
        L, H = att.n_layers, att.n_heads
        for layer in range(L):
            for head in range(H):
                A = real.weights[layer, head].astype(np.float64)
                full = att.weights[layer, head].astype(np.float64)
                n = A.shape[0]
                _baseline_graph(A)  # graph
                W = np.where(A > 1e-3, A, 0.0)  # barcode (la-tda's matrix_to_ripser)
                D = 1.0 - W
                np.fill_diagonal(D, 0)
                D = np.minimum(D, D.T)
                for dgm in ripser(D, distance_matrix=True, maxdim=1)["dgms"]:
                    _stats(dgm)
                J = np.zeros((n, n))  # js: the paper's double loop of scipy calls, then ripser
                for i in range(n):
                    for j in range(i + 1, n):
                        J[i, j] = J[j, i] = jensenshannon(A[i], A[j], base=2)
                J = np.nan_to_num(J)
                for dgm in ripser(J, distance_matrix=True, maxdim=1)["dgms"]:
                    _stats(dgm)
                m = full.shape[0]  # templates, one matrix at a time
                for T in (np.eye(m), np.eye(m, k=-1), np.eye(m, k=1)):
                    np.linalg.norm(full - T) / np.sqrt(np.sum(full**2) + np.sum(T**2))


# ------------------------------------------------------------------ measurement
def measure(n_tokens: int, count: int, base_count: int) -> dict:
    import attntopo as at
    from attntopo.features import features

    model = at.load_model("minilm")
    texts = texts_of(model, n_tokens, count)
    # drop_special=True throughout: the baseline drops special tokens, and so did features'
    # default until issue 29 (now False)
    features(texts[:2], model=model, drop_special=True)  # warm: imports, worker pool
    out = {
        "n_tokens": n_tokens,
        "texts": count,
        "mean_tokens": float(np.mean([len(model.tokenize(t).ids) for t in texts])),
    }
    for name, sets in (("all", SETS), ("js+graph+template", FAST_SETS)):
        t0 = time.perf_counter()
        features(texts, model=model, sets=sets, drop_special=True)
        out[f"attntopo_{name}_texts_per_s"] = count / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    baseline_features(model, texts[:base_count])
    out["baseline_texts"] = base_count
    out["baseline_all_texts_per_s"] = base_count / (time.perf_counter() - t0)
    out["speedup_all"] = out["attntopo_all_texts_per_s"] / out["baseline_all_texts_per_s"]
    out["load_average"] = list(os.getloadavg())
    return out


def report(rows: list[dict]) -> str:
    lines = [
        "# Feature throughput (issue 16)",
        "",
        "MiniLM, all 72 heads; sets js + graph + barcode + template ('all'). The baseline "
        "(networkx per head and threshold, ripser per head, the paper's JS double loop, Python "
        "loops) runs on a subset of the texts; texts per second. Goals: 20x the baseline, "
        "js + graph + template >= 10 texts/s at 32 tokens. Generated by "
        "`benchmarks/features_bench.py`.",
        "",
        "| tokens (mean) | texts | attntopo, all | attntopo, js+graph+template | baseline, all "
        "(texts timed) | speed-up | load (1 min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n_tokens']} ({r['mean_tokens']:.0f}) | {r['texts']} | "
            f"{r['attntopo_all_texts_per_s']:.2f}/s | "
            f"{r['attntopo_js+graph+template_texts_per_s']:.2f}/s | "
            f"{r['baseline_all_texts_per_s']:.3f}/s ({r['baseline_texts']}) | "
            f"{r['speedup_all']:.0f}x | {r['load_average'][0]:.1f} |"
        )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines += [
        "",
        f"Machine: {os.cpu_count()} CPUs, load average at the end {load} (1, 5, 15 min; "
        "the machine is shared); run " + time.strftime("%Y-%m-%d") + ".",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="8 texts, baseline on 1 (smoke test)")
    ap.add_argument("--out", help="write the markdown report here")
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument("--texts", type=int, help="texts per size (default 200; --quick: 8)")
    ap.add_argument(
        "--baseline-texts", type=int, help="texts the baseline runs (default 4; --quick: 1)"
    )
    ap.add_argument(
        "--sizes", type=int, nargs="+", help="token lengths (default 32 128; --quick: 32)"
    )
    args = ap.parse_args()
    count, base = (8, 1) if args.quick else (200, 4)
    sizes = (32,) if args.quick else (32, 128)
    count = args.texts or count
    base = args.baseline_texts or base
    sizes = tuple(args.sizes or sizes)
    rows = [measure(n, count, base) for n in sizes]
    text = report(rows)
    print(text)
    from attntopo.io import atomic_write_text

    if args.out:
        atomic_write_text(args.out, text)
    if args.json:
        atomic_write_text(args.json, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
