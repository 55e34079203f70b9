#!/usr/bin/env python
"""Corpus throughput and memory: attntopo.corpus.run (local engine) against warm ``analyze``
calls and a tda4atd-style loop (issue 17, "Speed targets").

    python benchmarks/corpus_bench.py --out docs/corpus_bench.json          # the issue's sizes
    python benchmarks/corpus_bench.py --count 60 --memory 200,1000 --out …   # reduced
    python benchmarks/corpus_bench.py --quick                                # a smoke run

Workload: ``--count`` texts of about 32 and about 128 tokens (windows of
``benchmarks/corpus.txt``) on MiniLM, all 72 heads, the ``js`` set (H0 and H1 of each head's
Jensen–Shannon Rips diagram), batch size 32, into a fresh store.  Reported per length:

* ``corpus_texts_per_s``: texts / wall time of ``corpus.run`` (model already loaded; the
  store's manifest, every part file and errors.jsonl included);
* ``analyze_texts_per_s``: ``--analyze-count`` texts, one warm ``attntopo.analyze(text,
  drop_special=True)`` each (the same distances and diagrams, no features, no store);
  ``ratio_to_analyze`` = corpus time per text / analyze time per text (goal ≤ 1.3);
* ``baseline_texts_per_s``: ``--baseline-count`` texts the tda4atd way (one forward pass per
  text, then per head a Python double loop of ``scipy.spatial.distance.jensenshannon`` and
  ``ripser``); ``speedup_to_baseline`` (goal ≥ 20);
* ``peak_rss_mib``: peak resident memory of the process and its persistence workers during the
  run;
* ``loadavg_start``, ``loadavg_end``: the load averages (1, 5, 15 min) before and after the
  size's measurements (the machine may be shared: read the ratios, taken in the same run);
* ``ray`` (with ``--ray``, the default when ray is installed, except with ``--quick``): the Ray
  engine end to end on the same texts right after (a local Ray on all CPUs, one actor per CPU): its
  texts/s, ``ratio_ray_to_local`` (goal ≤ 1.5) and Ray's overhead (see ``corpus_ray_bench.py``); at
  ``--cli-tokens`` lengths also both engines as ``attntopo corpus`` in fresh processes
  (``cli_ratio_ray_to_local``).

Memory (``--memory N1,N2``): the same ~32-token run of N1 and of N2 texts, each in a fresh
process, peak RSS (process + workers) compared (goal: N2 within +10 % of N1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import RSSSampler, machine_info, texts_with_tokens, versions  # noqa: E402

SETS = ("js",)
BATCH = 32


def _texts(model, n_tokens: int, count: int) -> list[str]:
    return texts_with_tokens(model.tokenizer, n_tokens - 2, count)  # + [CLS], [SEP]


def baseline(model, texts: list[str]) -> None:
    """tda4atd-style: per text one forward pass; per head a double loop of scipy calls, ripser."""
    from ripser import ripser
    from scipy.spatial.distance import jensenshannon

    for text in texts:
        att = model.attention(text).drop_special()
        for layer in range(att.n_layers):
            for head in range(att.n_heads):
                A = att.weights[layer, head].astype(np.float64)
                n = A.shape[0]
                J = np.zeros((n, n))
                for i in range(n):
                    for j in range(i + 1, n):
                        J[i, j] = J[j, i] = jensenshannon(A[i], A[j], base=2)
                ripser(np.nan_to_num(J), distance_matrix=True, maxdim=1)


def run_corpus(model, texts: list[str]) -> tuple[float, RSSSampler, dict]:
    from attntopo import corpus

    with tempfile.TemporaryDirectory() as d, RSSSampler() as rss:
        t0 = time.perf_counter()
        # drop_special=True: as the analyze runs it is compared with (corpus' default until
        # issue 29, now False)
        store = corpus.run(
            texts,
            out=Path(d) / "store",
            model=model,
            sets=SETS,
            batch_size=BATCH,
            drop_special=True,
            progress=False,
        )
        seconds = time.perf_counter() - t0
        counts = store.counts()
    return seconds, rss, counts


def measure(
    n_tokens: int,
    count: int,
    analyze_count: int,
    baseline_count: int,
    ray: bool = False,
    cli_tokens: tuple[int, ...] = (),
) -> dict:
    import attntopo as at

    model = at.load_model("minilm")
    texts = _texts(model, n_tokens, count)
    load_start = list(os.getloadavg())  # the machine may be shared: the load beside each size
    run_corpus(model, texts[:BATCH])  # warm: imports, the persistence pool, the model hash
    seconds, rss, counts = run_corpus(model, texts)
    assert counts["ok"] == count, counts
    out = {
        "n_tokens": n_tokens,
        "texts": count,
        "mean_tokens": float(np.mean([len(model.tokenize(t).ids) for t in texts])),
        "corpus_s": seconds,
        "corpus_texts_per_s": count / seconds,
        "peak_rss_mib": rss.peak_total / 2**20,
    }
    if ray:  # the Ray engine on the same texts, right after (benchmarks/corpus_ray_bench.py)
        from corpus_ray_bench import measure_cli, measure_ray

        out["ray"] = measure_ray(model, texts, seconds)
        if n_tokens in cli_tokens:  # both engines as a user runs them: fresh processes
            out["ray"].update(measure_cli(texts))
    sub = texts[:analyze_count]
    at.analyze(sub[0], model=model, drop_special=True)  # warm
    t0 = time.perf_counter()
    for t in sub:
        at.analyze(t, model=model, drop_special=True)
    per_text = (time.perf_counter() - t0) / len(sub)
    out.update(
        analyze_texts=len(sub),
        analyze_texts_per_s=1.0 / per_text,
        ratio_to_analyze=(seconds / count) / per_text,
    )
    sub = texts[:baseline_count]
    t0 = time.perf_counter()
    baseline(model, sub)
    per_text = (time.perf_counter() - t0) / len(sub)
    out.update(
        baseline_texts=len(sub),
        baseline_texts_per_s=1.0 / per_text,
        speedup_to_baseline=per_text / (seconds / count),
        loadavg_start=load_start,
        loadavg_end=list(os.getloadavg()),
    )
    return out


def memory_child(count: int) -> None:
    """One ~32-token run of ``count`` texts in this (fresh) process; prints JSON."""
    import attntopo as at

    model = at.load_model("minilm")
    texts = _texts(model, 32, count)
    # the persistence pool starts here, before sampling: a worker caught between its fork and
    # its exec still maps the parent's pages and would count them twice (~600 MiB)
    run_corpus(model, texts[:BATCH])
    seconds, rss, counts = run_corpus(model, texts)
    print(
        json.dumps(
            {
                "texts": count,
                "seconds": seconds,
                "peak_rss_mib": rss.peak_total / 2**20,
                "peak_self_mib": rss.peak_self / 2**20,
                "ok": counts["ok"],
            }
        )
    )


def memory(counts: list[int]) -> list[dict]:
    out = []
    for n in counts:
        r = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(n)],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ, ATTNTOPO_PROGRESS="0"),
        )
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(f"memory: {out[-1]}", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--tokens", default="32,128")
    ap.add_argument("--analyze-count", type=int, default=50)
    ap.add_argument("--baseline-count", type=int, default=5)
    ap.add_argument("--memory", default="1000,10000", help="N1,N2 (empty: skip)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--ray",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also the Ray engine on the same texts (default: when ray is installed)",
    )
    ap.add_argument(
        "--cli-tokens",
        default="32",
        help="lengths at which both engines also run as `attntopo corpus` in fresh processes",
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory_child:
        memory_child(a.memory_child)
        return
    if a.quick:
        a.count, a.tokens, a.analyze_count, a.baseline_count, a.memory = 40, "32", 5, 1, "40,80"
    if a.ray is None:  # a quick run leaves Ray out unless asked (its start-up is ~10 s)
        import importlib.util

        a.ray = not a.quick and importlib.util.find_spec("ray") is not None
    doc = {
        "machine": machine_info(),
        "versions": versions(),
        "sets": list(SETS),
        "batch_size": BATCH,
        "args": {k: v for k, v in vars(a).items() if k not in ("out", "memory_child")},
        "runs": [],
    }
    for n in [int(x) for x in a.tokens.split(",") if x]:
        r = measure(
            n,
            a.count,
            a.analyze_count,
            a.baseline_count,
            ray=a.ray,
            cli_tokens=tuple(int(x) for x in a.cli_tokens.split(",") if x),
        )
        print(json.dumps(r), file=sys.stderr)
        doc["runs"].append(r)
    if a.memory:
        m = memory([int(x) for x in a.memory.split(",")])
        doc["memory"] = {"runs": m, "ratio": m[-1]["peak_rss_mib"] / m[0]["peak_rss_mib"]}
    text = json.dumps(doc, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
