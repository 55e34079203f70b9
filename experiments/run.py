#!/usr/bin/env python
"""Does attention topology carry signal? Three tasks, with standard baselines.

    make experiments     # .venv/bin/python experiments/run.py --out docs/experiments.md
    python experiments/run.py --quick      # small subsets, minutes (development, CI smoke)

1. **Topic of a fortune** (6 balanced categories of Debian's fortunes, stratified 5-fold CV):
   each topological feature set alone and all together, against TF-IDF + logistic regression
   and mean-pooled MiniLM embeddings + logistic regression.
2. **Human or machine** (``generated_vs_human``: fortunes vs SmolLM2 continuations of their
   first words; 5-fold CV grouped by pair): the same feature sets on MiniLM and on SmolLM2
   attention, against TF-IDF and GLTR-style SmolLM2 token log-likelihood features.
3. **Minimal pairs** (``minimal_pairs``, 7 phenomena): la-tda's rule — per phenomenon, the
   head and direction whose H0 sum best separates acceptable from unacceptable sentences on a
   validation half — against SmolLM2's sentence log-probability (BLiMP's scoring), accuracy
   per phenomenon on the test half.
4. **Hallucination detection** (``hallucination_qa``: SmolLM2's answers to context questions,
   labelled from the answers; ``experiments/hallucination.py``): TOHA, ``prompt.js``,
   LapEigvals, Lookback Lens, HalluZig, uncertainty and answer-free baselines, through
   :func:`attntopo.features.evaluate_detectors` (grouped CV, heads chosen in-fold, bootstrap
   intervals, gains over the prompt's length, within-length and length-balanced results).
   Its features are computed beforehand (``hallucination.py --features``, resumable); this
   script reads them from the cache.

Feature tables are cached (``$ATTNTOPO_CACHE_DIR/experiments`` or the user cache folder),
keyed by the texts and settings, so a rerun recomputes only the classifiers.  Seeds are fixed;
the report goes to ``--out`` (atomically) and the numbers to ``--json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SEED = 0
TOPIC_CATEGORIES = ["computers", "science", "politics", "food", "law", "sports"]
TOPO_SETS = ("js", "graph", "barcode", "template")
#: The strongest non-topological competitor on the same attention (LapEigvals, EMNLP 2025): a
#: baseline row of its own, never part of "all topological".
SPECTRAL = "spectral (LapEigvals)"
SMOLLM2_LAYERS = list(range(0, 30, 3))  # 10 of 30 layers x 9 heads: the cost stays reasonable


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ cached features
def _cache_dir() -> Path:
    env = os.environ.get("ATTNTOPO_CACHE_DIR")
    if env:
        return Path(env) / "experiments"
    import platformdirs

    return Path(platformdirs.user_cache_dir("attntopo")) / "experiments"


#: How many feature tables and arrays this run read from the cache / computed (the report says).
CACHE = {"hits": 0, "misses": 0}


def cached_features(texts: list, model: str, sets, layers=None):
    """features() of the texts, computed once and kept on disk (a FeatureTable folder)."""
    import attntopo as at
    from attntopo.features import features

    key = json.dumps(
        {
            "texts": texts,
            "model": model,
            "sets": list(sets),
            "layers": layers,
            "version": at.__version__,
        },
        sort_keys=True,
    )
    folder = _cache_dir() / f"features-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if (folder / "attntopo.json").is_file():
        CACHE["hits"] += 1
        return at.load_result(folder)
    CACHE["misses"] += 1
    log(f"features: {len(texts)} texts on {model}, sets {','.join(sets)}")
    t0 = time.perf_counter()
    # drop_special=True: the features default until issue 29 (now False); kept so that the
    # numbers and the cache (whose key leaves drop_special out) stay those of earlier runs
    table = features(texts, model=model, sets=sets, layers=layers, truncate=True, drop_special=True)
    log(f"  {table.values.shape[1]} columns in {time.perf_counter() - t0:.0f} s")
    table.save(folder)
    return table


def _cached_array(name: str, key: dict, compute) -> np.ndarray:
    path = (
        _cache_dir()
        / f"{name}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]}.npy"
    )
    if path.is_file():
        CACHE["hits"] += 1
        return np.load(path)
    CACHE["misses"] += 1
    arr = np.asarray(compute())
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, arr)
    return arr


# ------------------------------------------------------------------ baselines
def minilm_embeddings(texts: list[str]) -> np.ndarray:
    """Mean-pooled last hidden states of MiniLM (the sentence-transformers recipe)."""
    import torch

    import attntopo as at

    def compute():
        m = at.load_model("minilm")
        out = []
        for start in range(0, len(texts), 32):
            enc = m.tokenizer(
                texts[start : start + 32], padding=True, truncation=True, return_tensors="pt"
            )
            with torch.inference_mode():
                h = m.hf_model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            out.append(((h * mask).sum(1) / mask.sum(1)).numpy())
        return np.concatenate(out)

    return _cached_array("minilm-mean", {"texts": texts}, compute)


def _causal_lm():
    from attntopo.datasets._generated import _causal_lm as load

    return load("smollm2")


def token_logprobs(
    texts: list[str], batch: int = 32
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per text: log-probability, rank and entropy of each token under SmolLM2 (after a BOS).

    Right-padded batches with an attention mask: a text's numbers do not depend on its batch
    beyond float32 rounding.
    """
    import torch

    tok, lm = _causal_lm()
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else bos
    seqs = [[bos] + tok(t, add_special_tokens=False)["input_ids"][:256] for t in texts]
    out = []
    for start in range(0, len(seqs), batch):
        chunk = seqs[start : start + batch]
        width = max(len(x) for x in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for k, x in enumerate(chunk):
            ids[k, : len(x)] = torch.tensor(x)
            mask[k, : len(x)] = 1
        with torch.inference_mode():
            logits = lm(input_ids=ids, attention_mask=mask).logits.double()
        for k, x in enumerate(chunk):
            logp = torch.log_softmax(logits[k, : len(x) - 1], -1)
            target = ids[k, 1 : len(x)]
            lp = logp[torch.arange(target.numel()), target]
            rank = (logp > lp[:, None]).sum(-1)
            ent = -(logp.exp() * logp).sum(-1)
            out.append((lp.numpy(), rank.numpy(), ent.numpy()))
    return out


def gltr_features(texts: list[str]) -> np.ndarray:
    """GLTR-style features: rank buckets (top 1/10/100/1000), mean/std log-prob, mean entropy."""

    def compute():
        rows = []
        for lp, rank, ent in token_logprobs(texts):
            rows.append(
                [
                    np.mean(rank < 1),
                    np.mean(rank < 10),
                    np.mean(rank < 100),
                    np.mean(rank < 1000),
                    lp.mean(),
                    lp.std(),
                    lp.min(),
                    ent.mean(),
                    len(lp),
                ]
            )
        return np.array(rows)

    return _cached_array("gltr", {"texts": texts}, compute)


def sentence_logprob(texts: list[str]) -> np.ndarray:
    return _cached_array(
        "logprob",
        {"texts": texts},
        lambda: np.array([lp.sum() for lp, _, _ in token_logprobs(texts)]),
    )


# ------------------------------------------------------------------ evaluation
def evaluate(X, y, cv, groups=None, kind="dense") -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_validate
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "tfidf":
        model = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1),
            LogisticRegression(max_iter=3000, C=10.0),
        )
    else:
        X = np.nan_to_num(np.asarray(X, dtype=np.float64))
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500, C=0.1))
    r = cross_validate(model, X, y, cv=cv, groups=groups, scoring=("accuracy", "f1_macro"))
    return {
        "accuracy": float(np.mean(r["test_accuracy"])),
        "accuracy_std": float(np.std(r["test_accuracy"])),
        "f1_macro": float(np.mean(r["test_f1_macro"])),
        "f1_macro_std": float(np.std(r["test_f1_macro"])),
        "n_features": int(np.asarray(X).shape[1]) if kind != "tfidf" else None,
    }


