#!/usr/bin/env python
"""The measurements behind docs/theory.md §2 (Efficient attention): both packaged models on
fortunes.

    python benchmarks/theory_approx_measure.py [--texts 6] [--no-smollm2]

Runs :func:`attntopo.theory.approximability` (default settings: budgets 4, 8, 16, 32 numbers per
query row, all six families, 4 orthogonal FAVOR+ draws, seed 0) on fortunes of 60–110 words
(science, people, politics; drawn with seed 0) for MiniLM and SmolLM2, writes
``docs/theory_approx.json`` (per model: per budget and family the median and quartiles of both
errors over every head of every text, win counts, the Scatterbrain check per text and pooled over
texts, the winner by head-types label, the typical query/key norms that decide the kernel
family's variance) and ``docs/img/theory_approx.png`` (the first text of each model), and prints
the markdown tables docs/theory.md quotes.  About 5 min on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def fortune_texts(n: int) -> tuple[list[str], str]:
    from attntopo.datasets import fortunes

    ds = fortunes(
        categories=["science", "people", "politics"],
        min_words=60,
        max_words=110,
        n_per_category=n // 3 + 1,
        seed=0,
    )
    return ds.texts[
        :n
    ], f"{n} fortunes (science, people, politics; 60–110 words; drawn with seed 0)"


def pooled_scatterbrain(results: list, budget: int, other: str) -> dict:
    """The Scatterbrain check on every head of every text together (entropy vs log error ratio)."""
    from scipy.stats import spearmanr

    ent = np.concatenate([np.asarray(r.entropy_norm).ravel() for r in results])
    g = np.concatenate(
        [np.log(r.error("top_k", budget) / r.error(other, budget)).ravel() for r in results]
    )
    rho = spearmanr(ent, g)
    low = ent <= np.median(ent)
    return {
        "spearman": float(rho.statistic),
        "p_value": float(rho.pvalue),
        "sparse_wins_low": float(np.mean(g[low] < 0)),
        "other_wins_high": float(np.mean(g[~low] > 0)),
        "n_heads": int(g.size),
    }


def qk_norms(model, text: str) -> dict:
    """Median over heads and tokens of ‖q‖√s and of ‖q + k‖² s (the positive features' relative
    variance per feature is exp(s‖q + k‖²) − 1)."""
    from attntopo.models._qk import capture_qk

    cap = capture_qk(model, text)
    s = cap.scaling[:, None, None, None]
    Q, K = cap.queries.astype(np.float64) * np.sqrt(s), cap.keys.astype(np.float64) * np.sqrt(s)
    qn = np.linalg.norm(Q, axis=-1)
    pair = (Q[..., :, None, :] + K[..., None, :, :]) ** 2
    qk2 = pair.sum(-1)
    return {
        "q_norm_median": float(np.median(qn)),
        "qk2_median": float(np.median(qk2)),
        "qk2_p90": float(np.percentile(qk2, 90)),
    }


def measure(name: str, texts: list[str]) -> tuple[list, dict]:
    import attntopo as at
    from attntopo.theory import approximability

    m = at.load_model(name)
    results, seconds = [], []
    for t in texts:
        t0 = time.perf_counter()
        results.append(approximability(t, model=m, truncate=True))
        seconds.append(time.perf_counter() - t0)
    r0 = results[0]
    fams, budgets = r0.families, r0.budgets
    common = [b for b in budgets if all(b in r.budgets for r in results)]
    table = {}
    for b in common:
        for f in fams:
            e = np.concatenate([r.error(f, b).ravel() for r in results])
            d = np.concatenate([r.error(f, b, by="js").ravel() for r in results])
            wins = sum(int((r.winners(b) == f).sum()) for r in results)
            wins_js = sum(int((r.winners(b, by="js") == f).sum()) for r in results)
            table[f"{b}/{f}"] = {
                "median": float(np.median(e)),
                "q25": float(np.percentile(e, 25)),
                "q75": float(np.percentile(e, 75)),
                "js_median": float(np.median(d)),
                "wins": wins,
                "wins_js": wins_js,
            }
    by_label = {}
    mid = 16 if 16 in common else common[len(common) // 2]
    for r in results:
        for lab, win in zip(np.asarray(r.labels).ravel(), r.winners(mid).ravel()):
            by_label.setdefault(str(lab), {}).setdefault(str(win), 0)
            by_label[str(lab)][str(win)] += 1
    sb = {
        str(b): {o: pooled_scatterbrain(results, b, o) for o in ("low_rank", "kernel")}
        for b in common
    }
    per_text = {
        str(b): {
            o: sum(bool(r.scatterbrain()[b][o]["holds"]) for r in results)
            for o in ("low_rank", "kernel")
        }
        for b in common
    }
    kstd = float(np.nanmedian(np.concatenate([r.kernel_std.ravel() for r in results])))
    # the H0 clusters at each head's gap scale (compress's default): how many, and what they cost
    sc = [r.scale_summary() for r in results]
    frac = np.concatenate(
        [np.asarray(c["clusters"], dtype=float) / r.n_tokens for c, r in zip(sc, results)]
    )
    clusters = np.concatenate([np.asarray(c["clusters"], dtype=float) for c in sc])
    gap = {
        "scale": str(r0.scale),
        "clusters_median": float(np.median(clusters)),
        "clusters_q25": float(np.percentile(clusters, 25)),
        "clusters_q75": float(np.percentile(clusters, 75)),
        "fraction_median": float(np.median(frac)),
        "eps_median": float(np.median(np.concatenate([np.asarray(c["scale"]) for c in sc]))),
        "error_median": float(np.median(np.concatenate([np.asarray(c["error"]) for c in sc]))),
        "js_median": float(np.median(np.concatenate([np.asarray(c["js"]) for c in sc]))),
    }
    return results, {
        "model": r0.model,
        "n_texts": len(texts),
        "n_tokens": [r.n_tokens for r in results],
        "heads_per_text": int(r0.errors.shape[2] * r0.errors.shape[3]),
        "budgets": common,
        "families": list(fams),
        "seconds": seconds,
        "table": table,
        "winner_by_label_at": mid,
        "winner_by_label": by_label,
        "scatterbrain_pooled": sb,
        "scatterbrain_texts_holding": per_text,
        "kernel_std_median": kstd,
        "qk": qk_norms(m, texts[0]),
        "gap_clusters": gap,
    }


def report(runs: list[dict], source: str) -> str:
    out = [f"Texts: {source}.", ""]
    for run in runs:
        fams = run["families"]
        out += [
            f"**{run['model']}** ({run['heads_per_text']} heads × {run['n_texts']} texts, "
            f"{min(run['n_tokens'])}–{max(run['n_tokens'])} tokens; "
            f"{np.median(run['seconds']):.1f} s per text)",
            "",
            "| budget | " + " | ".join(fams) + " |",
            "|---" * (len(fams) + 1) + "|",
        ]
        for b in run["budgets"]:
            cells = [
                f"{run['table'][f'{b}/{f}']['median']:.3f} ({run['table'][f'{b}/{f}']['wins']})"
                for f in fams
            ]
            out.append(f"| {b} | " + " | ".join(cells) + " |")
        out += ["", "median relative Frobenius error over heads × texts (heads won)", ""]
        out += ["| budget | " + " | ".join(fams) + " |", "|---" * (len(fams) + 1) + "|"]
        for b in run["budgets"]:
            cells = [
                f"{run['table'][f'{b}/{f}']['js_median']:.3f} "
                f"({run['table'][f'{b}/{f}']['wins_js']})"
                for f in fams
            ]
            out.append(f"| {b} | " + " | ".join(cells) + " |")
        out += ["", "median row JS distance (heads won by JS)", ""]
        for b, row in run["scatterbrain_pooled"].items():
            for o, s in row.items():
                out.append(
                    f"- budget {b}, top-k vs {o}: ρ = {s['spearman']:.2f} (p = "
                    f"{s['p_value']:.1g}), sparse wins {s['sparse_wins_low']:.0%} of the "
                    f"low-entropy half, {o} {s['other_wins_high']:.0%} of the high-entropy half; "
                    f"holds in {run['scatterbrain_texts_holding'][b][o]}/{run['n_texts']} texts"
                )
        out += [
            "",
            f"winner at budget {run['winner_by_label_at']} by head-types label: "
            f"{run['winner_by_label']}",
            f"kernel: median std over draws {run['kernel_std_median']:.3f}; {run['qk']}",
        ]
        g = run["gap_clusters"]
        out += [
            f"H0 clusters at scale {g['scale']!r}: median {g['clusters_median']:.1f} clusters per "
            f"head (quartiles {g['clusters_q25']:.0f}, {g['clusters_q75']:.0f}; median "
            f"{g['fraction_median']:.2f} of the tokens), median ε {g['eps_median']:.3f}, median "
            f"error {g['error_median']:.3f} (JS {g['js_median']:.3f})",
            "",
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=6)
    ap.add_argument("--no-smollm2", action="store_true")
    args = ap.parse_args(argv)
    texts, source = fortune_texts(args.texts)
    names = ["minilm"] + ([] if args.no_smollm2 else ["smollm2"])
    runs, firsts = [], []
    for name in names:
        results, run = measure(name, texts)
        runs.append(run)
        firsts.append(results[0])
    (ROOT / "docs" / "theory_approx.json").write_text(
        json.dumps({"source": source, "runs": runs}, indent=1) + "\n", encoding="utf-8"
    )
    from attntopo.plots.theory_approx import plot_approximability

    fig = plot_approximability(firsts, budget=16)
    fig.savefig(ROOT / "docs" / "img" / "theory_approx.png", dpi=110)
    print(report(runs, source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
