#!/usr/bin/env python
"""What low precision costs (issue 33 item 9): SmolLM2 in bfloat16 and float16 against float32.

    nice -n 10 python benchmarks/precision_bench.py --json docs/precision_bench.json
    python benchmarks/precision_bench.py --model tiny --pairs 8 --js-texts 2   # smoke test

Model: the packaged SmolLM2 (``at.load_model("smollm2", dtype=...)``, 30 layers x 9 heads,
causal), loaded three times on the CPU.  Texts: (prompt, answer) pairs cut from
benchmarks/corpus.txt, half of them a sentence and the next one of its paragraph (label 0),
half a sentence and a sentence of another paragraph (label 1, the "hallucination"), the
mismatches drawn with ``--seed``.  Everything is deterministic: the same pairs, labels and
selection folds in every run (the float32 numbers depend only on the CPU's kernels).

Measured for each low dtype against float32, over every (text, head):

* the ``prompt`` set's two scores (``prompt.attention``, TOHA's; ``prompt.js``), also as a
  share of each head's spread (standard deviation) over the texts;
* from ``analyze(maxdim=1)`` of ``--js-texts`` pairs joined into one text (half coherent, half
  not), per head: the H0 total persistence, the H1 total and longest bar, the H1 bar counts (all
  bars, and those longer than 0.01 and 0.05: ``features(min_persistence=)``), ``‖D − D′‖∞``
  and the H1 bottleneck distance over it (stability says at most 1, plus float32 rounding);
* the heads ``select_heads`` chooses (k = 10, criteria ``cv_accuracy`` and ``anova``) on the
  prompt scores: how many of float32's ten each dtype keeps, next to what float32 itself keeps
  when only the cross-validation folds change (``random_state`` 1 instead of 0), and the
  Spearman correlation of all heads' scores.

Relative changes are ``|x_low − x_32| / |x_32|`` (values with ``x_32 = 0`` are counted
apart), also stated in units of the dtype's unit roundoff ``u`` (bfloat16 ``2⁻⁸``, float16
``2⁻¹¹``).  The markdown table printed at the end is docs/llm.md's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from _common import corpus, machine_info, versions  # noqa: E402

LOW = ("bfloat16", "float16")
UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
K = 10
#: the H0/H1 numbers of analyze compared, per head
TOPOLOGY = ("h0.total_persistence", "h1.total_persistence", "h1.max_persistence")
#: H1 bars counted only when longer than these (``features(min_persistence=)``)
BAR_FLOORS = (0.01, 0.05)


def labelled_pairs(n_pairs: int, seed: int) -> tuple[list[tuple[str, str]], list[int]]:
    """``n_pairs`` (prompt, answer) pairs, half coherent (label 0), half mismatched (label 1)."""
    import numpy as np

    paragraphs = [p.strip() for p in corpus().split("\n\n") if p.strip()]
    sentences = [re.split(r"(?<=[.!?])\s+", p) for p in paragraphs]
    coherent = [(i, k) for i, s in enumerate(sentences) for k in range(len(s) - 1)]
    half = n_pairs // 2
    if not 2 <= half <= len(coherent):
        raise SystemExit(f"--pairs must be even, 4 to {2 * len(coherent)}")
    rng = np.random.default_rng(seed)
    chosen = [coherent[j] for j in sorted(rng.choice(len(coherent), half, replace=False))]
    pairs, labels = [], []
    for i, k in chosen:
        pairs.append((sentences[i][k], sentences[i][k + 1]))
        labels.append(0)
    for i, k in chosen:
        other = (i + 1 + int(rng.integers(len(sentences) - 1))) % len(sentences)  # never i
        answer = sentences[other][int(rng.integers(1, len(sentences[other])))]
        pairs.append((sentences[i][k], answer))
        labels.append(1)
    return pairs, labels


def _columns(table, suffix: str):
    """(values of the columns ending in ``suffix``, their heads), in table order."""
    import numpy as np

    from attntopo.features import parse_column

    keep = [j for j, c in enumerate(table.columns) if c.endswith("." + suffix)]
    heads = [parse_column(table.columns[j])[:2] for j in keep]
    return np.asarray(table.values[:, keep], dtype=np.float64), heads


def relative_changes(low, ref, u: float) -> dict:
    """Summary of |low − ref| / |ref| over all entries (entries with ref = 0 apart)."""
    import numpy as np

    nz = ref != 0
    rel = np.abs(low[nz] - ref[nz]) / np.abs(ref[nz])
    out = {
        "n": int(ref.size),
        "median": float(np.median(rel)),
        "p95": float(np.quantile(rel, 0.95)),
        "max": float(rel.max()),
        "median_u": float(np.median(rel) / u),
        "max_abs": float(np.abs(low - ref).max()),
        "ref_zero": int((~nz).sum()),
        "ref_zero_changed": int(((~nz) & (low != 0)).sum()),
    }
    return out


def _where(low, ref, heads) -> dict:
    """The (text, head) of the largest relative change, with both values."""
    import numpy as np

    rel = np.where(ref != 0, np.abs(low - ref) / np.where(ref != 0, np.abs(ref), 1.0), 0.0)
    t, j = np.unravel_index(int(np.argmax(rel)), rel.shape)
    layer, head = heads[j]
    return {
        "text": int(t),
        "head": f"L{layer}H{head}",
        "float32": float(ref[t, j]),
        "low": float(low[t, j]),
    }


def bar_counts(low, ref) -> dict:
    import numpy as np

    d = low - ref
    changed = d != 0
    rel = np.abs(d[ref > 0]) / ref[ref > 0]
    worst = np.argmax(np.where(ref > 0, np.abs(d) / np.maximum(ref, 1), 0))
    t, j = np.unravel_index(int(worst), d.shape)
    return {
        "n": int(ref.size),
        "changed_share": float(changed.mean()),
        "max_abs": int(np.abs(d).max()),
        "max_rel": float(rel.max()) if rel.size else 0.0,
        "total_float32": int(ref.sum()),
        "total_low": int(low.sum()),
        "worst": {"float32": int(ref[t, j]), "low": int(low[t, j])},
    }


def selections(tables: dict, labels: list[int], k: int) -> dict:
    """Overlap of each dtype's k best heads with float32's, per prompt quantity and criterion."""
    import numpy as np
    from scipy.stats import spearmanr

    from attntopo.features import head_scores

    out = {}
    for quantity in ("attention", "js"):
        for criterion in ("cv_accuracy", "anova"):
            key = f"prompt.{quantity}/{criterion}"
            scores = {
                dt: head_scores(_only(t, quantity), labels, criterion=criterion, random_state=0)
                for dt, t in tables.items()
            }
            best = {dt: sorted(s, key=lambda h: (-s[h], h))[:k] for dt, s in scores.items()}
            row = {dt: len(set(best[dt]) & set(best["float32"])) for dt in LOW}
            heads = sorted(scores["float32"])
            for dt in LOW:
                rho = spearmanr(
                    [scores["float32"][h] for h in heads], [scores[dt][h] for h in heads]
                )
                row[f"{dt}_spearman"] = float(rho.statistic)
            tenth = sorted(scores["float32"].values(), reverse=True)
            row["float32_tied_at_10th"] = int(sum(np.isclose(v, tenth[k - 1]) for v in tenth))
            if criterion == "cv_accuracy":  # the folds' own effect, in float32
                other = head_scores(
                    _only(tables["float32"], quantity), labels, criterion=criterion, random_state=1
                )
                best_other = sorted(other, key=lambda h: (-other[h], h))[:k]
                row["float32_other_folds"] = len(set(best_other) & set(best["float32"]))
            row["float32_heads"] = [f"L{a}H{b}" for a, b in best["float32"]]
            out[key] = row
    return out


def _only(table, quantity: str):
    from attntopo.features import FeatureTable

    keep = [j for j, c in enumerate(table.columns) if c.endswith(f".prompt.{quantity}")]
    return FeatureTable(
        table.values[:, keep],
        tuple(table.columns[j] for j in keep),
        table.index,
        table.texts,
        table.skipped,
        dict(table.settings),
        dict(table.provenance),
    )


def _topology(a, heads) -> dict:
    """Per head of one ``analyze`` result: the H0/H1 numbers compared, and the distances."""
    import numpy as np

    out = {
        k: []
        for k in ("h0.total_persistence", "h1.total_persistence", "h1.max_persistence", "h1.n_bars")
        + tuple(f"h1.n_bars>{t}" for t in BAR_FLOORS)
    }
    for layer, head in heads:
        dg = a.diagram(layer, head)
        l0, l1 = dg.lifetimes(0), dg.lifetimes(1)
        out["h0.total_persistence"].append(l0.sum())
        out["h1.total_persistence"].append(l1.sum())
        out["h1.max_persistence"].append(l1.max() if l1.size else 0.0)
        out["h1.n_bars"].append(l1.size)
        for t in BAR_FLOORS:
            out[f"h1.n_bars>{t}"].append(int((l1 > t).sum()))
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def load(model: str, dtype: str, seed: int):
    """The packaged SmolLM2 in ``dtype``, or (``"tiny"``, the smoke test) a random tiny Llama
    built in float32 with ``seed`` and cast, so that every dtype has the same weights."""
    import torch

    import attntopo as at

    if model != "tiny":
        return at.load_model(model, dtype=dtype)
    import _llama

    m = _llama.random_llama("tiny", seed=seed)
    return at.load_model(
        m.hf_model.to(getattr(torch, dtype)), tokenizer=m.tokenizer, progress=False
    )


def measure(n_pairs: int, js_texts: int, seed: int, model: str = "smollm2") -> dict:
    import numpy as np
    import torch

    import attntopo as at
    from attntopo.features import features
    from attntopo.topology.diagram_distances import bottleneck

    torch.manual_seed(seed)
    pairs, labels = labelled_pairs(n_pairs, seed)
    # half coherent, half mismatched pairs, joined as features joins them
    chosen = pairs[: js_texts // 2] + pairs[n_pairs // 2 :][: js_texts - js_texts // 2]
    joined = [p + " " + a for p, a in chosen]
    prompt, topo, analyses, seconds = {}, {}, {}, {}
    for dt in ("float32",) + LOW:
        t0 = time.perf_counter()
        m = load(model, dt, seed)
        heads = [(layer, head) for layer in range(m.n_layers) for head in range(m.n_heads)]
        prompt[dt] = features(pairs, model=m, sets=("prompt",), n_jobs=1, progress=False)
        seconds[f"{dt}_prompt"] = round(time.perf_counter() - t0, 1)
        analyses[dt] = [at.analyze(t, m, maxdim=1, n_jobs=1, progress=False) for t in joined]
        per_text = [_topology(a, heads) for a in analyses[dt]]
        topo[dt] = {k: np.stack([p[k] for p in per_text]) for k in per_text[0]}
        seconds[dt] = round(time.perf_counter() - t0, 1)
        print(f"{dt}: {seconds[dt]} s", file=sys.stderr, flush=True)
        tokens = _token_counts(m.tokenizer, pairs)
        del m
    k = min(K, max(1, len(heads) // 2))  # the tiny smoke model: 4 of its 8 heads
    result = {
        "model": model,
        "pairs": n_pairs,
        "js_texts": js_texts,
        "seed": seed,
        "k": k,
        "seconds": seconds,
        "tokens": tokens,
        "quantities": {},
        "bars": {},
        "stability": {},
    }
    for dt in LOW:
        u = UNIT_ROUNDOFF[dt]
        q = result["quantities"].setdefault(dt, {})
        for suffix in ("prompt.attention", "prompt.js"):
            low, hs = _columns(prompt[dt], suffix)
            ref, _ = _columns(prompt["float32"], suffix)
            q[suffix] = relative_changes(low, ref, u) | {"worst": _where(low, ref, hs)}
            spread = ref.std(axis=0)  # each head's spread over the texts
            q[suffix]["of_spread"] = {
                "median": float(np.median(np.abs(low - ref) / spread)),
                "max": float((np.abs(low - ref) / spread).max()),
            }
        for key in ("h0.total_persistence", "h1.total_persistence", "h1.max_persistence"):
            low, ref = topo[dt][key], topo["float32"][key]
            q[key] = relative_changes(low, ref, u) | {"worst": _where(low, ref, heads)}
        result["bars"][dt] = {
            key: bar_counts(topo[dt][key], topo["float32"][key])
            for key in topo[dt]
            if key.startswith("h1.n_bars")
        }
        # stability: the bottleneck distance of the H1 diagrams never exceeds ||D − D'||∞
        ratios, dmax = [], []
        for a_low, a_ref in zip(analyses[dt], analyses["float32"]):
            for layer, head in heads:
                dd = float(
                    np.abs(
                        a_low.distance_matrix(layer, head).astype(np.float64)
                        - a_ref.distance_matrix(layer, head)
                    ).max()
                )
                dmax.append(dd)
                b = float(bottleneck(a_low.diagram(layer, head), a_ref.diagram(layer, head), dim=1))
                ratios.append(b / dd if dd > 0 else 0.0)
        result["stability"][dt] = {
            "dist_max_median": float(np.median(dmax)),
            "dist_max": float(max(dmax)),
            "bottleneck_h1_over_dist_max": float(max(ratios)),
        }
    result["selection"] = selections(prompt, labels, k)
    return result


def _token_counts(tok, pairs) -> dict:
    import numpy as np

    n = np.array([len(tok(p + " " + a)["input_ids"]) for p, a in pairs])
    return {"min": int(n.min()), "median": float(np.median(n)), "max": int(n.max())}


def markdown(r: dict) -> str:
    pct = lambda x: f"{100 * x:.2g} %"  # noqa: E731
    lines = [
        "| quantity | dtype | median change | 95th percentile | max (head: float32 → low) "
        "| change / the head's spread over texts: median, max |",
        "|---|---|---|---|---|---|",
    ]
    for key in ("prompt.attention", "prompt.js") + TOPOLOGY:
        for dt in LOW:
            s = r["quantities"][dt][key]
            w = s["worst"]
            spread = (
                f"{s['of_spread']['median']:.2g}, {s['of_spread']['max']:.2g}"
                if "of_spread" in s
                else "—"
            )
            lines.append(
                f"| `{key}` | {dt} | {pct(s['median'])} ({s['median_u']:.2g} u) | "
                f"{pct(s['p95'])} | {pct(s['max'])} ({w['head']}: {w['float32']:.3g} → "
                f"{w['low']:.3g}) | {spread} |"
            )
    lines += [
        "",
        "| H1 bars counted | dtype | counts that change "
        "| all heads' total: float32 → low | largest relative change (float32 → low) |",
        "|---|---|---|---|---|",
    ]
    for key in ("h1.n_bars",) + tuple(f"h1.n_bars>{t}" for t in BAR_FLOORS):
        for dt in LOW:
            b = r["bars"][dt][key]
            what = "all" if key == "h1.n_bars" else f"longer than {key.split('>')[1]}"
            lines.append(
                f"| {what} | {dt} | {pct(b['changed_share'])} | {b['total_float32']} → "
                f"{b['total_low']} | {pct(b['max_rel'])} ({b['worst']['float32']} → "
                f"{b['worst']['low']}) |"
            )
    lines += [
        "",
        "| dtype | ‖D − D′‖∞ per head: median, max | max H1 bottleneck / ‖D − D′‖∞ |",
        "|---|---|---|",
    ]
    for dt in LOW:
        st = r["stability"][dt]
        lines.append(
            f"| {dt} | {st['dist_max_median']:.2g}, {st['dist_max']:.2g} | "
            f"{st['bottleneck_h1_over_dist_max']:.2f} |"
        )
    lines += [
        "",
        f"| top {r['k']} heads by | bfloat16 keeps | float16 keeps "
        "| float32, other folds, keeps | Spearman ρ of all heads' scores (bf16, fp16) "
        "| heads scoring as float32's k-th |",
        "|---|---|---|---|---|---|",
    ]
    for key, s in r["selection"].items():
        folds = s.get("float32_other_folds", "—")
        k = r["k"]
        lines.append(
            f"| `{key}` | {s['bfloat16']} of {k} | {s['float16']} of {k} | {folds} | "
            f"{s['bfloat16_spearman']:.3f}, {s['float16_spearman']:.3f} | "
            f"{s['float32_tied_at_10th']} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=32, help="labelled (prompt, answer) pairs (even)")
    ap.add_argument("--js-texts", type=int, default=6, help="joined pairs for the js set")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--model",
        default="smollm2",
        choices=("smollm2", "tiny"),
        help="tiny: a random 2 x 4 Llama, for a smoke test",
    )
    ap.add_argument("--json", type=Path, help="write the numbers here")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    r = measure(a.pairs, a.js_texts, a.seed, a.model)
    r["wall_s"] = round(time.perf_counter() - t0, 1)
    r["date"] = time.strftime("%Y-%m-%d")
    r["machine"], r["versions"] = machine_info(), versions()
    if a.json:
        a.json.write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
    print(markdown(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