def topo_rows(table, y, cv, groups=None, prefix="") -> dict:
    out = {}
    for s in TOPO_SETS:
        out[f"{prefix}{s}"] = evaluate(table.select(sets=s).values, y, cv, groups)
    out[f"{prefix}all topological"] = evaluate(table.values, y, cv, groups)
    return out


# ------------------------------------------------------------------ the three tasks
SIZES = {"topic": 80, "human_machine": 1000, "minimal": 200}  # full size; --size overrides


def topic(quick: bool) -> dict:
    from sklearn.model_selection import StratifiedKFold

    from attntopo.datasets import fortunes

    n = 20 if quick else SIZES["topic"]  # per category (sports has 93 of at most 40 words)
    texts, labels = fortunes(categories=TOPIC_CATEGORIES, n_per_category=n, max_words=40, seed=SEED)
    log(f"topic: {len(texts)} fortunes, {len(TOPIC_CATEGORIES)} categories")
    y = np.asarray(labels)
    cv = StratifiedKFold(5, shuffle=True, random_state=SEED)
    rows = {
        "TF-IDF + LR": evaluate(texts, y, cv, kind="tfidf"),
        "MiniLM mean embedding + LR": evaluate(minilm_embeddings(texts), y, cv),
    }
    table = cached_features(texts, "minilm", TOPO_SETS)
    rows.update(topo_rows(table, y, cv, prefix="MiniLM "))
    rows[f"MiniLM {SPECTRAL}"] = evaluate(
        cached_features(texts, "minilm", ("spectral",)).values, y, cv
    )
    return {
        "n_texts": len(texts),
        "categories": TOPIC_CATEGORIES,
        "per_category": n,
        "cv": "stratified 5-fold",
        "rows": rows,
        "head_scores": topic_head_scores(table, y),
    }


