"""Benchmark and measurements of ``attntopo.hardmax`` (issue 19), printed as Markdown.

Usage: ``.venv/bin/python benchmarks/hardmax.py [--repeats 20] [--json out.json] [--no-model]``

1. Speed: :func:`attntopo.hardmax.simulate` on n Gaussian tokens in R^d for 50 steps (a random
   SPD ``A``): the first call in a fresh process (imports scipy's parts) and the median of the
   warm calls, with the share of the time the dynamics themselves take (the rest: distances
   and connected components for the clusters at every step).  Target: n = 128, d = 16, 50
   steps well under a second.
2. Real attention: MiniLM's hidden states with ``A`` from every head of every layer
   (``key_query_matrix``, margin 0.01) for three sentences: leaders at step 0, clusters after
   80 steps, whether every run converged and put its limit points on the polytope's boundary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Quantum information theory allows us to study attention using entanglement.",
    "I loved this movie, but the ending was terrible.",
]


def speed(repeats: int) -> list[dict]:
    import numpy as np

    t0 = time.perf_counter()
    from attntopo import hardmax as hm
    from attntopo.hardmax._dynamics import attention_sets, hardmax_step, tolerances

    t_import = time.perf_counter() - t0
    rows = []
    for n, d in [(128, 16), (128, 2), (512, 16), (1024, 64)]:
        rng = np.random.default_rng(0)
        Z0 = rng.normal(size=(n, d))
        Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        A = (Q * np.exp(rng.uniform(0, np.log(10), size=d))) @ Q.T
        t0 = time.perf_counter()
        hm.simulate(Z0, A, 1.0, 50)
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = hm.simulate(Z0, A, 1.0, 50)
            times.append(time.perf_counter() - t0)
        # the dynamics alone: attention sets and updates, no cluster bookkeeping
        tol = tolerances(Z0, A)
        core = []
        for _ in range(repeats):
            Z = Z0
            t0 = time.perf_counter()
            for _k in range(50):
                Z = hardmax_step(Z, attention_sets(Z, A, tol), 1.0)
            core.append(time.perf_counter() - t0)
        rows.append({"n": n, "d": d, "steps": 50, "first_call_s": first, "warm_median_s": statistics.median(times),
                     "dynamics_only_median_s": statistics.median(core), "repeats": repeats,
                     "leaders": int(r.n_leaders[-1]), "clusters": int(r.n_clusters[-1]), "converged": r.converged})
    return [{"import_s": t_import}] + rows


def minilm() -> dict:
    import numpy as np

    import attntopo as at
    from attntopo import hardmax as hm

    m = at.load_model("minilm")
    per_sentence = []
    examples = []
    for text in SENTENCES:
        lead0, clusters, ok = [], [], True
        for layer in range(m.n_layers):
            for head in range(m.n_heads):
                r = hm.simulate_text(text, m, layer, head, alpha=1.0, steps=80)
                pos = r.polytope()
                ok &= bool(r.converged and pos.inside.all() and pos.on_boundary.all()
                           and r.n_clusters[-1] <= r.leader_points.shape[0])
                lead0.append(int(r.n_leaders[0]))
                clusters.append(int(r.n_clusters[-1]))
                if (layer, head) in ((0, 0), (5, 0)) and text == SENTENCES[0]:
                    examples.append({"layer": layer, "head": head, "clusters": [
                        {"members": [r.tokens[i] for i in c["members"]], "leaders": [r.tokens[i] for i in c["leaders"]]}
                        for c in r.clusters() if len(c["members"]) > 1]})
        n = r.n_tokens
        per_sentence.append({
            "text": text, "n_tokens": n, "heads": len(clusters),
            "leaders_step0": {"min": min(lead0), "median": float(np.median(lead0)), "max": max(lead0)},
            "clusters_final": {"min": min(clusters), "median": float(np.median(clusters)), "max": max(clusters)},
            "heads_with_a_merge": int(sum(c < n for c in clusters)),
            "theorem_checks_pass": ok,
        })
    return {"sentences": per_sentence, "examples": examples}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json", help="also write the numbers to this file")
    p.add_argument("--no-model", action="store_true", help="skip the MiniLM measurements")
    args = p.parse_args()
    out = {"speed": speed(args.repeats)}
    print("| n | d | steps | first call | warm (median) | dynamics only | leaders | clusters |")
    print("|---|---|---|---|---|---|---|---|")
    for row in out["speed"][1:]:
        print(f"| {row['n']} | {row['d']} | 50 | {row['first_call_s'] * 1e3:.1f} ms | {row['warm_median_s'] * 1e3:.1f} ms "
              f"| {row['dynamics_only_median_s'] * 1e3:.1f} ms | {row['leaders']} | {row['clusters']} |")
    print(f"\n(import of attntopo.hardmax: {out['speed'][0]['import_s'] * 1e3:.0f} ms)\n")
    if not args.no_model:
        out["minilm"] = minilm()
        print("| sentence | tokens | leaders at step 0 (min / median / max over 72 heads) | clusters after 80 steps "
              "| heads where tokens merged | theorem checks |")
        print("|---|---|---|---|---|---|")
        for s in out["minilm"]["sentences"]:
            lo, cl = s["leaders_step0"], s["clusters_final"]
            print(f"| {s['text']} | {s['n_tokens']} | {lo['min']} / {lo['median']:g} / {lo['max']} | "
                  f"{cl['min']} / {cl['median']:g} / {cl['max']} | {s['heads_with_a_merge']} | "
                  f"{'pass' if s['theorem_checks_pass'] else 'FAIL'} |")
        for ex in out["minilm"]["examples"]:
            print(f"\nlayer {ex['layer']} head {ex['head']}: " + "; ".join(
                f"{' '.join(c['members'])} (leader {' '.join(c['leaders']) or '–'})" for c in ex["clusters"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
