#!/usr/bin/env python
"""LLM scale (issue 26): random-weight Llamas of real shapes, texts of 512 to 2,048 tokens.

    python benchmarks/llm_bench.py --out docs/benchmarks_llm.md --json docs/benchmarks_llm.json
    python benchmarks/llm_bench.py --quick          # shorter texts (128, 256 tokens), smoke test

Model: a causal Llama with random weights (rotary positions, grouped-query attention, eager
attention) of the 1B shape (16 layers x 32 heads, hidden 2048, 8 KV heads) on the CPU, and of
the 8B shape (32 x 32, hidden 4096) in bfloat16 when a CUDA GPU is present (``--shape`` picks
another).  Texts: (prompt, response) pairs cut from benchmarks/corpus.txt to exactly ``n``
tokens, the prompt about half.  Measured for each ``n``, each in one call after a warm-up on a
short pair: time, extra peak host memory (resident size above the size before the call,
``/proc/self/clear_refs`` + ``VmHWM``) and peak GPU memory of

* the forward pass alone (``hf_model(input_ids)``: the limit),
* ``features(pair, sets=("prompt",), prompt_quantities=("attention",))`` (TOHA's score, all heads),
* the same with the JS score too (``prompt_quantities=("js", "attention")``),
* on a RAG-shaped pair of the same length (the prompt seven eighths of the tokens, the answer
  one eighth; issue 36), the attention score alone and the JS score alone
  (``prompt_quantities=("js",)``: the answer's rows' distances to all tokens, ``r·n`` pairs),
* ``analyze(text, maxdim=0)`` and ``maxdim=1``, on ten chosen heads (2 layers x 5 heads) and
  on all heads.

A measurement whose estimate (the forward pass plus, per head, what the ten-head run took
beyond its forward pass; for the JS prompt scores, what the response rows' distances of a few
random causal heads of that length and answer took, ``js_rows_per_head``) exceeds
``--budget`` seconds, or whose result would not fit in half the memory, is skipped and says
so; ``--steps`` runs only the steps named (the forward pass always runs), ``--skip-reason``
says in the report why the others were left out.  ``--merge`` keeps the rows of other token
counts from the ``--json`` file of an earlier run (each row states its own date and load).
Ratios are to the forward pass of the same run.  Goals (issue 26): GPU, 8B, 2,048 tokens:
attention score within 2x the forward pass, JS within 10x; CPU, 1B, 1,024 tokens: attention
score within 3x; memory flat in the number of layers.  Issue 36: CPU, 1B, 1,024 tokens, the
RAG pair's JS score within 3x the forward pass; CPU, a 12 x 12 Llama at ~900 tokens, the RAG
pair's JS score within 2x its attention score.  ``--merge`` also keeps an earlier run's
measurement of a step this run left out at the same length (marked with its date; its ratio is
to its own run's forward pass).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import _llama  # noqa: E402
from _common import machine_info, versions  # noqa: E402


def _gpu_peak_reset(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _gpu_peak(device: str) -> int | None:
    import torch

    if not device.startswith("cuda"):
        return None
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated())


def measure(fn, device: str) -> dict:
    """Time, the process's CPU time (all threads), extra peak host memory and peak GPU memory
    of one call."""
    gc.collect()
    _gpu_peak_reset(device)
    t0, c0 = time.perf_counter(), time.process_time()
    extra, _ = _llama.extra_peak(fn)
    return {
        "s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
        "host_extra": extra,
        "gpu_peak": _gpu_peak(device),
    }


STEPS = (
    "forward",
    "prompt_attention",
    "prompt_js",
    "prompt_attention_rag",
    "prompt_js_rag",
    "analyze0_ten",
    "analyze1_ten",
    "analyze0_all",
    "analyze1_all",
)
#: the RAG-shaped pair: the prompt this share of the tokens, the answer the rest (issue 36)
RAG_PROMPT_SHARE = 7 / 8


def js_rows_per_head(n: int, r: int, heads: int = 4) -> float:
    """Seconds a head of the JS prompt score's distances (the ``r`` answer rows of a causal
    ``n``-token head against all rows), from ``heads`` random causal heads: the estimate that
    decides whether a JS prompt step fits the budget."""
    import numpy as np

    from attntopo.distances import token_distances_tensor

    rng = np.random.default_rng(0)
    A = np.tril(rng.dirichlet(np.full(n, 0.3), size=(heads, n))).astype(np.float32)
    A /= A.sum(-1, keepdims=True)
    t0 = time.perf_counter()
    token_distances_tensor(A, rows=range(n - r, n))
    return (time.perf_counter() - t0) / heads


def run(
    shape: str,
    tokens: list[int],
    device: str,
    dtype: str,
    budget: float,
    log,
    steps: tuple[str, ...] = STEPS,
    skip_reason: str = "not run in this measurement",
) -> dict:
    import torch

    import attntopo as at

    t0 = time.perf_counter()
    m = _llama.random_llama(shape, dtype=dtype, device=device, max_tokens=max(tokens) + 8)
    build_s = time.perf_counter() - t0
    L, H = m.n_layers, m.n_heads
    chosen = {
        "layers": sorted({L // 3, (2 * L) // 3}),
        "heads": sorted({0, H // 4, H // 2, (3 * H) // 4, H - 1}),
    }
    n_chosen = len(chosen["layers"]) * len(chosen["heads"])  # ten on the real shapes
    warm = _llama.pair_with_tokens(m.tokenizer, 40)
    at.features([warm], m, sets=("prompt",), drop_special=True)  # the measured runs' setting
    at.analyze(" ".join(warm), m, maxdim=1, progress=False, **chosen)
    skipped = {"skipped": skip_reason}
    weights = sum(p.numel() * p.element_size() for p in m.hf_model.parameters())
    out = {
        "shape": shape,
        "layers": L,
        "heads": H,
        "kv_heads": m.n_kv_heads,
        "device": device,
        "dtype": dtype,
        "weights_bytes": weights,
        "build_s": build_s,
        "runs": [],
    }
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for n in tokens:
        pair = _llama.pair_with_tokens(m.tokenizer, n)
        rag = _llama.pair_with_tokens(m.tokenizer, n, RAG_PROMPT_SHARE)
        text = pair[0] + " " + pair[1]
        ids = torch.tensor([m.tokenize(text).ids], device=device)
        rag_n = len(m.tokenize(rag[0] + " " + rag[1]).ids)
        rag_answer = rag_n - len(m.tokenize(rag[0]).ids)
        row = {
            "n": int(ids.shape[1]),
            "attention_bytes": _llama.attention_bytes(m, ids.shape[1]),
            "rag": {"n": rag_n, "answer_tokens": rag_answer},
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
        }
        log(f"{shape} n={row['n']}: forward")

        def forward():
            with torch.inference_mode():
                m.hf_model(input_ids=ids)

        if device != "cpu" or row["n"] < 1024:
            # the first pass at a new length allocates its buffers (and on a GPU its kernels);
            # a CPU pass of 1,024 tokens and more takes minutes: that setup is lost in it
            forward()
        row["forward"] = measure(forward, device)
        fw = row["forward"]["s"]
        log(f"  forward {fw:.2f} s")
        firsts = [
            (
                "prompt_attention",
                lambda: at.features(
                    [pair], m, sets=("prompt",), prompt_quantities=("attention",), drop_special=True
                ),
            ),
            # the JS cost per head, from the ten chosen heads at maxdim 0 (distances dominate)
            ("analyze0_ten", lambda: at.analyze(text, m, maxdim=0, progress=False, **chosen)),
            ("analyze1_ten", lambda: at.analyze(text, m, maxdim=1, progress=False, **chosen)),
        ]
        for key, fn in firsts:
            if key not in steps:
                row[key] = dict(skipped)
                continue
            log(f"  {key}")
            row[key] = measure(fn, device)
        # per head: what the ten-head run took beyond its own forward pass (None: not run)
        per_head0, per_head1 = (
            max(row[k]["s"] - fw, 0.0) / n_chosen if "s" in row[k] else None
            for k in ("analyze0_ten", "analyze1_ten")
        )
        held = (
            12 * L * H * row["n"] ** 2
        )  # an Analysis of all heads: float32 weights + float64 distances
        # the JS prompt scores: the answer rows' distances (r·n pairs), from a few random heads
        js_half = js_rows_per_head(row["n"], row["n"] - len(m.tokenize(pair[0]).ids))
        js_rag = js_rows_per_head(rag_n, rag_answer)
        row["js_rows_per_head_s"] = {"half": js_half, "rag": js_rag}
        attn = (
            max(row["prompt_attention"]["s"] - fw, 0.0) / (L * H)
            if "s" in row["prompt_attention"]
            else 0.0
        )
        plans = [
            (
                "prompt_js",
                js_half + attn,
                lambda: at.features(
                    [pair],
                    m,
                    sets=("prompt",),
                    prompt_quantities=("js", "attention"),
                    drop_special=True,
                ),
                0,
            ),
            (
                "prompt_attention_rag",
                attn,
                lambda: at.features(
                    [rag], m, sets=("prompt",), prompt_quantities=("attention",), drop_special=True
                ),
                0,
            ),
            (
                "prompt_js_rag",
                js_rag,
                lambda: at.features(
                    [rag], m, sets=("prompt",), prompt_quantities=("js",), drop_special=True
                ),
                0,
            ),
            (
                "analyze0_all",
                per_head0,
                lambda: at.analyze(text, m, maxdim=0, progress=False),
                held,
            ),
            (
                "analyze1_all",
                per_head1,
                lambda: at.analyze(text, m, maxdim=1, progress=False),
                held,
            ),
        ]
        for key, per_head, fn, mem in plans:
            if key not in steps:
                row[key] = dict(skipped)
                continue
            if per_head is None:
                row[key] = {"skipped": "no estimate (the ten-head run was not measured)"}
                continue
            estimate = fw + per_head * L * H
            if estimate > budget or mem > ram / 2:
                why = (
                    f"estimated {estimate:.0f} s > budget {budget:.0f} s"
                    if estimate > budget
                    else f"its result would hold {mem / 2**30:.1f} GiB"
                )
                row[key] = {"skipped": why, "estimate_s": estimate}
                log(f"  {key}: skipped ({why})")
                continue
            log(f"  {key} (estimate {estimate:.0f} s)")
            row[key] = measure(fn, device)
        for key in STEPS[1:]:
            r = row[key]
            t = r.get("s", r.get("estimate_s"))
            r["ratio"] = None if t is None else t / fw
        out["runs"].append(row)
        if row["prompt_attention"]["ratio"] is not None:
            log(f"  done: attention score {row['prompt_attention']['ratio']:.2f}x the forward pass")
    return out


# ------------------------------------------------------------------------ report
LABELS = [
    ("forward", "forward pass alone (the limit)"),
    ("prompt_attention", "features(prompt), attention score, all heads"),
    ("prompt_js", "features(prompt), JS + attention scores, all heads"),
    ("prompt_attention_rag", "RAG pair: features(prompt), attention score alone, all heads"),
    ("prompt_js_rag", "RAG pair: features(prompt), JS score alone, all heads"),
    ("analyze0_ten", "analyze(maxdim=0), ten heads"),
    ("analyze1_ten", "analyze(maxdim=1), ten heads"),
    ("analyze0_all", "analyze(maxdim=0), all heads"),
    ("analyze1_all", "analyze(maxdim=1), all heads"),
]


def _mib(b) -> str:
    return "–" if b is None else f"{b / 2**20:,.0f}"


def render(res: dict) -> str:
    mc, vs = res["machine"], res["versions"]
    ram = f"{mc['ram_gib']:.0f} GiB" if mc.get("ram_gib") else "? GiB"
    parts = [
        f"Measured {res['date']} on {mc['cpu']} ({mc['usable_cores']} usable cores, {ram}"
        f"{', CUDA: ' + res['gpu'] if res.get('gpu') else ', no GPU'}); load average at the "
        f"start {mc.get('loadavg')}; torch {vs.get('torch')}, transformers "
        f"{vs.get('transformers')}.  Times are one call each; a shared machine makes them "
        "noisy, the ratios less so (each is taken within one run).  CPU time is the "
        "process's, all threads (where recorded): the work done, which other jobs on the "
        "machine do not lengthen (torch's threads also count time spent waiting at a "
        "barrier).",
        "",
    ]
    for model in res["models"]:
        title = (
            f"{model['shape']} shape ({model['layers']} layers x {model['heads']} heads, "
            f"{model['kv_heads']} KV heads), {model['dtype']} on {model['device']}"
        )
        parts += [
            f"### {title}",
            "",
            f"Weights {model['weights_bytes'] / 2**30:.2f} GiB; built in {model['build_s']:.1f} s.",
            "",
        ]
        for row in model["runs"]:
            when = (
                f"; measured {row['date']}, load average {row['loadavg']}"
                if row.get("date")
                else ""
            )
            rag = row.get("rag")
            rag_note = (
                f"; the RAG pair: {rag['n']} tokens, the answer {rag['answer_tokens']}"
                if rag
                else ""
            )
            parts += [
                f"**{row['n']} tokens** (all layers' float32 attention: "
                f"{row['attention_bytes'] / 2**20:,.0f} MiB{when}{rag_note})",
                "",
                "| step | time (s) | x forward | CPU time (s) | extra peak host (MiB) "
                "| peak GPU (MiB) |",
                "|---|---|---|---|---|---|",
            ]
            for key, label in LABELS:
                r = row.get(key, {"skipped": "not a step of that run"})
                if r.get("earlier_run"):
                    label += f" (earlier run, {r['earlier_run']}, its own forward pass)"
                if "skipped" in r:
                    ratio = "" if r.get("ratio") is None else f"~{r['ratio']:.0f}"
                    parts.append(f"| {label} | skipped: {r['skipped']} | {ratio} | | | |")
                    continue
                ratio = "1" if key == "forward" else f"{r['ratio']:.2f}"
                cpu = "–" if r.get("cpu_s") is None else f"{r['cpu_s']:.1f}"
                parts.append(
                    f"| {label} | {r['s']:.2f} | {ratio} | {cpu} | "
                    f"{_mib(r['host_extra'])} | {_mib(r['gpu_peak'])} |"
                )
            parts.append("")
    parts += goals(res)
    return "\n".join(parts)


#: the goals: (issue, shape, device, tokens, step, most x the reference step)
GOALS = [
    ("26", "1b", "cpu", 1024, "prompt_attention", 3.0, "forward"),
    ("26", "8b", "cuda", 2048, "prompt_attention", 2.0, "forward"),
    ("26, 36", "8b", "cuda", 2048, "prompt_js", 10.0, "forward"),
    ("36", "1b", "cpu", 1024, "prompt_js_rag", 3.0, "forward"),
    ("36", "12x12", "cpu", 896, "prompt_js_rag", 2.0, "prompt_attention_rag"),
]


def goal_results(res: dict) -> list[dict]:
    """The issues' goals from the rows of ``res``: each a dict with ``what`` (the goal in
    words), ``most`` (the bound), ``ratio`` (None: not measured), ``met`` (None: not
    measured), ``cpu_ratio`` (the same ratio of CPU times, when both were recorded) and
    ``note`` (why not measured, or the earlier run it comes from)."""
    rows = {
        (mod["shape"], mod["device"], row["n"]): row for mod in res["models"] for row in mod["runs"]
    }
    out = []
    for issue, shape, device, n, key, most, ref in GOALS:
        against = "the forward pass" if ref == "forward" else dict(LABELS)[ref]
        what = (
            f"issue {issue}: {shape} shape on {'a GPU' if device == 'cuda' else 'the CPU'}, "
            f"{n:,} tokens: {dict(LABELS)[key]} within {most:g}x {against}"
        )
        g = {
            "what": what,
            "most": most,
            "ratio": None,
            "met": None,
            "cpu_ratio": None,
            "note": None,
            "date": None,
        }
        row = rows.get((shape, device, n), {})
        r, base = row.get(key), row.get(ref)
        if r is None or "s" not in r or base is None or "s" not in base:
            miss = next((x for x in (r, base) if x is not None and "s" not in x), None)
            g["note"] = (
                miss.get("skipped", "not run")
                if miss
                else ("no GPU here" if device == "cuda" else "not run")
            )
        elif r.get("earlier_run") and ref == "forward":  # kept with its own run's ratio
            g.update(ratio=r["ratio"], note=f"the run of {r['earlier_run']}")
        elif r.get("earlier_run") != base.get("earlier_run"):
            g["note"] = "not measured in one run"
        else:
            g["ratio"] = r["s"] / base["s"]
            g["date"], g["loadavg"] = row.get("date"), row.get("loadavg")
            if r.get("cpu_s") and base.get("cpu_s"):
                g["cpu_ratio"] = r["cpu_s"] / base["cpu_s"]
        if g["ratio"] is not None:
            g["met"] = g["ratio"] <= most
            if not g["met"] and g["cpu_ratio"] is not None and g["cpu_ratio"] <= most:
                g["words"] = (
                    f"within {most:g}x by CPU time (the work done): the wall time also "
                    "counts the waits for cores that other jobs held (load average "
                    f"{g.get('loadavg')} at the start)"
                )
        out.append(g)
    return out


def goals(res: dict) -> list[str]:
    """The issues' goals, each met, missed or not measured, from the rows of ``res``."""
    lines = [
        "**Goals (issues 26 and 36), as measured in these runs** (a ratio within one run).",
        "",
    ]
    for g in goal_results(res):
        if g["ratio"] is None:
            lines.append(f"- {g['what']}: not measured ({g['note']}).")
            continue
        cpu = f"; by CPU time {g['cpu_ratio']:.2f}x" if g["cpu_ratio"] is not None else ""
        when = f" ({g['note']})" if g["note"] else ""
        words = f": {g['words']}" if g.get("words") else ""
        lines.append(
            f"- {g['what']}: **{g['ratio']:.2f}x, {'met' if g['met'] else 'missed'}**"
            f"{cpu}{when}{words}."
        )
    mem = [
        (
            mod["shape"],
            mod["layers"],
            row["n"],
            row["prompt_attention"]["host_extra"] / row["attention_bytes"],
            row["forward"]["host_extra"] / row["attention_bytes"],
        )
        for mod in res["models"]
        for row in mod["runs"]
        if row["prompt_attention"].get("host_extra") is not None
        and not row["prompt_attention"].get("earlier_run")
    ]
    if mem:
        lines.append(
            "- Memory flat in the number of layers: the attention score's extra peak host "
            "memory against all layers' float32 attention (the forward pass alone in "
            "brackets; one layer is 1/layers of it): "
            + ", ".join(
                f"{x:.2f}x [{f:.2f}x] ({shape}, 1/{L} = {1 / L:.2f}x, {n:,} tokens)"
                for shape, L, n, x, f in mem
            )
            + "."
        )
    return lines + [""]


