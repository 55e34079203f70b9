#!/usr/bin/env python
"""4. Hallucination detection on a real generating model: every detector, one honest table.

    python experiments/hallucination.py --features --js --threads 1  # compute (resumable)
    python experiments/run.py --only hallucination --reuse docs/experiments.json \\
        --out docs/experiments.md --json docs/experiments.json        # §4 from the cache

The benchmark is :func:`attntopo.datasets.hallucination_qa` (SmolLM2's greedy answers to
context questions about countries, labels computed from the answers), read from its cache as
far as it has been generated (``generate=False``: the pairs cached so far, never a
generation here).  Features of the pairs are computed chunk by chunk (:data:`CHUNK` pairs,
one forward pass a pair for every set at once) and kept as FeatureTable folders under
``$ATTNTOPO_CACHE_DIR/experiments`` (or the user cache folder): a run cut short resumes at
the first missing chunk, and the report uses every pair whose features exist.  ``prompt.js``
(O(r n²) per head, 2-3 times the cost of the rest together at 1,000 tokens) runs on every
:data:`JS_EVERY`-th pair only.  The evaluation is :func:`attntopo.features.evaluate_detectors`
(grouped 5-fold CV, heads chosen inside each training fold, bootstrap intervals, gains over
the prompt's length), on all pairs and on a length-balanced subsample.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attntopo.features._evaluate import WITHIN  # noqa: E402
from run import SEED, _cache_dir, log  # noqa: E402

#: Pairs asked of the benchmark (its cache holds as many as have been generated).
N_PAIRS = 1200
#: Pairs per cached feature chunk.
CHUNK = 12
#: Sets computed in one forward pass per pair (``prompt`` with its attention score only).
MAIN_SETS = ("prompt", "spectral", "lookback", "zigzag")
#: ``prompt.js`` runs on every JS_EVERY-th pair (by benchmark index; prime to the 6 context
#: sizes that pair ``i`` cycles through, so that every size is in the subset).
JS_EVERY = 5
#: Heads chosen inside each training fold for the TOHA rows (the paper's ~10).
K_HEADS = 10
N_BOOT = 1000
COVARIATE = "prompt length"

TOHA = f"TOHA: mean of {K_HEADS} prompt.attention heads chosen in-fold (the paper's)"
TOHA10 = f"TOHA: {K_HEADS} prompt.attention heads chosen in-fold, LR"
TOHA_ALL = "TOHA: all prompt.attention heads, LR"
JS = f"prompt.js: mean of {K_HEADS} heads chosen in-fold"
JS10 = f"prompt.js: {K_HEADS} heads chosen in-fold, LR"
JS_ALL = "prompt.js: all heads, LR"
LENGTH = "prompt length in tokens (no answer)"
ENTITIES = "number of entities (no answer)"
#: detector name -> (kind, what): "sets" of the main table, or a column of the benchmark.
DETECTORS = {
    TOHA: ("sets", ("prompt",)),
    TOHA10: ("sets", ("prompt",)),
    TOHA_ALL: ("sets", ("prompt",)),
    "LapEigvals: spectral": ("sets", ("spectral",)),
    "Lookback Lens: lookback": ("sets", ("lookback",)),
    "HalluZig: zigzag": ("sets", ("zigzag",)),
    "all topological: prompt.attention + zigzag": ("sets", ("prompt", "zigzag")),
    "mean token log-probability": ("column", "mean_logprob"),
    "min token log-probability": ("column", "min_logprob"),
    "mean token entropy": ("column", "mean_entropy"),
    LENGTH: ("column", "prompt_tokens"),
    ENTITIES: ("column", "n_entities"),
}
TOPOLOGICAL = (
    TOHA,
    TOHA10,
    TOHA_ALL,
    "HalluZig: zigzag",
    "all topological: prompt.attention + zigzag",
    JS,
    JS10,
    JS_ALL,
)
#: heads chosen in-fold, and the detectors scored by the mean of their heads (TOHA's way)
HEADS = {TOHA: K_HEADS, TOHA10: K_HEADS, JS: K_HEADS, JS10: K_HEADS}
MEAN = (TOHA, JS)
ANSWER_FREE = (LENGTH, ENTITIES)


# ------------------------------------------------------------------ the benchmark
class NoBenchmark(Exception):
    """Nothing of the benchmark is cached (or packaged) here."""


def _entities(k: int) -> str:
    return f"{k} {'entity' if k == 1 else 'entities'}"


def benchmark():
    """The benchmark as far as it is cached (no generation here: it takes hours on a CPU;
    ``hallucination_qa(1200)`` generates it, resumably)."""
    from attntopo.datasets import hallucination_qa
    from attntopo.errors import AttntopoError

    try:
        return hallucination_qa(n=N_PAIRS, seed=SEED, generate=False, progress=False)
    except AttntopoError as e:
        raise NoBenchmark(f"the benchmark is not cached: {e}") from None


# ------------------------------------------------------------------ features, chunked
def _key(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _chunk_folder(pairs: list, sets, quantities) -> Path:
    import attntopo as at

    key = _key(
        {
            "pairs": pairs,
            "model": "smollm2",
            "sets": list(sets),
            "prompt_quantities": list(quantities),
            "version": at.__version__,
        }
    )
    return _cache_dir() / f"halluc-{'-'.join(sets)}-{'-'.join(quantities)}-{key}"


def _plan(d, js: bool) -> list[list[int]]:
    """Chunks of benchmark indices (ambiguous pairs left out): whole chunks of CHUNK
    consecutive indices, the last one only when the benchmark is complete."""
    labels = np.asarray(d.labels)
    n = len(d)
    stop = n if n >= N_PAIRS else n - n % CHUNK
    out = []
    for start in range(0, stop, CHUNK):
        idx = [
            i
            for i in range(start, min(start + CHUNK, stop))
            if labels[i] != "ambiguous" and (not js or i % JS_EVERY == 0)
        ]
        if idx:
            out.append(idx)
    return out


def _sets_of(js: bool):
    return (("prompt",), ("js",)) if js else (MAIN_SETS, ("attention",))


def compute_features(budget_s: float | None, kinds=(False, True), follow: bool = False) -> int:
    """Compute the missing chunks until done or out of time, in the benchmark's order (a
    range's main sets, then its ``prompt.js`` pairs; ``kinds``: False the main sets, True
    prompt.js); return how many chunks were computed.  ``follow``: when every cached pair is done,
    wait for the generation to cache more (until the budget runs out)."""
    from attntopo.features import features

    t0 = time.perf_counter()
    done = 0
    model = None
    while True:
        d = benchmark()
        pairs = d.pairs()
        todo = []
        for js in kinds:
            sets, quantities = _sets_of(js)
            todo += [
                (idx, sets, quantities)
                for idx in _plan(d, js)
                if not (
                    _chunk_folder([pairs[i] for i in idx], sets, quantities) / "attntopo.json"
                ).is_file()
            ]
        # by position in the benchmark: prompt.js keeps pace with the main sets
        todo.sort(key=lambda t: (t[0][0] // CHUNK, t[1] != MAIN_SETS))
        if not todo:
            if (
                follow
                and len(d) < N_PAIRS
                and (budget_s is None or time.perf_counter() - t0 < budget_s - 120)
            ):
                time.sleep(60)
                continue
            log(f"features: every chunk of the {len(d)} cached pairs is done")
            return done
        if model is None:
            import attntopo as at

            model = at.load_model("smollm2")
        for idx, sets, quantities in todo:
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                log(f"features: out of time after {done} chunks ({len(todo)} left)")
                return done
            chunk = [pairs[i] for i in idx]
            t1 = time.perf_counter()
            table = features(
                chunk,
                model=model,
                sets=sets,
                prompt_quantities=quantities,
                progress=False,
                n_jobs=1,
            )
            table.settings["benchmark_index"] = list(idx)
            table.settings["seconds"] = time.perf_counter() - t1
            table.save(_chunk_folder(chunk, sets, quantities))
            done += 1
            log(
                f"features {'+'.join(sets)}/{'+'.join(quantities)}: pairs {idx[0]}..{idx[-1]} "
                f"({len(idx)}) in {time.perf_counter() - t1:.0f} s, "
                f"load {os.getloadavg()[0]:.1f}"
            )
            if follow:
                break  # read the benchmark again: it may have grown
        if not follow:
            return done


def load_features(d, js: bool):
    """(benchmark indices, FeatureTable of their rows) of every chunk cached so far."""
    import attntopo as at
    from attntopo.features import FeatureTable

    sets, quantities = _sets_of(js)
    pairs = d.pairs()
    index, parts, columns, seconds = [], [], None, 0.0
    for idx in _plan(d, js):
        folder = _chunk_folder([pairs[i] for i in idx], sets, quantities)
        if not (folder / "attntopo.json").is_file():
            continue
        t = at.load_result(folder)
        columns = columns or t.columns
        if t.columns != columns:
            raise SystemExit(f"{folder}: columns differ from the other chunks'")
        index += idx
        parts.append(t.values)
        seconds += float(t.settings.get("seconds", np.nan))
    if not parts:
        return np.zeros(0, int), None, 0.0
    values = np.vstack(parts)
    table = FeatureTable(
        values, columns, np.arange(len(index)), [""] * len(index), settings={"sets": list(sets)}
    )
    return np.asarray(index), table, seconds


# ------------------------------------------------------------------ times per detector
#: Each time is the least of this many runs (the machine is shared: the least is the one
#: least disturbed by the others' work).
REPEATS = 3


def detector_times(d, sample_lengths=(1, 8, 30)) -> dict:
    """Seconds per pair of each detector on one pair of each context size in
    ``sample_lengths``, beside the generation's: the forward pass alone (eager attention,
    all layers' attention returned), and ``features`` of each set alone (forward pass
    included); the least of :data:`REPEATS` runs each.  Cached (a JSON file keyed by the
    pairs)."""
    import torch

    import attntopo as at
    from attntopo.features import features

    c = d.columns
    picks = [
        int(np.flatnonzero(c["n_entities"] == k)[0])
        for k in sample_lengths
        if np.any(c["n_entities"] == k)
    ]
    pairs = [d.pairs()[i] for i in picks]
    key = _key({"pairs": pairs, "version": at.__version__, "repeats": REPEATS})
    path = _cache_dir() / f"halluc-times-{key}.json"
    if path.is_file():
        return json.loads(path.read_text())
    log(f"times: {len(picks)} pairs, each set alone")
    m = at.load_model("smollm2")
    runs = {
        "prompt.attention": (("prompt",), ("attention",)),
        "prompt.js": (("prompt",), ("js",)),
        "spectral": (("spectral",), None),
        "lookback": (("lookback",), None),
        "zigzag": (("zigzag",), None),
    }
    out = {
        "n_entities": [int(c["n_entities"][i]) for i in picks],
        "prompt_tokens": [int(c["prompt_tokens"][i]) for i in picks],
        "generation": [float(c["seconds"][i]) for i in picks],
        "forward": [],
        "load_average": [],
        **{k: [] for k in runs},
    }

    def least(fn) -> float:
        best = np.inf
        for _ in range(REPEATS):
            t1 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t1)
        return best

    for pair in pairs:
        enc = m.tokenizer(pair[0] + pair[1], return_tensors="pt", add_special_tokens=False)
        with torch.inference_mode():
            out["forward"].append(least(lambda: m.hf_model(**enc, output_attentions=True)))
        for name, (sets, quantities) in runs.items():
            out[name].append(
                least(
                    lambda: features(
                        [pair],
                        model=m,
                        sets=sets,
                        prompt_quantities=quantities,
                        progress=False,
                        n_jobs=1,
                    )
                )
            )
        out["load_average"].append(os.getloadavg()[0])
        log(f"times: {out['prompt_tokens'][len(out['forward']) - 1]} tokens done")
    out["threads"] = torch.get_num_threads()
    out["repeats"] = REPEATS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


# ------------------------------------------------------------------ evaluation
def _rows_table(table, rows):
    from attntopo.features import FeatureTable

    return FeatureTable(table.values[rows], table.columns, np.arange(len(rows)), [""] * len(rows))


def _detectors(d, index, table) -> dict:
    """Detector name -> its columns on the pairs ``index`` (benchmark indices)."""
    out = {}
    for name, (kind, what) in DETECTORS.items():
        if kind == "sets":
            out[name] = table.select(sets=what)
        else:
            out[name] = np.asarray(d.columns[what], dtype=float)[index]
    return out


def _brief(ev) -> dict:
    """The numbers of a DetectorEvaluation that the report uses (JSON-ready, 4 decimals; the
    models with covariates in the stratum of all pairs only)."""
    rows = ev.summary()
    keep = [k for k in rows if k not in ("with_covariates",)]
    out = []
    for r in range(rows.n_rows):
        if rows["stratum"][r] != "all" and str(rows["model"][r]).endswith(" + covariates"):
            continue
        row = {}
        for k in keep:
            v = rows[k][r].item() if hasattr(rows[k][r], "item") else rows[k][r]
            if isinstance(v, float):
                v = round(v, 4) if np.isfinite(v) else None
            row[k] = v
        out.append(row)
    return {"rows": out, "heads": ev.heads, "settings": ev.settings}


def evaluate(quick: bool = False) -> dict:
    from attntopo.features import balanced_subsample, evaluate_detectors

    t0 = time.perf_counter()
    full = benchmark()
    d = full
    index, table, feature_seconds = load_features(d, js=False)
    if table is None or len(index) < 30:
        return {
            "skipped": f"features of {len(index)} pairs are cached, too few to evaluate "
            "(run experiments/hallucination.py --features)"
        }
    labels = np.asarray(d.labels)[index]
    y = (labels == "hallucinated").astype(int)
    c = {k: np.asarray(v)[index] for k, v in d.columns.items()}
    groups = d.groups[index]
    n_boot = 200 if quick else N_BOOT
    detectors = _detectors(d, index, table)
    common = dict(
        groups=groups,
        covariates={COVARIATE: c["prompt_tokens"].astype(float)},
        heads={k: v for k, v in HEADS.items() if k in detectors},
        combine={k: "mean" for k in MEAN if k in detectors},
        head_criterion="difference",
        n_boot=n_boot,
        seed=SEED,
    )
    log(f"hallucination: evaluating {len(detectors)} detectors on {len(index)} pairs")
    strata = {"n_entities": c["n_entities"], "counterfactual": c["counterfactual"].astype(bool)}
    ev = evaluate_detectors(detectors, y, strata=strata, **common)
    balanced = balanced_subsample(y, c["n_entities"], seed=SEED)
    log(f"hallucination: the length-balanced subsample ({balanced.size} pairs)")
    ev_bal = evaluate_detectors(detectors, y, subset=balanced, **common)
    res = {
        "all": _brief(ev),
        "balanced": _brief(ev_bal),
        "balanced_share": float(y[balanced].mean()),
        "n_balanced": int(balanced.size),
    }
    # prompt.js on its subset, beside TOHA on the same pairs
    js_index, js_table, js_seconds = load_features(d, js=True)
    if js_table is not None:
        pos = {i: k for k, i in enumerate(index)}
        both = [k for k, i in enumerate(js_index) if i in pos]
        rows = [pos[js_index[k]] for k in both]
        yj = y[rows]
        if len(rows) >= 30 and 5 <= yj.sum() <= len(rows) - 5:
            js = _rows_table(js_table, both)
            toha = _rows_table(detectors[TOHA], rows)
            dets = {
                JS: js,
                JS10: js,
                JS_ALL: js,
                TOHA: toha,
                TOHA10: toha,
                TOHA_ALL: toha,
                LENGTH: detectors[LENGTH][rows],
            }
            ev_js = evaluate_detectors(
                dets,
                yj,
                groups=groups[rows],
                heads={k: v for k, v in HEADS.items()},
                combine={k: "mean" for k in MEAN},
                covariates={COVARIATE: c["prompt_tokens"][rows].astype(float)},
                head_criterion="difference",
                n_boot=n_boot,
                seed=SEED,
            )
            res["prompt_js"] = _brief(ev_js)
        res["n_js"] = len(rows)
    lab = np.asarray(full.labels)
    res.update(
        {
            "n_generated": len(full),
            "n_pairs": int(index.size),
            "n_positive": int(y.sum()),
            "labels": {k: int(v) for k, v in zip(*np.unique(lab, return_counts=True))},
            "outcomes": {
                k: int(v) for k, v in zip(*np.unique(c["outcome"][y == 1], return_counts=True))
            },
            "by_length": {
                int(k): {
                    "n": int((c["n_entities"] == k).sum()),
                    "hallucinated": float(y[c["n_entities"] == k].mean()),
                    "tokens": float(c["prompt_tokens"][c["n_entities"] == k].mean()),
                }
                for k in np.unique(c["n_entities"])
            },
            "counterfactual_share": float(c["counterfactual"].mean()),
            "prompt_tokens": [int(c["prompt_tokens"].min()), int(c["prompt_tokens"].max())],
            "generation_seconds": float(np.mean(c["seconds"])),
            "feature_seconds_per_pair": feature_seconds / max(1, len(index)),
            "n_columns": {
                k: int(v.shape[1]) if np.ndim(v) == 2 else 1
                for k, v in ((k, np.asarray(v)) for k, v in detectors.items())
            },
            "times": detector_times(d),
            "seconds": time.perf_counter() - t0,
        }
    )
    return res


# ------------------------------------------------------------------ report
def _get(res_part: dict, model: str, stratum: str = "all", value: str = "all") -> dict | None:
    for r in res_part["rows"]:
        if r["model"] == model and r["stratum"] == stratum and r["value"] == value:
            return r
    return None


def _ci(r: dict | None, m: str = "roc_auc", gain: bool = False, digits: int = 3) -> str:
    if r is None:
        return "–"
    k = f"gain_{m}" if gain else m
    v, lo, hi = r.get(k), r.get(f"{k}_low"), r.get(f"{k}_high")
    if v is None:
        return "n/a"
    sign = "+" if gain and v >= 0 else ""
    if lo is None or hi is None:
        return f"{sign}{v:.{digits}f}"
    if gain:
        return f"{sign}{v:.{digits}f} [{lo:+.2f}, {hi:+.2f}]"
    return f"{v:.{digits}f} [{lo:.2f}, {hi:.2f}]"


def _s(x: float) -> str:
    return f"{x:.1f}" if x >= 1 else f"{x:.2f}"


_OUTCOME = {
    "none": "no value of the asked kind",
    "other": "another country's value",
    "world": "the true value where the context gave another",
}


def _overview(res: dict, lengths: list) -> list[str]:
    """The section's opening: the benchmark, the labels, hallucinations by context size and
    how the detectors are evaluated."""
    a = res["all"]
    usable = res["n_generated"] - res["labels"].get("ambiguous", 0)
    partial = res["n_generated"] < N_PAIRS or res["n_pairs"] < usable
    return [
        "## 4. Hallucination detection on a real generating model",
        "",
        f"The benchmark `attntopo.datasets.hallucination_qa` (docs/features.md): SmolLM2's "
        "greedy answers to questions about one country of a context of 1 to 30 country "
        "descriptions (facts from `countryinfo`), half of the contexts counterfactual (the "
        "asked fact swapped for another country's value: the faithful answer is the "
        "context's); labels computed from the answer's text. "
        f"**{res['n_pairs']} pairs** with features here"
        + (
            f", of {res['n_generated']} generated so far (of {N_PAIRS} planned: the generation "
            "and the features run chunk by chunk on this shared 2-core machine and resume "
            "where they stopped; the table below is what was there when it ran)"
            if partial
            else f" (every one of the {res['n_generated']} generated but the ambiguous)"
        )
        + "; labels of the generated pairs: "
        + ", ".join(f"{v} {k}" for k, v in res["labels"].items())
        + " (ambiguous pairs, with the context's value and another, are left out of the "
        f"evaluation). What the {res['n_positive']} hallucinated answers evaluated hold "
        "instead of the context's value: "
        + ", ".join(f"{_OUTCOME.get(k, k)} {v}" for k, v in res["outcomes"].items())
        + f". Prompts of {res['prompt_tokens'][0]} to {res['prompt_tokens'][1]} tokens; "
        f"{res['counterfactual_share']:.0%} counterfactual.",
        "",
        "Hallucinations by context size (the shortcut this section is about):",
        "",
        "| entities in the context | " + " | ".join(str(k) for k in lengths) + " |",
        "|---" * (len(lengths) + 1) + "|",
        "| pairs | " + " | ".join(str(res["by_length"][k]["n"]) for k in lengths) + " |",
        "| mean prompt tokens | "
        + " | ".join(f"{res['by_length'][k]['tokens']:.0f}" for k in lengths)
        + " |",
        "| hallucinated | "
        + " | ".join(f"{res['by_length'][k]['hallucinated']:.0%}" for k in lengths)
        + " |",
        "",
        "Evaluation: `attntopo.features.evaluate_detectors`, the same code a user calls. "
        "5-fold cross-validation grouped by the country asked about (stratified, seed 0); "
        f"inside each training fold only, TOHA's {K_HEADS} heads are chosen (those whose "
        "score rises most with hallucination: the difference of the two labels' means, "
        "TOHA's criterion), then either their mean (TOHA's detector, no classifier) or a "
        "standardized logistic regression (C = 0.1) on the detector's columns (every other "
        "row). ROC-AUC and PR-AUC compare pairs "
        "within each test fold; 95 % intervals from "
        f"{a['settings']['n_boot']} bootstrap replicates drawing whole countries. "
        "**With length**: the same regression on the detector and the prompt's length in "
        "tokens; the **gain** is its ROC-AUC minus that of the length alone, with a paired "
        "bootstrap interval: what the detector knows beyond how long the prompt is. "
        f"**Balanced**: a subsample of {res['n_balanced']} pairs with the same share of "
        f"hallucinations ({res['balanced_share']:.0%}) at every context size "
        "(`balanced_subsample`), where length is no shortcut. SmolLM2: 30 layers x 9 heads, "
        "every head, its attention as computed (special tokens kept, `drop_special=False`, "
        "as TOHA reads it). Chance: ROC-AUC 0.5, PR-AUC the share of hallucinations "
        f"({res['n_positive'] / res['n_pairs']:.2f}).",
        "",
    ]


def _detector_table(a: dict, b: dict) -> list[str]:
    """The main table (one row per detector, all pairs and balanced) and its legend."""
    lines = [
        "| detector | ROC-AUC | PR-AUC | gain over length | within-length ROC-AUC | "
        "balanced ROC-AUC | balanced PR-AUC |",
        "|---|---|---|---|---|---|---|",
    ]
    cov = _get(a, "covariates")
    lines.append(
        f"| *the prompt's length alone (the covariate)* | {_ci(cov)} | "
        f"{_ci(cov, 'pr_auc')} | – | {_ci(_get(a, 'covariates', 'n_entities', WITHIN))}"
        f" | {_ci(_get(b, 'covariates'))} | {_ci(_get(b, 'covariates'), 'pr_auc')} |"
    )
    for name in DETECTORS:
        r, rc = _get(a, name), _get(a, f"{name} + covariates")
        rb = _get(b, name)
        lines.append(
            f"| {name} | {_ci(r)} | {_ci(r, 'pr_auc')} | {_ci(rc, gain=True)} | "
            f"{_ci(_get(a, name, 'n_entities', WITHIN))} | {_ci(rb)} | "
            f"{_ci(rb, 'pr_auc')} |"
        )
    lines += [
        "",
        "*Gain over length*: ROC-AUC of the detector with the length minus that of the length "
        "alone. *Within-length*: pairs compared only with pairs of the same context size (and "
        "fold), every size at once. *Balanced*: the length-balanced subsample, where length "
        "carries no signal by construction (so no gain over it is reported there: a "
        "regression fitted on a signal-free length lands below 0.5 under cross-validation, "
        "and a gain over that would flatter every detector).",
    ]
    return lines


def _stratum_tables(a: dict, lengths: list) -> list[str]:
    """ROC-AUC within each context size and within counterfactual contexts or not."""
    lines = [
        "",
        "Within one context size (same out-of-fold scores, pairs compared within a size and a "
        "fold; ROC-AUC, 95 % interval; a size whose pairs are nearly all of one label has "
        "wide intervals or none):",
        "",
        "| detector | " + " | ".join(_entities(k) for k in lengths) + " |",
        "|---" * (len(lengths) + 1) + "|",
    ]
    for name in ("covariates", *DETECTORS):
        cells = [_ci(_get(a, name, "n_entities", str(k)), digits=2) for k in lengths]
        label = "*prompt length (covariate)*" if name == "covariates" else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "By counterfactual context (ROC-AUC within each):",
        "",
        "| detector | not counterfactual | counterfactual |",
        "|---|---|---|",
    ]
    for name in ("covariates", *DETECTORS):
        label = "*prompt length (covariate)*" if name == "covariates" else name
        lines.append(
            f"| {label} | {_ci(_get(a, name, 'counterfactual', 'False'))} | "
            f"{_ci(_get(a, name, 'counterfactual', 'True'))} |"
        )
    return lines


def _prompt_js_section(res: dict) -> list[str]:
    """``prompt.js`` beside TOHA on the pairs where it was computed."""
    lines: list[str] = []
    if "prompt_js" in res:
        j = res["prompt_js"]
        lines += [
            "",
            f"`prompt.js` (attntopo's Jensen–Shannon prompt score) on every {JS_EVERY}th pair "
            f"({res['n_js']} pairs: its O(r n²) distances cost more than every other set "
            "together), beside TOHA on the same pairs:",
            "",
            "| detector | ROC-AUC | PR-AUC | gain over length |",
            "|---|---|---|---|",
        ]
        for name in (JS, JS10, JS_ALL, TOHA, TOHA10, TOHA_ALL, LENGTH):
            r, rc = _get(j, name), _get(j, f"{name} + covariates")
            lines.append(f"| {name} | {_ci(r)} | {_ci(r, 'pr_auc')} | {_ci(rc, gain=True)} |")
    elif "n_js" in res:
        lines += [
            "",
            f"`prompt.js`: computed on {res['n_js']} pairs so far, too few to "
            "evaluate (30 needed, with 5 of each label).",
        ]
    return lines


def _times_table(t: dict) -> list[str]:
    """Seconds per pair of each stage and feature set, by context size."""
    lines = [
        "",
        "Time per pair on this machine (seconds, the least of "
        f"{t.get('repeats', 1)} runs; one pair of each size, each set alone, "
        "forward pass included; the generation's time is that of its batch of 8 answers "
        f"divided by 8; load average {np.mean(t['load_average']):.1f} on 2 cores during the "
        "measurement, so read the ratios, not the absolute numbers):",
        "",
        "| | "
        + " | ".join(
            f"{_entities(k)}, {n} tokens" for k, n in zip(t["n_entities"], t["prompt_tokens"])
        )
        + " |",
        "|---" * (len(t["n_entities"]) + 1) + "|",
        "| generation (the answer, SmolLM2) | " + " | ".join(_s(x) for x in t["generation"]) + " |",
        "| forward pass with attention | " + " | ".join(_s(x) for x in t["forward"]) + " |",
    ]
    for k in ("prompt.attention", "prompt.js", "spectral", "lookback", "zigzag"):
        lines.append(f"| `{k}` | " + " | ".join(_s(x) for x in t[k]) + " |")
    lines += [
        "| log-probability, entropy, length, entities | "
        + " | ".join("0" for _ in t["forward"])
        + " (kept from the generation) |",
    ]
    return lines


def report(res: dict) -> list[str]:
    if "skipped" in res:
        return [
            "## 4. Hallucination detection on a real generating model",
            "",
            f"Not run: {res['skipped']}.",
        ]
    a, b = res["all"], res["balanced"]
    lengths = sorted(res["by_length"], key=int)
    return [
        *_overview(res, lengths),
        *_detector_table(a, b),
        *_stratum_tables(a, lengths),
        *_prompt_js_section(res),
        *_times_table(res["times"]),
        "",
        f"Computing the main sets together for all {res['n_pairs']} pairs took "
        f"{res['feature_seconds_per_pair']:.1f} s a pair on average (one forward pass for all "
        "sets); the evaluation above, from the cache, "
        f"{res['seconds']:.0f} s.",
        "",
        *notes(res),
    ]


def _verdict(a: dict, b: dict) -> str:
    """ "beats" / "loses to" by the point estimates, softened where the intervals overlap."""
    x, y = a["roc_auc"], b["roc_auc"]
    word = "beats" if x > y else "loses to" if x < y else "ties with"
    lo_a, hi_a, lo_b, hi_b = (
        a["roc_auc_low"],
        a["roc_auc_high"],
        b["roc_auc_low"],
        b["roc_auc_high"],
    )
    overlap = None in (lo_a, lo_b) or not (lo_a > hi_b or lo_b > hi_a)
    return f"{word} (within overlapping intervals)" if overlap and word != "ties with" else word


def notes(res: dict) -> list[str]:
    """Plain statements read off the numbers, and what a 7B model would change."""
    a, b = res["all"], res["balanced"]
    cov = _get(a, "covariates")["roc_auc"]
    rows = {n: _get(a, n) for n in DETECTORS}
    best = max(rows, key=lambda n: rows[n]["roc_auc"])
    gains = {n: _get(a, f"{n} + covariates") for n in DETECTORS if n not in ANSWER_FREE}
    real = [
        n
        for n, r in gains.items()
        if r["gain_roc_auc_low"] is not None and r["gain_roc_auc_low"] > 0
    ]
    top_gain = max(gains, key=lambda n: gains[n]["gain_roc_auc"])
    within = {n: _get(a, n, "n_entities", WITHIN) for n in DETECTORS if n not in ANSWER_FREE}
    best_within = max(within, key=lambda n: within[n]["roc_auc"])
    above = [
        n for n, r in within.items() if r["roc_auc_low"] is not None and r["roc_auc_low"] > 0.5
    ]
    nothing = [
        n
        for n in gains
        if not (gains[n]["gain_roc_auc_low"] or 0) > 0 and not (within[n]["roc_auc_low"] or 0) > 0.5
    ]
    bal = {n: _get(b, n) for n in DETECTORS}
    low = [
        n
        for n in DETECTORS
        if n not in ANSWER_FREE and bal[n]["roc_auc"] < _get(b, "covariates")["roc_auc"]
    ]
    best_bal = max(bal, key=lambda n: bal[n]["roc_auc"])
    topo_best = max((n for n in TOPOLOGICAL if n in rows), key=lambda n: rows[n]["roc_auc"])
    unc = ("mean token log-probability", "min token log-probability", "mean token entropy")
    unc_best = max(unc, key=lambda n: rows[n]["roc_auc"])
    out = [
        "What comes out:",
        "",
        f"* The prompt's length alone reaches a ROC-AUC of {cov:.3f}; the best detector, "
        f"{best}, {rows[best]['roc_auc']:.3f}. Length is this benchmark's shortcut: the "
        "small model hallucinates more in longer contexts, so every detector that follows "
        "the prompt's length looks good here.",
        f"* Beyond length: {len(real)} of {len(gains)} detectors add to it with an interval "
        "above zero" + (f" ({', '.join(real)})" if real else "") + f"; the largest gain is "
        f"{top_gain}'s, {gains[top_gain]['gain_roc_auc']:+.3f} "
        f"[{gains[top_gain]['gain_roc_auc_low']:+.2f}, "
        f"{gains[top_gain]['gain_roc_auc_high']:+.2f}].",
        f"* TOHA as published (the mean of its {K_HEADS} heads, no classifier): "
        f"{_ci(rows[TOHA])}, gain {_ci(gains[TOHA], gain=True)}; a regression on the same "
        f"number of heads: {_ci(rows[TOHA10])}; on every head: {_ci(rows[TOHA_ALL])}.",
        *(
            [
                f"* Nothing beyond length (a gain interval not above zero and a within-length "
                f"interval reaching 0.5): {', '.join(nothing)}."
            ]
            if nothing
            else []
        ),
        f"* Within one context size, where length cannot help: the best is {best_within} "
        f"({_ci(within[best_within])}); {len(above)} of {len(within)} detectors have an "
        "interval above 0.5" + (f" ({', '.join(above)})" if above else "") + ".",
        f"* On the length-balanced subsample the best is {best_bal} "
        f"({_ci(bal[best_bal])}); the length alone there: "
        f"{_get(b, 'covariates')['roc_auc']:.3f} (a model fitted on a feature without "
        "signal lands below 0.5 under cross-validation: each held-out fold's small "
        "imbalance is learnt the other way round)"
        + (
            f"; below it too: {', '.join(low)}, whose columns follow the prompt's length more "
            "than the answer"
            if low
            else ""
        )
        + ".",
        *(
            [
                f"* `prompt.js` on its {res['n_js']} pairs: {JS_ALL} {_ci(_get(j, JS_ALL))} "
                f"(gain {_ci(_get(j, JS_ALL + ' + covariates'), gain=True)}), {JS} "
                f"{_ci(_get(j, JS))}; on the same pairs TOHA {_ci(_get(j, TOHA))}, {TOHA_ALL} "
                f"{_ci(_get(j, TOHA_ALL))}."
            ]
            if (j := res.get("prompt_js"))
            else []
        ),
        f"* Topology against uncertainty: the best topological detector ({topo_best}, "
        f"{_ci(rows[topo_best])}) {_verdict(rows[topo_best], rows[unc_best])} the best "
        f"uncertainty baseline ({unc_best}, {_ci(rows[unc_best])}), which costs nothing "
        "beyond the generation.",
        "* On a 7B model (not measured here): the field's numbers (TOHA 0.72–0.88, LapEigvals "
        "about 0.885, HalluZig 0.73–0.83 AUROC on 7–8B models and RAGTruth-like data) come "
        "from models that answer in-context questions far better than a 135M model, so the "
        "labels would shift (fewer hallucinations on short contexts, a weaker length "
        "shortcut, errors that are subtler than a missing or foreign name); 32 layers x 32 "
        "heads give about 4 times the heads to choose among (more risk of picking noise "
        "heads from ~1,000 labelled pairs, so choosing inside the fold matters more); the "
        "per-pair cost grows with the heads (O(n²) per head for `prompt.attention`, "
        "`lookback`, causal `spectral`; O(r n²) for `prompt.js`) and with the forward pass "
        "(docs/llm.md has the GPU numbers). Whether the gains over length survive there is an "
        "empirical question this benchmark can answer with `hallucination_qa(model=...)` and "
        "the same call to `evaluate_detectors`.",
    ]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--features", action="store_true", help="compute missing feature chunks")
    ap.add_argument(
        "--js",
        action="store_true",
        help=f"compute prompt.js on every {JS_EVERY}th pair (after the main sets' chunks)",
    )
    ap.add_argument("--budget-minutes", type=float, default=None)
    ap.add_argument(
        "--follow",
        action="store_true",
        help="wait for the generation to cache more pairs (until the budget)",
    )
    ap.add_argument("--threads", type=int, default=None, help="torch threads")
    ap.add_argument("--times", action="store_true", help="measure the per-detector times")
    ap.add_argument("--evaluate", action="store_true", help="print §4 from what is cached")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    budget = None if args.budget_minutes is None else 60 * args.budget_minutes
    try:
        return _main(args, budget)
    except NoBenchmark as e:
        print(f"hallucination.py: {e}", file=sys.stderr)
        return 2


def _main(args, budget) -> int:
    kinds = (False,) * args.features + (True,) * args.js
    if kinds:
        compute_features(budget, kinds, follow=args.follow)
    if args.times:
        print(json.dumps(detector_times(benchmark())))
    if args.evaluate:
        print("\n".join(report(evaluate())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