def topic_head_scores(table, y) -> dict[str, float]:
    """Each MiniLM head's topological features alone: their 3-fold CV accuracy on the topic task.

    Descriptive (which heads carry the topic), drawn in the report's head-importance figure; it
    chooses nothing reported in the tables (those use every head).
    """
    from attntopo.features import head_scores

    log("topic: scoring each head alone (3-fold CV)")
    scores = head_scores(table, y, criterion="cv_accuracy", cv=3, random_state=SEED)
    return {f"L{layer}H{head}": float(v) for (layer, head), v in sorted(scores.items())}


def head_figure(scores: dict[str, float], path: Path) -> None:
    """The layer x head grid of :func:`topic_head_scores` (``plots.plot_head_importance``), as
    PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from attntopo.plots import plot_head_importance, save_figure

    parsed = {tuple(int(x) for x in k[1:].split("H")): v for k, v in scores.items()}
    top = sorted(parsed, key=parsed.get, reverse=True)[:5]
    fig = plot_head_importance(
        parsed,
        chosen=top,
        label="3-fold CV accuracy (topic)",
        title="Topic of a fortune: each MiniLM head alone",
    )
    save_figure(fig, path)


def human_machine(quick: bool) -> dict:
    from sklearn.model_selection import StratifiedGroupKFold

    from attntopo.datasets import generated_vs_human

    n = 40 if quick else SIZES["human_machine"]
    log(f"human/machine: {n} texts (generation is cached after the first run)")
    d = generated_vs_human(n=n, seed=SEED)
    y = np.asarray(d.labels)
    groups = np.asarray(d.groups)
    cv = StratifiedGroupKFold(5, shuffle=True, random_state=SEED)
    rows = {
        "TF-IDF + LR": evaluate(d.texts, y, cv, groups, kind="tfidf"),
        "SmolLM2 log-likelihood (GLTR-style) + LR": evaluate(gltr_features(d.texts), y, cv, groups),
    }
    rows.update(topo_rows(cached_features(d.texts, "minilm", TOPO_SETS), y, cv, groups, "MiniLM "))
    rows[f"MiniLM {SPECTRAL}"] = evaluate(
        cached_features(d.texts, "minilm", ("spectral",)).values, y, cv, groups
    )
    layers = SMOLLM2_LAYERS[:3] if quick else SMOLLM2_LAYERS
    rows.update(
        topo_rows(cached_features(d.texts, "smollm2", TOPO_SETS, layers), y, cv, groups, "SmolLM2 ")
    )
    rows[f"SmolLM2 {SPECTRAL}"] = evaluate(
        cached_features(d.texts, "smollm2", ("spectral",), layers).values, y, cv, groups
    )
    lengths = [len(t.split()) for t in d.texts]
    return {
        "n_texts": n,
        "cv": "stratified 5-fold grouped by pair",
        "rows": rows,
        "smollm2_layers": layers,
        "mean_words": float(np.mean(lengths)),
        "generation": {k: d.info[k] for k in ("model", "prompt_words", "temperature", "top_p")},
    }


def _h0_sums(table, column_suffix: str) -> tuple[np.ndarray, list[str]]:
    cols = [c for c in table.columns if c.endswith(column_suffix)]
    return table.select(sets=column_suffix.split(".")[0]).to_pandas()[cols].to_numpy(), cols


def minimal(quick: bool) -> dict:
    from attntopo.datasets import PHENOMENA, minimal_pairs

    n = 40 if quick else SIZES["minimal"]
    pairs = minimal_pairs(n_per_phenomenon=n, seed=SEED)
    log(f"minimal pairs: {len(pairs)} pairs")
    m = len(pairs)
    texts = list(pairs.good) + list(pairs.bad)
    phen = np.asarray(pairs.phenomenon)
    rng = np.random.default_rng(SEED)
    val = np.zeros(m, dtype=bool)
    for p in PHENOMENA:  # half of each phenomenon's pairs choose the head, half test it
        idx = np.flatnonzero(phen == p)
        val[rng.choice(idx, size=idx.size // 2, replace=False)] = True
    results = {}
    lp = sentence_logprob(texts)
    results["SmolLM2 sentence log-probability"] = {
        p: float(np.mean(lp[:m][(phen == p) & ~val] > lp[m:][(phen == p) & ~val]))
        for p in PHENOMENA
    }
    chosen = {}
    for model, layers in (
        ("minilm", None),
        ("smollm2", SMOLLM2_LAYERS[:3] if quick else SMOLLM2_LAYERS),
    ):
        table = cached_features(texts, model, ("barcode", "js"), layers)
        for label, suffix in (
            ("H0 sum of 1 - max(A, A^T) (la-tda)", "barcode.h0.sum"),
            ("JS H0 total persistence", "js.h0.total_persistence"),
        ):
            S, cols = _h0_sums(table, suffix)
            good, bad = S[:m], S[m:]
            name = f"{'MiniLM' if model == 'minilm' else 'SmolLM2'} {label}"
            acc, pick = {}, {}
            for p in PHENOMENA:
                v, t = (phen == p) & val, (phen == p) & ~val
                # rule per head: "the acceptable sentence has the smaller (or larger) H0 sum"
                lower = np.mean(good[v] < bad[v], axis=0)
                higher = np.mean(good[v] > bad[v], axis=0)
                best_lo, best_hi = int(np.argmax(lower)), int(np.argmax(higher))
                if lower[best_lo] >= higher[best_hi]:
                    h, sign = best_lo, "lower"
                    acc[p] = float(np.mean(good[t, h] < bad[t, h]))
                else:
                    h, sign = best_hi, "higher"
                    acc[p] = float(np.mean(good[t, h] > bad[t, h]))
                pick[p] = f"{cols[h].split('.')[0]} ({sign})"
            results[name] = acc
            chosen[name] = pick
    return {
        "n_pairs": m,
        "phenomena": list(PHENOMENA),
        "per_phenomenon": n,
        "split": "per phenomenon: half the pairs choose head and direction, half test",
        "accuracy": results,
        "chosen_heads": chosen,
    }


#: False (``--cached-only``, and ``--quick``): §4 uses the feature chunks cached so far.
COMPUTE_HALLUCINATION = True


def hallucination(quick: bool) -> dict:
    from hallucination import NoBenchmark, compute_features
    from hallucination import evaluate as evaluate_hallucination

    try:
        if COMPUTE_HALLUCINATION and not quick:
            compute_features(None)
        return evaluate_hallucination(quick)
    except NoBenchmark as e:
        log(f"hallucination: {e}")
        return {"skipped": str(e)}


# ------------------------------------------------------------------ report
def _fmt(r: dict) -> str:
    return (
        f"{r['accuracy']:.3f} ± {r['accuracy_std']:.3f} | "
        f"{r['f1_macro']:.3f} ± {r['f1_macro_std']:.3f}"
    )


def args_only(res: dict) -> list[str]:
    """The tasks this run computed (beside those reused)."""
    reused = set(res.get("reused", {}).get("tasks", ()))
    return [
        k
        for k in ("topic", "human_machine", "minimal", "hallucination")
        if k in res and k not in reused
    ]


def _run_line(res: dict) -> str:
    """The report's line on the run: when, where, how long, what was reused or cut."""
    env = res["environment"]
    return (
        (
            f"Run: {', '.join(res['reused']['tasks'])} on {res['reused']['date']} "
            f"({res['previous_seconds']:.0f} s; numbers reused from the earlier `--json` by "
            f"`run.py --only ... --reuse`), {', '.join(args_only(res))} on {res['date']} "
            f"({res['seconds']:.0f} s); {env['machine']}, Python {env['python']}."
            if res.get("reused")
            else f"Run: {res['date']}, {env['machine']}, Python {env['python']}, "
            f"{res['seconds']:.0f} s"
        )
        + (
            f" ({res['cache']['hits']} of {res['cache']['hits'] + res['cache']['misses']} feature "
            "tables and arrays read from the cache of an earlier run: the time of the "
            "classifiers, not of the features)"
            if res.get("cache", {}).get("hits") and not res.get("reused")
            else ""
        )
        + (
            " — **the quick run** (`--quick`: small subsets, wide standard deviations; "
            "the full one is `make experiments`)."
            if res["quick"]
            else ""
            if res.get("reused")
            else "."
        )
        + (
            ""
            if res["quick"] or res.get("full_size", True)
            else f" **Reduced sizes** ({', '.join(f'{k}={v}' for k, v in res['sizes'].items())}; "
            "`make experiments` runs the full ones)."
        )
    )


