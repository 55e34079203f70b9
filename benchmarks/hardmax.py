"""Benchmark and measurements of ``attntopo.hardmax`` (issue 19), printed as Markdown.

Usage: ``.venv/bin/python benchmarks/hardmax.py [--repeats 20] [--json out.json] [--no-model]``;
``--classifier`` runs only section 3.

1. Speed: :func:`attntopo.hardmax.simulate` on n Gaussian tokens in R^d for 50 steps (a random
   SPD ``A``): the first call in a fresh process (imports scipy's parts) and the median of the
   warm calls, with the share of the time the dynamics themselves take (the rest: distances
   and connected components for the clusters at every step).  Target: n = 128, d = 16, 50
   steps well under a second.
2. Real attention: MiniLM's hidden states with ``A`` from every head of every layer
   (``key_query_matrix``, margin 0.01) for three sentences: leaders at step 0, clusters after
   80 steps, whether every run converged and put its limit points on the polytope's boundary.
3. The classifier (``--classifier``): two binary tasks from Debian's fortunes, d = 2, 4, 8, 16,
   seeds 0-2, 20 epochs: test accuracy after the last epoch and early-stopped on validation,
   against logistic regression on word counts with the same split.
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
        hm.simulate(Z0, A=A, alpha=1.0, steps=50)
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = hm.simulate(Z0, A=A, alpha=1.0, steps=50)
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
        rows.append(
            {
                "n": n,
                "d": d,
                "steps": 50,
                "first_call_s": first,
                "warm_median_s": statistics.median(times),
                "dynamics_only_median_s": statistics.median(core),
                "repeats": repeats,
                "leaders": int(r.n_leaders[-1]),
                "clusters": int(r.n_clusters[-1]),
                "converged": r.converged,
            }
        )
    return [{"import_s": t_import}] + rows


def minilm() -> dict:
    import numpy as np

    import attntopo as at
    from attntopo import hardmax as hm

    m = at.load_model("minilm")
    per_sentence = []
    examples = []
    for text in SENTENCES:
        lead0, clusters, self_s, shift, ok = [], [], [], [], True
        for layer in range(m.n_layers):
            Z, _ = hm.token_states(m, text, layer=layer)
            for head in range(m.n_heads):
                r = hm.simulate_text(text, m, layer=layer, head=head, alpha=1.0, steps=80)
                # the head's symmetric score without the shift: how many tokens attend to themselves
                S = r.A - r.source["shift"] * np.eye(r.dim)
                self_s.append(int(np.sum(np.argmax(Z @ S @ Z.T, axis=1) == np.arange(r.n_tokens))))
                shift.append(r.source["shift"] / r.source["norm_S"])
                pos = r.polytope()
                ok &= bool(
                    r.converged
                    and pos.inside.all()
                    and pos.on_boundary.all()
                    and r.n_clusters[-1] <= r.leader_points.shape[0]
                )
                lead0.append(int(r.n_leaders[0]))
                clusters.append(int(r.n_clusters[-1]))
                if (layer, head) in ((0, 0), (5, 0)) and text == SENTENCES[0]:
                    examples.append(
                        {
                            "layer": layer,
                            "head": head,
                            "clusters": [
                                {
                                    "members": [r.tokens[i] for i in c["members"]],
                                    "leaders": [r.tokens[i] for i in c["leaders"]],
                                }
                                for c in r.clusters()
                                if len(c["members"]) > 1
                            ],
                        }
                    )
        n = r.n_tokens
        per_sentence.append(
            {
                "text": text,
                "n_tokens": n,
                "heads": len(clusters),
                "leaders_step0": {
                    "min": min(lead0),
                    "median": float(np.median(lead0)),
                    "max": max(lead0),
                },
                "clusters_final": {
                    "min": min(clusters),
                    "median": float(np.median(clusters)),
                    "max": max(clusters),
                },
                "heads_with_a_merge": int(sum(c < n for c in clusters)),
                "self_argmax_unshifted": {
                    "min": min(self_s),
                    "median": float(np.median(self_s)),
                    "max": max(self_s),
                },
                "shift_over_norm_S": {
                    "min": min(shift),
                    "median": float(np.median(shift)),
                    "max": max(shift),
                },
                "theorem_checks_pass": ok,
            }
        )
    return {"sentences": per_sentence, "examples": examples}


def classifier(
    tasks=(("politics", "science"), ("computers", "people")),
    dims=(2, 4, 8, 16),
    seeds=(0, 1, 2),
    epochs: int = 20,
) -> list[dict]:
    """The classifier on binary tasks from Debian's fortunes: every d and seed, the same splits per
    seed."""
    import numpy as np

    from attntopo import hardmax as hm
    from attntopo.datasets import fortunes

    rows = []
    for task in tasks:
        ds = fortunes(categories=list(task))
        for d in dims:
            res = []
            for seed in seeds:
                m = hm.train_classifier(
                    ds.texts,
                    ds.labels,
                    d=d,
                    layers=8,
                    epochs=epochs,
                    seed=seed,
                    top_words=10 if (d == 2 and seed == 0) else 0,
                )
                res.append(m.metrics)
                if m.metrics.get("leader_words"):
                    rows.append({"task": task, "leader_words": m.metrics["leader_words"]})
            stat = {
                k: (float(np.mean([r[k] for r in res])), float(np.std([r[k] for r in res])))
                for k in (
                    "test_accuracy_final",
                    "test_accuracy_early",
                    "majority_test_accuracy",
                    "train_seconds",
                )
            }
            base = [r["baseline"]["test_accuracy"] for r in res]
            rows.append(
                {
                    "task": task,
                    "n": len(ds),
                    "d": d,
                    "seeds": len(seeds),
                    **stat,
                    "baseline": (float(np.mean(base)), float(np.std(base))),
                    "best_epochs": [r["best_epoch"] for r in res],
                }
            )
            print(
                f"(done: {' vs '.join(task)}, d = {d}: {res[-1]['train_seconds']:.0f} s per run)",
                file=sys.stderr,
                flush=True,
            )
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json", help="also write the numbers to this file")
    p.add_argument("--no-model", action="store_true", help="skip the MiniLM measurements")
    p.add_argument(
        "--classifier", action="store_true", help="only the classifier on fortunes (about 10 min)"
    )
    args = p.parse_args()
    if args.classifier:
        rows = classifier()
        print(
            "| task | texts | d | hardmax, last epoch | hardmax, early-stopped on validation | "
            "bag of words + logistic regression | majority class | best epochs | seconds per run |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            if "d" not in r:
                continue
            f = lambda k: f"{r[k][0]:.3f} ± {r[k][1]:.3f}"  # noqa: E731
            print(
                f"| {' vs '.join(r['task'])} | {r['n']} | {r['d']} | {f('test_accuracy_final')} | "
                f"{f('test_accuracy_early')} | {f('baseline')} | "
                f"{r['majority_test_accuracy'][0]:.3f} | {', '.join(map(str, r['best_epochs']))} "
                f"| {r['train_seconds'][0]:.0f} |"
            )
        for r in rows:
            if "leader_words" in r:
                for c, words in r["leader_words"].items():
                    print(
                        f"\nleader words, {c} (d = 2, seed 0): "
                        + ", ".join(f"{w} ({s:.0%})" for w, _, s in words)
                    )
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)
        return 0
    out = {"speed": speed(args.repeats)}
    print("| n | d | steps | first call | warm (median) | dynamics only | leaders | clusters |")
    print("|---|---|---|---|---|---|---|---|")
    for row in out["speed"][1:]:
        print(
            f"| {row['n']} | {row['d']} | 50 | {row['first_call_s'] * 1e3:.1f} ms | "
            f"{row['warm_median_s'] * 1e3:.1f} ms | {row['dynamics_only_median_s'] * 1e3:.1f} ms "
            f"| {row['leaders']} | {row['clusters']} |"
        )
    print(f"\n(import of attntopo.hardmax: {out['speed'][0]['import_s'] * 1e3:.0f} ms)\n")
    if not args.no_model:
        out["minilm"] = minilm()
        print(
            "| sentence | tokens | leaders at step 0 | clusters after 80 steps | heads where "
            "tokens merged | tokens attending to themselves under S (no shift) | shift / ‖S‖₂ | "
            "theorem checks |"
        )
        print("|---|---|---|---|---|---|---|---|")

        def mmm(x, fmt="g"):
            return f"{x['min']:{fmt}} / {x['median']:{fmt}} / {x['max']:{fmt}}"

        for s in out["minilm"]["sentences"]:
            print(
                f"| {s['text']} | {s['n_tokens']} | {mmm(s['leaders_step0'])} | "
                f"{mmm(s['clusters_final'])} | {s['heads_with_a_merge']} of 72 | "
                f"{mmm(s['self_argmax_unshifted'])} | {mmm(s['shift_over_norm_S'], '.2f')} | "
                f"{'pass' if s['theorem_checks_pass'] else 'FAIL'} |"
            )
        print("\n(min / median / max over the 72 heads)")
        for ex in out["minilm"]["examples"]:
            print(
                f"\nlayer {ex['layer']} head {ex['head']}: "
                + "; ".join(
                    f"{' '.join(c['members'])} (leader {' '.join(c['leaders']) or '–'})"
                    for c in ex["clusters"]
                )
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
