#!/usr/bin/env python
"""Persistence engines on small Jensen–Shannon matrices, alone and with every core busy: the
measurement behind the ``"auto"`` engine (``attntopo.topology.engines``, "Small matrices").

    python benchmarks/engines_bench.py --out docs/engines_bench.json
    python benchmarks/engines_bench.py --sizes 16,32 --stacks 2     # a smoke run

Per matrix size n (``--sizes``): stacks of 72 JS matrices of random Dirichlet rows (a text's 72
heads), H0 and H1, through ``engines.compute_many`` (ranks, engine, mapping back: what
``persistence_batch``, ``analyze``, the features and the corpus engines run), one thread, for
each engine (``giotto``: giotto-ph's core; ``ripser``: ripser.py's core; ``auto``), ms per
matrix, median of ``--rounds``:

* ``alone``: one process;
* ``busy``: the same in ``--procs`` processes at once (default: one per CPU), each timing its own
  calls, as when every core of a corpus run or a Ray cluster is busy; the median over processes.

Also per engine the voluntary context switches per call (``getrusage``), which show giotto-ph's
thread starts.  Every engine's diagrams are compared with giotto-ph's, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import log, machine_info, versions  # noqa: E402

ENGINES = ("giotto", "ripser", "auto")


def _stack(n: int, seed: int):
    import numpy as np

    from attntopo.distances import token_distances
    from attntopo.topology import engines

    P = np.random.default_rng(seed).dirichlet(np.full(n, 0.3), size=(72, n))
    return engines.condense(token_distances(P))


def child(sizes: list[int], stacks: int, rounds: int) -> dict:
    """This process's timings: ``{engine: {n: [ms per matrix, vcs per call]}}``."""
    import numpy as np

    from attntopo.topology import engines

    out: dict = {e: {} for e in ENGINES if e in engines.available_engines()}
    for n in sizes:
        Cs = [_stack(n, seed) for seed in range(stacks)]
        ref = [engines.compute_many(C, n, 1, np.inf, "giotto") for C in Cs]
        for e in out:
            got = [engines.compute_many(C, n, 1, np.inf, e) for C in Cs]  # also the warm-up
            same = all(
                np.array_equal(a, b)
                for g, r in zip(got, ref)
                for dg, dr in zip(g, r)
                for a, b in zip(dg, dr)
            )
            if not same:
                raise AssertionError(f"{e} differs from giotto at n={n}")
            times, switches = [], []
            for _ in range(rounds):
                v0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
                t0 = time.perf_counter()
                for C in Cs:
                    engines.compute_many(C, n, 1, np.inf, e)
                times.append((time.perf_counter() - t0) / (72 * stacks) * 1e3)
                switches.append(
                    (resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - v0) / (72 * stacks)
                )
            out[e][n] = [statistics.median(times), statistics.median(switches)]
    return out


def _run_children(k: int, args: list[str]) -> list[dict]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", *args], stdout=subprocess.PIPE, text=True
        )
        for _ in range(k)
    ]
    outs = []
    for p in procs:
        stdout, _ = p.communicate()
        if p.returncode:
            raise RuntimeError(f"a benchmark process failed ({p.returncode})")
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,24,32,40,48,64,96,128")
    ap.add_argument("--stacks", type=int, default=3, help="stacks of 72 matrices per size")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--procs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",") if x]
    if a.child:
        print(json.dumps(child(sizes, a.stacks, a.rounds)))
        return
    args = ["--sizes", a.sizes, "--stacks", str(a.stacks), "--rounds", str(a.rounds)]
    doc = {
        "machine": machine_info(),
        "versions": versions(),
        "args": vars(a) | {"out": str(a.out)},
        "load_before": os.getloadavg(),
    }
    alone = _run_children(1, args)[0]
    log(f"alone: {json.dumps(alone)}")
    busy = _run_children(a.procs, args)
    log(f"busy ({a.procs} processes): {json.dumps(busy)}")
    table = []
    for n in sizes:
        row = {"n": n}
        for e in alone:
            row[f"{e}_alone_ms"] = alone[e][str(n)][0]
            row[f"{e}_busy_ms"] = statistics.median(b[e][str(n)][0] for b in busy)
            row[f"{e}_switches_per_call"] = alone[e][str(n)][1]
        table.append(row)
    doc.update(procs=a.procs, table=table, load_after=os.getloadavg())
    text = json.dumps(doc, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    print(f"{'n':>5} " + " ".join(f"{e + ' alone/busy':>20}" for e in alone), file=sys.stderr)
    for row in table:
        cells = " ".join(f"{row[f'{e}_alone_ms']:9.3f} /{row[f'{e}_busy_ms']:8.3f}" for e in alone)
        print(f"{row['n']:>5} {cells}", file=sys.stderr)


if __name__ == "__main__":
    main()