def _topic_section(t: dict) -> list[str]:
    """Section 1 of the report: the topic of a fortune."""
    lines = [
        "## 1. Topic of a fortune",
        "",
        f"{t['n_texts']} fortunes, {t['per_category']} from each of {', '.join(t['categories'])} "
        f"(Debian's `fortunes`, at most 40 words); {t['cv']} CV. Chance: "
        f"{1 / len(t['categories']):.3f}.",
        "",
        "| features | accuracy | macro-F1 |",
        "|---|---|---|",
    ]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in t["rows"].items()]
    if t.get("head_scores"):
        hs = t["head_scores"]
        best = sorted(hs, key=hs.get, reverse=True)[:5]
        lines += [
            "",
            "Which heads carry the topic: each head's topological features alone (3-fold CV "
            "accuracy on the same texts; descriptive, it chooses nothing in the table above). "
            "Best: "
            + ", ".join(f"{k} {hs[k]:.3f}" for k in best)
            + f"; median head {np.median(list(hs.values())):.3f}.",
            "",
            "![each MiniLM head's topic accuracy, layers down, heads across; the five best "
            "outlined](experiments_heads.png)",
        ]
    return lines


def _human_machine_section(h: dict) -> list[str]:
    """Section 2 of the report: human or machine."""
    lines = [
        "",
        "## 2. Human or machine",
        "",
        f"{h['n_texts']} texts: half fortunes, half SmolLM2 continuations of their first "
        f"{h['generation']['prompt_words']} words (temperature {h['generation']['temperature']}, "
        f"top-p {h['generation']['top_p']}, about as long in tokens; mean {h['mean_words']:.1f} "
        f"words); {h['cv']} CV, so a text and its twin never sit on both sides. SmolLM2 "
        f"attention: layers {', '.join(map(str, h['smollm2_layers']))} (all 9 heads each). "
        "Chance: 0.5. Caveat: a continuation stops at its token budget, often mid-sentence, "
        "while a fortune ends with its punctuation; features that see the last tokens (the "
        "templates' `last` and `punct` among them) can pick that up rather than style.",
        "",
        "| features | accuracy | macro-F1 |",
        "|---|---|---|",
    ]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in h["rows"].items()]
    return lines


