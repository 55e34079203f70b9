#!/usr/bin/env python
"""The Ray engine of attntopo.corpus against the local engine on the same texts, in one run
(issue 17, "Speed targets": Ray within 1.5x of the local engine's throughput; Ray's overhead
measured and reported; per-actor throughput to size a cluster).

    # as in docs/corpus.md
    python benchmarks/corpus_ray_bench.py --scaling --out docs/corpus_ray_bench.json
    # a smoke run
    python benchmarks/corpus_ray_bench.py --count 40 --tokens 32 --rounds 1

Also called by ``benchmarks/corpus_bench.py`` (:func:`measure_ray`) right after its local run,
on the same texts.

Per length (``--tokens``; texts of about that many tokens, windows of ``benchmarks/corpus.txt``,
MiniLM, all 72 heads, the ``js`` set, batch size 32), ``--rounds`` times in turn:

* ``local``: ``corpus.run(engine="local")`` (model loaded; persistence on all CPUs);
* ``ray``: the Ray engine end to end as ``--engine ray`` runs it: a local Ray started with all
  CPUs, one actor per CPU (each loads the model), the parts written, Ray shut down;
  ``ratio_ray_to_local`` = its wall time / the local engine's (goal ≤ 1.5);
  ``ratio_pipeline_to_local`` leaves out starting and stopping Ray (a cluster already up).
  The local engine is measured warm (model loaded, pool started) and Ray cold, which is
  Ray's worst case;
* ``cli_*`` (:func:`measure_cli`, from ``corpus_bench.py`` at ~32 tokens): both engines as a
  user runs them, ``attntopo corpus FILE --engine local|ray``, each a fresh process (imports,
  model load, the pool or Ray included).

Ray's overhead, from :class:`attntopo.corpus._ray.RayRunStats`: ``connect_s`` (``ray.init`` of a
local Ray), ``actor_init_s`` (an actor's process start, imports and model load, mean),
``first_s`` (dataset start to the first part), ``gap_ms`` (an actor's idle time between two
batches: Ray's scheduling cost per batch), ``delivery_ms`` (an actor's result to the driver),
``shutdown_s``, ``write_s`` (the driver writing parts), ``actor_peak_rss_mib``.

Sizing (``--scaling``): on one Ray started here, the pipeline on 2 batches per CPU with 1,
2, … actors (up to the CPUs): steady texts/s (first part to last), texts per busy second of one
actor, and the driver's bound (texts / its writing time) — a cluster of N actors runs at about N ×
the per-actor rate until it reaches that bound.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import log, machine_info, versions  # noqa: E402
from corpus_bench import BATCH, SETS, _texts, run_corpus  # noqa: E402 - the local engine's run


def local_run(model, texts: list[str]) -> float:
    """Seconds of ``corpus.run(engine="local")`` into a fresh store (corpus_bench's run)."""
    seconds, _, counts = run_corpus(model, texts)
    assert counts["ok"] == len(texts), counts
    return seconds


def ray_run(model, texts: list[str], *, n_jobs: int | None = None, address: str | None = None):
    """``(seconds, RayRunStats)`` of the Ray engine into a fresh store, as ``corpus.run``
    does it (prepare, run_ray, finish), timed end to end."""
    from attntopo.corpus import finish, prepare
    from attntopo.corpus._ray import run_ray

    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        prep = prepare(
            texts, Path(d) / "store", model=model, sets=SETS, batch_size=BATCH, drop_special=True
        )  # as corpus_bench's local run
        try:
            stats = run_ray(prep, ray_address=address, n_jobs=n_jobs)
        finally:
            store = finish(prep)
        seconds = time.perf_counter() - t0
        assert store.counts()["ok"] == len(texts)
    return seconds, stats


def _overhead(stats) -> dict:
    inits = [a.init_s for a in stats.actors.values()]
    return {
        "n_actors": stats.n_actors,
        "connect_s": stats.connect_s,
        "input_s": stats.input_s,
        "actor_init_s": statistics.mean(inits) if inits else float("nan"),
        "first_s": stats.first_s,
        "pipeline_s": stats.pipeline_s,
        "shutdown_s": stats.shutdown_s,
        "gap_ms": 1000 * stats.gap_s,
        "delivery_ms": 1000 * stats.delivery_s,
        "write_s": stats.write_s,
        "busy_s": stats.busy_s,
        "per_actor_texts_per_s": stats.texts_per_actor_s,
        "steady_texts_per_s": stats.steady_texts_per_s,
        "driver_bound_texts_per_s": stats.to_dict()["driver_bound_texts_per_s"],
        "write_ms_per_batch": 1000 * stats.write_s / stats.batches
        if stats.batches
        else float("nan"),
        "actor_peak_rss_mib": max((a.peak_rss for a in stats.actors.values()), default=0) / 2**20,
    }


def measure_ray(model, texts: list[str], local_seconds: float) -> dict:
    """The Ray engine end to end on ``texts`` next to a local run of ``local_seconds``."""
    seconds, stats = ray_run(model, texts)
    n = len(texts)
    out = {
        "ray_s": seconds,
        "ray_texts_per_s": n / seconds,
        "local_s": local_seconds,
        "local_texts_per_s": n / local_seconds,
        "ratio_ray_to_local": seconds / local_seconds,
    }
    out.update(_overhead(stats))
    pipeline = seconds - stats.connect_s - stats.shutdown_s
    out["ratio_pipeline_to_local"] = pipeline / local_seconds
    return out


def cli_run(path: Path, engine: str) -> float:
    """Seconds of ``attntopo corpus PATH --engine ENGINE`` in a fresh process (imports, model
    load, the persistence pool or Ray: everything a user waits for)."""
    import os
    import subprocess

    with tempfile.TemporaryDirectory() as d:
        cmd = [
            sys.executable,
            "-m",
            "attntopo",
            "corpus",
            str(path),
            "--out",
            str(Path(d) / "store"),
            "--sets",
            ",".join(SETS),
            "--batch-size",
            str(BATCH),
            "--engine",
            engine,
            "--drop-special",
            "--quiet",
        ]
        t0 = time.perf_counter()
        subprocess.run(
            cmd, check=True, capture_output=True, env=dict(os.environ, ATTNTOPO_PROGRESS="0")
        )
        return time.perf_counter() - t0


def measure_cli(texts: list[str], rounds: int = 1) -> dict:
    """The two engines as a user runs them: ``attntopo corpus`` on a file of ``texts`` (one per
    line), each run a fresh process, local and Ray in turn; medians of ``rounds``."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "texts.txt"
        path.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
        local, ray = [], []
        for _ in range(rounds):
            local.append(cli_run(path, "local"))
            ray.append(cli_run(path, "ray"))
    out = {
        "cli_local_s": statistics.median(local),
        "cli_ray_s": statistics.median(ray),
        "cli_local_runs": local,
        "cli_ray_runs": ray,
    }
    out["cli_ratio_ray_to_local"] = out["cli_ray_s"] / out["cli_local_s"]
    log(f"command line: {json.dumps(out)}")
    return out


def scaling(model, texts: list[str], cpus: int) -> list[dict]:
    """On one Ray started here: the pipeline with 1 … ``cpus`` actors (no start-up in the
    numbers but the actors' model loads)."""
    import ray

    ray.init(
        address="local",
        num_cpus=cpus,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    try:
        out = []
        for k in range(1, cpus + 1):
            seconds, stats = ray_run(model, texts, n_jobs=k)
            r = {"actors": k, "seconds": seconds, "texts_per_s": len(texts) / seconds}
            r.update(_overhead(stats))
            out.append(r)
            log(f"ray scaling: {json.dumps(r)}")
        return out
    finally:
        ray.shutdown()


def main() -> None:
    import os

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--count", default="256,96", help="texts per length (one number, or one per --tokens)"
    )
    ap.add_argument("--tokens", default="32,128")
    ap.add_argument("--rounds", type=int, default=2, help="local and Ray runs in turn")
    ap.add_argument("--scaling", action="store_true", help="also 1 … CPUs actors on one Ray")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    os.environ.setdefault("ATTNTOPO_PROGRESS", "0")
    import attntopo as at

    model = at.load_model("minilm")
    cpus = len(os.sched_getaffinity(0))
    doc = {
        "machine": machine_info(),
        "versions": versions(),
        "sets": list(SETS),
        "batch_size": BATCH,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        "load_before": os.getloadavg(),
        "lengths": [],
    }
    lengths = [int(x) for x in a.tokens.split(",") if x]
    counts = [int(x) for x in str(a.count).split(",") if x]
    counts = counts * len(lengths) if len(counts) == 1 else counts
    for n_tokens, count in zip(lengths, counts):
        texts = _texts(model, n_tokens, count)
        local_run(model, texts[:BATCH])  # warm: imports, the persistence pool, the model hash
        rounds = []
        for i in range(a.rounds):
            local = local_run(model, texts)
            log(f"{n_tokens} tokens, round {i}: local {len(texts) / local:.2f} texts/s")
            r = measure_ray(model, texts, local)
            log(f"{n_tokens} tokens, round {i}: ray {json.dumps(r)}")
            rounds.append(r)
        entry = {
            "n_tokens": n_tokens,
            "texts": len(texts),
            "mean_tokens": statistics.mean(len(model.tokenize(t).ids) for t in texts),
            "rounds": rounds,
            "median": {
                k: statistics.median(r[k] for r in rounds)
                for k in rounds[0]
                if isinstance(rounds[0][k], (int, float))
            },
        }
        if a.scaling:
            entry["scaling"] = scaling(model, texts[: max(2 * BATCH * cpus, BATCH)], cpus)
        doc["lengths"].append(entry)
    doc["load_after"] = os.getloadavg()
    text = json.dumps(doc, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
