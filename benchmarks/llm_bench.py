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
* ``analyze(text, maxdim=0)`` and ``maxdim=1``, on ten chosen heads (2 layers x 5 heads) and
  on all heads.

A measurement whose estimate (the forward pass plus, per head, what the ten-head run took
beyond its forward pass) exceeds
``--budget`` seconds, or whose result would not fit in half the memory, is skipped and says
so.  Ratios are to the forward pass of the same run.  Goals (issue 26): GPU, 8B, 2,048 tokens:
attention score within 2x the forward pass, JS within 10x; CPU, 1B, 1,024 tokens: attention
score within 3x; memory flat in the number of layers.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
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
    """Time, extra peak host memory and peak GPU memory of one call."""
    gc.collect()
    _gpu_peak_reset(device)
    t0 = time.perf_counter()
    extra, _ = _llama.extra_peak(fn)
    return {"s": time.perf_counter() - t0, "host_extra": extra, "gpu_peak": _gpu_peak(device)}


def run(shape: str, tokens: list[int], device: str, dtype: str, budget: float, log) -> dict:
    import torch

    import attntopo as at

    t0 = time.perf_counter()
    m = _llama.random_llama(shape, dtype=dtype, device=device, max_tokens=max(tokens) + 8)
    build_s = time.perf_counter() - t0
    L, H = m.n_layers, m.n_heads
    chosen = {"layers": sorted({L // 3, (2 * L) // 3}),
              "heads": sorted({0, H // 4, H // 2, (3 * H) // 4, H - 1})}
    n_chosen = len(chosen["layers"]) * len(chosen["heads"])  # ten on the real shapes
    warm = _llama.pair_with_tokens(m.tokenizer, 40)
    at.features([warm], m, sets=("prompt",), drop_special=True)  # the measured runs' setting
    at.analyze(" ".join(warm), m, maxdim=1, progress=False, **chosen)
    weights = sum(p.numel() * p.element_size() for p in m.hf_model.parameters())
    out = {"shape": shape, "layers": L, "heads": H, "kv_heads": m.n_kv_heads, "device": device,
           "dtype": dtype, "weights_bytes": weights, "build_s": build_s, "runs": []}
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for n in tokens:
        pair = _llama.pair_with_tokens(m.tokenizer, n)
        text = pair[0] + " " + pair[1]
        ids = torch.tensor([m.tokenize(text).ids], device=device)
        row = {"n": int(ids.shape[1]), "attention_bytes": _llama.attention_bytes(m, ids.shape[1])}
        log(f"{shape} n={row['n']}: forward")

        def forward():
            with torch.inference_mode():
                m.hf_model(input_ids=ids)

        forward()  # the first pass at a new length allocates its buffers
        row["forward"] = measure(forward, device)
        fw = row["forward"]["s"]
        log(f"  forward {fw:.2f} s; prompt score (attention)")
        row["prompt_attention"] = measure(
            lambda: at.features([pair], m, sets=("prompt",), prompt_quantities=("attention",),
                                drop_special=True), device)
        # the JS cost per head, from the ten chosen heads at maxdim 0 (distances dominate there)
        log("  analyze, ten heads, maxdim 0")
        row["analyze0_ten"] = measure(
            lambda: at.analyze(text, m, maxdim=0, progress=False, **chosen), device)
        # per head: what the ten-head run took beyond its own forward pass
        per_head0 = max(row["analyze0_ten"]["s"] - fw, 0.0) / n_chosen
        log("  analyze, ten heads, maxdim 1")
        row["analyze1_ten"] = measure(
            lambda: at.analyze(text, m, maxdim=1, progress=False, **chosen), device)
        per_head1 = max(row["analyze1_ten"]["s"] - fw, 0.0) / n_chosen
        held = 12 * L * H * row["n"] ** 2  # an Analysis of all heads: float32 weights + float64 distances
        plans = [
            ("prompt_js", fw + per_head0 * L * H,
             lambda: at.features([pair], m, sets=("prompt",), prompt_quantities=("js", "attention"),
                                 drop_special=True), 0),
            ("analyze0_all", fw + per_head0 * L * H,
             lambda: at.analyze(text, m, maxdim=0, progress=False), held),
            ("analyze1_all", fw + per_head1 * L * H,
             lambda: at.analyze(text, m, maxdim=1, progress=False), held),
        ]
        for key, estimate, fn, mem in plans:
            if estimate > budget or mem > ram / 2:
                why = (f"estimated {estimate:.0f} s > budget {budget:.0f} s" if estimate > budget
                       else f"its result would hold {mem / 2**30:.1f} GiB")
                row[key] = {"skipped": why, "estimate_s": estimate}
                log(f"  {key}: skipped ({why})")
                continue
            log(f"  {key} (estimate {estimate:.0f} s)")
            row[key] = measure(fn, device)
        for key in ("prompt_attention", "prompt_js", "analyze0_ten", "analyze1_ten", "analyze0_all",
                    "analyze1_all"):
            r = row[key]
            r["ratio"] = (r["s"] if "s" in r else r["estimate_s"]) / fw
        out["runs"].append(row)
        log(f"  done: attention score {row['prompt_attention']['ratio']:.2f}x the forward pass")
    return out


# ------------------------------------------------------------------------ report
LABELS = [
    ("forward", "forward pass alone (the limit)"),
    ("prompt_attention", "features(prompt), attention score, all heads"),
    ("prompt_js", "features(prompt), JS + attention scores, all heads"),
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
    parts = [f"Measured {res['date']} on {mc['cpu']} ({mc['usable_cores']} usable cores, {ram}"
             f"{', CUDA: ' + res['gpu'] if res.get('gpu') else ', no GPU'}); load average at the "
             f"start {mc.get('loadavg')}; torch {vs.get('torch')}, transformers "
             f"{vs.get('transformers')}.  Times are one call each; a shared machine makes them "
             "noisy, the ratios less so (each is taken within one run).", ""]
    for model in res["models"]:
        title = (f"{model['shape']} shape ({model['layers']} layers x {model['heads']} heads, "
                 f"{model['kv_heads']} KV heads), {model['dtype']} on {model['device']}")
        parts += [f"### {title}", "",
                  f"Weights {model['weights_bytes'] / 2**30:.2f} GiB; built in {model['build_s']:.1f} s.", ""]
        for row in model["runs"]:
            parts += [f"**{row['n']} tokens** (all layers' float32 attention: "
                      f"{row['attention_bytes'] / 2**20:,.0f} MiB)", "",
                      "| step | time (s) | x forward | extra peak host (MiB) | peak GPU (MiB) |",
                      "|---|---|---|---|---|"]
            for key, label in LABELS:
                r = row[key]
                if "skipped" in r:
                    parts.append(f"| {label} | skipped: {r['skipped']} | ~{r['ratio']:.0f} | | |")
                    continue
                ratio = "1" if key == "forward" else f"{r['ratio']:.2f}"
                parts.append(f"| {label} | {r['s']:.2f} | {ratio} | {_mib(r['host_extra'])} | "
                             f"{_mib(r['gpu_peak'])} |")
            parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="texts of 128 and 256 tokens only")
    ap.add_argument("--shape", choices=sorted(_llama.SHAPES), default=None,
                    help="default: 1b on the CPU, and 8b too when CUDA is present")
    ap.add_argument("--tokens", default=None, help="comma-separated token counts")
    ap.add_argument("--budget", type=float, default=900.0,
                    help="skip a measurement estimated to take longer (seconds)")
    ap.add_argument("--out", type=Path, default=None, help="markdown report")
    ap.add_argument("--json", type=Path, default=None, help="raw results")
    args = ap.parse_args(argv)
    import torch

    tokens = ([int(x) for x in args.tokens.split(",")] if args.tokens else
              [128, 256] if args.quick else [512, 1024, 2048])
    plans = [(args.shape or "1b", "cpu", "float32")]
    if torch.cuda.is_available() and args.shape is None:
        plans.append(("8b", "cuda", "bfloat16"))

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    res = {"machine": machine_info(), "versions": versions(), "tokens": tokens, "models": [],
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    for shape, device, dtype in plans:
        res["models"].append(run(shape, tokens, device, dtype, args.budget, log))
        gc.collect()
    report = ("# LLM scale benchmark\n\n> Generated by `python benchmarks/llm_bench.py "
              + " ".join(argv if argv is not None else sys.argv[1:])
              + "` (`make bench` runs it without `--quick`); do not edit by hand.\n\n"
              + render(res) + "\n")
    print(report)
    for path, text in ((args.out, report), (args.json, json.dumps(res, indent=1, default=float))):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