def _minimal_pairs_section(mp: dict) -> list[str]:
    """Section 3 of the report: minimal pairs."""
    phen = mp["phenomena"]
    lines = [
        "",
        "## 3. Minimal pairs",
        "",
        f"{mp['n_pairs']} pairs from attntopo's templates ({mp['per_phenomenon']} per "
        f"phenomenon); {mp['split']}. A pair is right when the rule picks the acceptable "
        "sentence. Topological rule (la-tda): per phenomenon, the head and the direction "
        "(acceptable = lower or higher H0 sum) with the best validation accuracy. Baseline: the "
        "sentence with the higher SmolLM2 log-probability (BLiMP's scoring; no choice to make). "
        "SmolLM2 attention: the same layers as in task 2. Chance: 0.5. The comparison favours "
        "the rules: each is fitted (one head and a direction out of every head) on labelled pairs "
        "from the same templates as its test pairs, while the log-probability baseline is fitted "
        "on nothing; templates repeat their structure, so a head that separates one template's "
        "pairs keeps separating them. Read the rules' numbers as how much one head's H0 sum "
        "knows about a phenomenon, not as a better acceptability model; the four rules are "
        "reported side by side, and no rule was chosen on the test halves.",
        "",
        "| method | " + " | ".join(phen) + " | mean |",
        "|---" * (len(phen) + 2) + "|",
    ]
    for name, acc in mp["accuracy"].items():
        vals = [acc[p] for p in phen]
        lines.append(
            f"| {name} | " + " | ".join(f"{v:.2f}" for v in vals) + f" | {np.mean(vals):.3f} |"
        )
    lines += ["", "Heads chosen on the validation halves:", ""]
    for name, pick in mp["chosen_heads"].items():
        lines.append(f"* {name}: " + "; ".join(f"{p} {h}" for p, h in pick.items()))
    return lines


