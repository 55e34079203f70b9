#!/usr/bin/env python
"""Speed of the theory diagnostics (issue 18, "Speed"): one 128-token text, all heads, target < 5 s.

    python benchmarks/theory_bench.py                        # every diagnostic on MiniLM
    python benchmarks/theory_bench.py depth --repeats 5      # one diagnostic
    python benchmarks/theory_bench.py --model smollm2        # the causal model, for information
    python benchmarks/theory_bench.py --quick                # one repeat, 32 tokens (a smoke run)
    python benchmarks/theory_bench.py --json out.json        # the rows as JSON too

Each diagnostic is one function in :data:`DIAGNOSTICS`: ``fn(model, text)`` runs it once, end to
end from the text (forward passes included: the user's cost), on a loaded model.  The harness
loads the model, cuts a text of exactly ``--tokens`` tokens (special tokens included) from
``benchmarks/corpus.txt``, runs each diagnostic once to warm up (imports, first-call caches),
then times ``--repeats`` runs and reports the median and the minimum against the target.
Timings on a shared machine are noisy: the minimum is the better estimate of the cost, the
median of what a user sees.  To add a diagnostic, add its function to :data:`DIAGNOSTICS`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGET_S = 5.0  # issue 18: each diagnostic on one 128-token text, all heads of MiniLM


def bench_depth(model: Any, text: str) -> Any:
    """attntopo.theory.depth on one text: the forward pass with hidden states and attention, path
    products, JS distances and H0 persistence of every head, entropy, Fisher–Rao, k-NN, TwoNN."""
    from attntopo.theory import depth

    return depth(text, model, progress=False)


def bench_context(model: Any, text: str) -> Any:
    """attntopo.theory.context on one text: one forward pass with attention, then for each condition
    (positions on / off; causal models also rotary off with the mask kept) a pass with hooks, 3
    passes of permuted texts and every layer called alone on its permuted input; within-text margins
    and intra-sentence similarity at every depth (one text: no cross-text measures)."""
    from attntopo.theory import context

    return context(text, model, progress=False)


def bench_approx(model: Any, text: str) -> Any:
    """attntopo.theory.approximability on one text: one forward pass capturing attention, queries
    and keys, then every head against the six families at the default budgets 4, 8, 16, 32 (band +
    sparse search, top-k, SVD, FAVOR+ with 4 draws, k-means and H0 clusters, plus H0 clusters at the
    gap scale)."""
    from attntopo.theory import approximability

    return approximability(text, model=model, progress=False)


#: diagnostic name -> fn(model, text): one end-to-end run on one text.
DIAGNOSTICS: dict[str, Callable[[Any, str], Any]] = {
    "depth": bench_depth,
    "context": bench_context,
    "approx": bench_approx,
}


def run(names: list[str], model_name: str, n_tokens: int, repeats: int) -> list[dict]:
    import statistics

    import attntopo as at
    from _common import machine_info, text_with_tokens

    m = at.load_model(model_name)
    text = text_with_tokens(m.tokenizer, n_tokens)
    rows = []
    for name in names:
        fn = DIAGNOSTICS[name]
        fn(m, text)  # warm-up
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(m, text)
            times.append(time.perf_counter() - t0)
        rows.append(
            {
                "diagnostic": name,
                "model": m.name,
                "layers_x_heads": f"{m.n_layers}x{m.n_heads}",
                "tokens": n_tokens,
                "repeats": repeats,
                "median_s": statistics.median(times),
                "min_s": min(times),
                "target_s": TARGET_S,
                "within_target": statistics.median(times) < TARGET_S,
            }
        )
    info = machine_info()
    for r in rows:
        r["machine"] = {
            k: info.get(k)
            for k in ("cpu", "cores", "usable_cores", "torch_threads", "loadavg")
            if k in info
        }
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| diagnostic | model | tokens | median s | min s | target s | within |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['diagnostic']} | {r['model']} ({r['layers_x_heads']}) | {r['tokens']} | "
            f"{r['median_s']:.2f} | {r['min_s']:.2f} | {r['target_s']:.0f} | "
            f"{'yes' if r['within_target'] else 'no'} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "names", nargs="*", help=f"diagnostics to time (default: all of {', '.join(DIAGNOSTICS)})"
    )
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repeat on a 32-token text")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    names = args.names or list(DIAGNOSTICS)
    unknown = [n for n in names if n not in DIAGNOSTICS]
    if unknown:
        ap.error(f"unknown diagnostic(s) {', '.join(unknown)}; known: {', '.join(DIAGNOSTICS)}")
    tokens, repeats = (32, 1) if args.quick else (args.tokens, args.repeats)
    rows = run(names, args.model, tokens, repeats)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
