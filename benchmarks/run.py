#!/usr/bin/env python
"""attntopo benchmarks: against the founding paper's naive approach and the engine's limit.

    make bench        # .venv/bin/python benchmarks/run.py --out docs/benchmarks.md
    make bench-quick  # .venv/bin/python benchmarks/run.py --quick   (CI smoke, < 1 min)

On a quiet 2-core machine the full run should take about 12 minutes (estimated from partial
runs: n = 32/128, all sections, 4.4 min; n = 512, sections 1-3, 3.7 min with 2 baseline heads).

Sections (each runs in its own fresh process, so that cold starts are cold, memory peaks
belong to one workload and every ratio is taken within one process run; ``--quick`` runs
them all in one process to save the start-up time):

  one_text    1. one text, all 72 MiniLM heads, H0+H1: attntopo ``analyze`` vs the naive
                 baseline (benchmarks/baseline.py) at n = 32, 128, 256, 512 tokens;
              2. the same ``analyze`` calls split into stages, against the limit
                 (forward pass + giotto-ph's own time on the same matrices).
  distances   3. distance matrices alone: attntopo vs scipy pdist vs the double loop.
  throughput  4. 100 texts of 128 tokens: one list vs one at a time; peak memory.
  causal      5. the causal model (SmolLM2, 270 heads) at n = 128.
  kernel      6. the Jensen–Shannon C kernel alone, one thread: pair-keys per second against
                 its own log rate (a causal head at n = 768, a bidirectional one at 512, the
                 response rows of a RAG-shaped pair at 1,024).
  short       9. issue 36's short-text goal: section 1's analyze at n = 128 against the naive
                 baseline on all heads, three rounds (each ratio within its round).
  (7. is benchmarks/llm_bench.py's last report, docs/benchmarks_llm.md, included as it stands;
  ``make bench`` runs it first.)

The report (markdown) goes to stdout and, with ``--out``, atomically to a file; progress
goes to stderr.  Timings are medians over ``--repeats`` runs (fewer at large n, see the
tables); large baselines are timed on a subset of heads and scaled, and say so.
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

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _report import SECTION_ORDER  # noqa: E402

FULL = {
    "sizes": [32, 128, 256, 512],
    "repeats": 5,
    "baseline_repeats": 3,  # at n <= 32; larger n: 1 run (its 72-head sum already averages)
    # the baseline at n >= 256 is timed on a few evenly spread heads and scaled to 72
    # (per head on real MiniLM attention: ~5 s at n=256, ~40 s and 1.6 GB of gudhi at n=512)
    "baseline_heads": {"256": 8, "512": 4},
    "engine_heads": {},  # the limit's engine time: all 72 matrices at every n
    "dist_sizes": [128, 512],
    "pdist_heads": {"512": 12},
    "dist_loop": {"128": {"heads": 4}, "512": {"heads": 1, "rows": 64}},
    "throughput": {"n_tokens": 128, "n_texts": 100, "single": 20},
    "causal": {"n_tokens": 128, "engine_heads": None, "baseline_heads": 4},
    "kernel_repeats": 5,
    "short": {"n_tokens": 128, "rounds": 3},
}

QUICK = {
    "sizes": [32],
    "repeats": 1,
    "baseline_repeats": 1,
    "baseline_heads": {"32": 12},
    "engine_heads": {},
    "dist_sizes": [32],
    "pdist_heads": {},
    "dist_loop": {"32": {"heads": 4}},
    "throughput": {"n_tokens": 32, "n_texts": 4, "single": 2},
    "causal": {"n_tokens": 32, "engine_heads": None, "baseline_heads": None},
    "kernel_repeats": 3,
    "kernel_cases": [
        ["causal head", 128, True, None],
        ["bidirectional head", 64, False, None],
        ["causal, response rows of a RAG pair (r = n/8)", 128, True, 16],
    ],
    "short": {"n_tokens": 32, "rounds": 1},
}


# --------------------------------------------------------------------- sections
def run_group(names: list[str], cfg: dict, timeout: float | None) -> dict:
    """Run sections in one fresh interpreter; returns {name: result dict (or an error)}."""
    with tempfile.TemporaryDirectory(prefix="attntopo-bench-") as tmp:
        cfg_path = Path(tmp) / "config.json"
        out_path = Path(tmp) / "result.json"
        cfg_path.write_text(json.dumps(cfg))
        env = dict(os.environ)
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        env.setdefault("MPLBACKEND", "Agg")
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            ",".join(names),
            "--config",
            str(cfg_path),
            "--result",
            str(out_path),
        ]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, stdout=sys.stderr, env=env, timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        wall = time.perf_counter() - t0
        res = json.loads(out_path.read_text()) if out_path.is_file() else {}
        for name in names:
            if name not in res:
                res[name] = {
                    "error": f"section process failed (exit {rc}); see the log on stderr",
                    "wall_s": wall,
                }
        return res


def worker(names: str, config: Path, result: Path) -> int:
    """Inside the fresh process: run the sections, save {name: result} as JSON."""
    import traceback

    import _common
    import _sections

    cfg = json.loads(config.read_text())
    out = {}
    for name in names.split(","):
        t0 = time.perf_counter()
        try:
            res = _sections.SECTIONS[name](cfg)
            res["versions"] = _common.versions()
        except Exception as exc:  # report it, go on with the other sections
            traceback.print_exc()
            res = {"error": f"section failed: {type(exc).__name__}: {exc}"}
        res["wall_s"] = time.perf_counter() - t0
        res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        out[name] = res
        tmp = result.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, default=float))
        os.replace(tmp, result)
    return 0


# ------------------------------------------------------------------------ main
def build_config(args) -> dict:
    import copy

    cfg = copy.deepcopy(QUICK if args.quick else FULL)
    if args.repeats is not None:
        cfg["repeats"] = max(1, args.repeats)
    if args.sizes:
        sizes = sorted({int(x) for x in args.sizes.split(",") if x.strip()})
        if any(n < 4 or n > 512 for n in sizes):
            raise SystemExit("--sizes: token counts between 4 and 512 (MiniLM's context)")
        cfg["sizes"] = sizes
        if not args.quick:
            cfg["dist_sizes"] = [n for n in sizes if n in (128, 512)] or [max(sizes)]
    cfg["one_process"] = bool(args.quick or args.one_process)
    if args.texts is not None:
        cfg["throughput"]["n_texts"] = max(1, args.texts)
        cfg["throughput"]["single"] = min(cfg["throughput"]["single"], cfg["throughput"]["n_texts"])
    return cfg


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=Path, help="write the markdown report there (atomically)")
    p.add_argument("--quick", action="store_true", help="tiny CI smoke version (< 1 min)")
    p.add_argument(
        "--repeats", type=int, help="runs per measurement up to n=128 (default 5; quick 1)"
    )
    p.add_argument(
        "--sizes", help="token counts of sections 1-2, comma-separated (default 32,128,256,512)"
    )
    p.add_argument(
        "--sections", default=",".join(SECTION_ORDER), help=f"subset of {','.join(SECTION_ORDER)}"
    )
    p.add_argument(
        "--one-process",
        action="store_true",
        help="all sections in one process (default with --quick; else one each)",
    )
    p.add_argument("--texts", type=int, help="number of texts in section 4 (default 100)")
    p.add_argument("--json", type=Path, help="also save the raw results as JSON")
    p.add_argument("--note", help="a line shown at the top of the report (e.g. 'preliminary')")
    p.add_argument(
        "--merge",
        type=Path,
        metavar="JSON",
        help="keep the sections not run now from a --json file of an earlier run "
        "(each says when it was measured)",
    )
    p.add_argument(
        "--render",
        type=Path,
        metavar="JSON",
        help="measure nothing: render the report from a --json file of an earlier run",
    )
    p.add_argument("--timeout", type=float, default=None, help="seconds per section (default none)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.config, args.result)

    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    bad = [s for s in sections if s not in SECTION_ORDER]
    if bad:
        p.error(f"unknown section(s) {bad}; choose from {', '.join(SECTION_ORDER)}")
    cfg = build_config(args)
    import _common

    results = {}
    t0 = time.perf_counter()
    todo = [name for name in SECTION_ORDER if name in sections]
    if args.render:
        saved = json.loads(args.render.read_text())
        cfg, results = saved["config"], saved["results"]
        argv = saved.get("argv", argv)
        todo = []
    # one fresh process per section (clean cold starts and memory peaks); --quick: one for all
    groups = [todo] if cfg["one_process"] and todo else [[name] for name in todo]
    for group in groups:
        _common.log(f"section(s) {', '.join(group)} ...")
        results.update(run_group(group, cfg, args.timeout))
        for name in group:
            _common.log(
                f"section {name}: {results[name]['wall_s']:.1f} s"
                + (f" — {results[name]['error']}" if "error" in results[name] else "")
            )
    if todo:
        _common.log(f"all sections in {time.perf_counter() - t0:.1f} s")
    if args.merge:
        saved = json.loads(args.merge.read_text())
        for name, r in saved["results"].items():
            if name not in results:
                results[name] = {**r, "merged": True}
    import _report

    report = _report.render(results, argv, cfg, args.note)
    if args.json:
        args.json.write_text(
            json.dumps({"config": cfg, "argv": argv, "results": results}, indent=1, default=float)
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{args.out.name}.", dir=args.out.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(report)
        os.chmod(tmp, 0o644)
        os.replace(tmp, args.out)
        _common.log(f"wrote {args.out}")
    sys.stdout.write(report)
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