def report(res: dict) -> str:
    lines = [
        "# Experiments: does attention topology carry signal?",
        "",
        "Regenerated by `make experiments` (`experiments/run.py`; feature tables are cached, so a",
        "rerun recomputes the classifiers only). Seeds are fixed; the numbers regenerate to within",
        "their standard deviations (float32 forward passes differ between CPU kernels in the last",
        "bits). Logistic regression on standardized features (C = 0.1, at most 500 iterations) for",
        "every dense feature matrix, on TF-IDF of word 1–2-grams (C = 10) for the text baseline.",
        "Formulas of the feature sets: [features.md](features.md); the features drop special",
        "tokens (`drop_special=True`).",
        "",
        _run_line(res),
        "",
    ]
    lines += _topic_section(res["topic"])
    lines += _human_machine_section(res["human_machine"])
    lines += _minimal_pairs_section(res["minimal"])
    if "hallucination" in res:
        from hallucination import report as hallucination_report

        lines += ["", *hallucination_report(res["hallucination"])]
    lines += ["", "## What comes out", "", *res.get("notes", []), ""]
    return "\n".join(lines)


def notes(res: dict) -> list[str]:
    """Plain statements read off the numbers (no hand-written claims)."""
    out = []
    for key, title in (("topic", "Topic"), ("human_machine", "Human or machine")):
        rows = res[key]["rows"]
        best = max(rows, key=lambda k: rows[k]["accuracy"])
        topo = {k: v for k, v in rows.items() if any(s in k for s in (*TOPO_SETS, "topological"))}
        best_topo = max(topo, key=lambda k: topo[k]["accuracy"])
        base = {k: v for k, v in rows.items() if k not in topo}
        best_base = max(base, key=lambda k: base[k]["accuracy"])
        verdict = (
            "beats" if rows[best_topo]["accuracy"] > rows[best_base]["accuracy"] else "loses to"
        )
        out.append(
            f"* {title}: the best topological features ({best_topo}, "
            f"{rows[best_topo]['accuracy']:.3f}) {verdict} the best baseline ({best_base}, "
            f"{rows[best_base]['accuracy']:.3f}); best overall: {best}."
        )
        for model in ("MiniLM", "SmolLM2"):
            spec = f"{model} {SPECTRAL}"
            mine = {k: v for k, v in topo.items() if k.startswith(model)}
            if spec in rows and mine:
                t = max(mine, key=lambda k: mine[k]["accuracy"])
                word = "beats" if rows[t]["accuracy"] > rows[spec]["accuracy"] else "does not beat"
                out.append(
                    f"  * Topology or spectra on {model}: {t} ({rows[t]['accuracy']:.3f}) {word} "
                    f"the LapEigvals spectra ({rows[spec]['accuracy']:.3f})."
                )
    if "hallucination" in res and "skipped" not in res["hallucination"]:
        from hallucination import _get

        h = res["hallucination"]["all"]
        cov = _get(h, "covariates")["roc_auc"]
        best = max(
            (
                r
                for r in h["rows"]
                if r["stratum"] == "all"
                and r["model"] != "covariates"
                and not r["model"].endswith("+ covariates")
            ),
            key=lambda r: r["roc_auc"],
        )
        plus = _get(h, f"{best['model']} + covariates")
        out.append(
            f"* Hallucinations: the prompt's length alone {cov:.3f}; the best detector "
            f"({best['model']}) {best['roc_auc']:.3f}, {plus['gain_roc_auc']:+.3f} over "
            "the length (§4)."
        )
    acc = res["minimal"]["accuracy"]
    means = {k: float(np.mean(list(v.values()))) for k, v in acc.items()}
    best = max(means, key=means.get)
    base = means["SmolLM2 sentence log-probability"]
    topo_best = max((k for k in means if "log-probability" not in k), key=means.get)
    out.append(
        f"* Minimal pairs: SmolLM2's log-probability averages {base:.3f}; the best topological "
        f"rule ({topo_best}) {means[topo_best]:.3f}; best overall: {best}."
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small subsets (development, smoke test)")
    ap.add_argument("--out", help="write the markdown report here (atomically)")
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument(
        "--only", choices=("topic", "human_machine", "minimal", "hallucination"), action="append"
    )
    ap.add_argument(
        "--reuse",
        metavar="JSON",
        help="with --only: take the other tasks' numbers from this earlier --json "
        "and write the whole report",
    )
    ap.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="TASK=N",
        help="smaller runs: fortunes per topic, texts of task 2, pairs per phenomenon "
        f"(full: {', '.join(f'{k}={v}' for k, v in SIZES.items())})",
    )
    ap.add_argument(
        "--cached-only",
        action="store_true",
        help="§4: use the feature chunks cached so far (compute none)",
    )
    args = ap.parse_args()
    if args.cached_only:
        global COMPUTE_HALLUCINATION
        COMPUTE_HALLUCINATION = False
    for item in args.size:
        task, _, value = item.partition("=")
        if task not in SIZES or not value.isdigit():
            ap.error(f"--size takes TASK=N with TASK in {', '.join(SIZES)}, got {item!r}")
        SIZES[task] = int(value)
    full = all(
        SIZES[k] == v for k, v in {"topic": 80, "human_machine": 1000, "minimal": 200}.items()
    )
    t0 = time.perf_counter()
    res = {
        "quick": args.quick,
        "full_size": full and not args.quick,
        "sizes": dict(SIZES),
        "date": time.strftime("%Y-%m-%d"),
        "environment": {
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        },
    }
    tasks = {
        "topic": topic,
        "human_machine": human_machine,
        "minimal": minimal,
        "hallucination": hallucination,
    }
    reused = {}
    if args.reuse:
        if not args.only:
            ap.error("--reuse goes with --only (the tasks to run again)")
        reused = json.loads(Path(args.reuse).read_text())
    for name, fn in tasks.items():
        if args.only and name not in args.only:
            if name in reused:
                res[name] = reused[name]
            continue
        res[name] = fn(args.quick)
    res["seconds"] = time.perf_counter() - t0
    res["cache"] = dict(CACHE)
    if reused:
        again = [k for k in tasks if k in reused and k not in args.only]
        earlier = reused.get("reused")  # a report that reused older numbers: keep their run's
        if earlier and set(again) <= set(earlier["tasks"]):
            res["reused"] = {"date": earlier["date"], "tasks": again}
            res["previous_seconds"] = reused.get("previous_seconds")
        else:
            res["reused"] = {"date": reused.get("date"), "tasks": again}
            res["previous_seconds"] = reused.get("seconds")
        for k in ("environment", "quick", "full_size", "sizes"):
            res[k] = reused.get(k, res[k])
    elif args.only:
        print(json.dumps(res, indent=1))
        return 0
    res["notes"] = notes(res)
    text = report(res)
    print(text)
    from attntopo.io import atomic_write_text

    if args.out:
        if res.get("topic", {}).get("head_scores"):
            head_figure(
                res["topic"]["head_scores"], Path(args.out).with_name("experiments_heads.png")
            )
        atomic_write_text(args.out, text + "\n")
    if args.json:
        atomic_write_text(args.json, json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