def merged(old: dict, new: dict) -> dict:
    """``new`` with, for each of its models (shape, device, dtype), the rows of ``old`` at
    token counts ``new`` did not measure, all rows in token order (each keeps its own date
    and load; the header's machine and versions are the newer run's); at a token count both
    measured, a step ``new`` left out (skipped by ``--steps``) and ``old`` measured is kept
    from ``old``, marked ``earlier_run`` with that row's date (its ratio is to its own run's
    forward pass).  ``old``'s models that ``new`` did not run are kept as they were."""
    key = lambda mod: (mod["shape"], mod["device"], mod["dtype"])  # noqa: E731
    before = {key(mod): mod for mod in old.get("models", [])}
    for mod in old.get("models", []):
        for row in mod["runs"]:
            row.setdefault("date", old.get("date"))
            row.setdefault("loadavg", old.get("machine", {}).get("loadavg"))
    for mod in new["models"]:
        prev = before.pop(key(mod), None)
        if prev is None:
            continue
        have = {row["n"]: row for row in mod["runs"]}
        for row in prev["runs"]:
            now = have.get(row["n"])
            if now is None:
                continue
            for step, r in row.items():
                if (
                    step in STEPS
                    and step != "forward"
                    and "s" in r
                    and "skipped" in now.get(step, {"skipped": ""})
                ):
                    now[step] = {**r, "earlier_run": r.get("earlier_run") or row.get("date")}
        mod["runs"] = sorted(
            mod["runs"] + [row for row in prev["runs"] if row["n"] not in have],
            key=lambda row: row["n"],
        )
    new["models"] += list(before.values())
    new["tokens"] = sorted({row["n"] for mod in new["models"] for row in mod["runs"]})
    return new


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="texts of 128 and 256 tokens only")
    ap.add_argument(
        "--shape",
        choices=sorted(_llama.SHAPES),
        default=None,
        help="default: 1b on the CPU, and 8b too when CUDA is present",
    )
    ap.add_argument("--tokens", default=None, help="comma-separated token counts")
    ap.add_argument(
        "--budget",
        type=float,
        default=900.0,
        help="skip a measurement estimated to take longer (seconds)",
    )
    ap.add_argument(
        "--steps",
        default=",".join(STEPS),
        help=f"comma-separated steps to run (default all: {','.join(STEPS)})",
    )
    ap.add_argument(
        "--skip-reason",
        default="not run in this measurement",
        help="why the steps left out by --steps were left out (shown in the report)",
    )
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep the other token counts' rows from the --json file of an earlier run",
    )
    ap.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: write the report of the --json file's results",
    )
    ap.add_argument("--out", type=Path, default=None, help="markdown report")
    ap.add_argument("--json", type=Path, default=None, help="raw results")
    args = ap.parse_args(argv)
    steps = tuple(x.strip() for x in args.steps.split(",") if x.strip())
    if set(steps) - set(STEPS):
        ap.error(
            f"--steps: unknown {sorted(set(steps) - set(STEPS))}; choose from {', '.join(STEPS)}"
        )
    if (args.merge or args.render) and (args.json is None or not args.json.is_file()):
        ap.error("--merge and --render need --json naming an earlier run's results")
    import torch

    tokens = (
        [int(x) for x in args.tokens.split(",")]
        if args.tokens
        else [128, 256]
        if args.quick
        else [512, 1024, 2048]
    )
    plans = [(args.shape or "1b", "cpu", "float32")]
    if torch.cuda.is_available() and args.shape is None:
        plans.append(("8b", "cuda", "bfloat16"))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    res = {
        "machine": machine_info(),
        "versions": versions(),
        "tokens": tokens,
        "models": [],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    if args.render:
        res, plans = json.loads(args.json.read_text()), []
        argv = res.get("argv", argv)
    else:
        res["argv"] = argv if argv is not None else sys.argv[1:]
    for shape, device, dtype in plans:
        res["models"].append(
            run(shape, tokens, device, dtype, args.budget, log, steps, args.skip_reason)
        )
        gc.collect()
    if args.merge:
        res = merged(json.loads(args.json.read_text()), res)
    if args.json is not None and not args.render:  # the measurements first: none lost
        _write(args.json, json.dumps(res, indent=1, default=float))
    report = (
        "# LLM scale benchmark\n\n> Generated by `python benchmarks/llm_bench.py "
        + shlex.join(argv if argv is not None else sys.argv[1:])
        + "` (`make bench` runs it without `--quick`); do not edit by hand.\n\n"
        + render(res)
        + "\n"
    )
    print(report)
    if args.out is not None:
        _write(args.out, report)
    return 0


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    raise SystemExit(main())
