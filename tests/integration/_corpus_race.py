"""Two ``attntopo corpus`` runs racing on one store, many times: does any store come out damaged?

Run by ``test_corpus_safety.py`` (a few trials) and by hand (the issue's 20 trials each)::

    PYTHONPATH=src python tests/integration/_corpus_race.py --trials 20 --work /tmp/race

Scenarios (each trial its own store):

``start``
    two runs of the same command released at the same instant on a store that does not
    exist yet;
``new-store``
    a run writing its parts, and ``--new-store`` on the same store once its first part is
    there.

Every run is a real process running the command line (:func:`attntopo.cli.main`), forked
from this one after it imported torch and loaded MiniLM with one torch thread and no forward
pass but one small warm-up run with one thread (forking spares each run ~9 s of imports, model
loading and first calls, so 20 trials cost seconds, not minutes; the runs share no state
with each other but the store).

A store is *damaged* unless it opens, holds every text of the input exactly once and its
counts agree (``Store.counts()``, SQL ``count(*)`` and the part rows).  Prints one JSON
object: per scenario the exit codes of each trial, the refusals' stderr and the damaged
trials with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

N_TEXTS, BATCH = 24, 2
ARGS = ["--layer", "0", "--head", "0", "--batch-size", str(BATCH), "--jobs", "1", "--quiet"]


def _texts() -> list[str]:
    words = "cat dog bird fish tree rock wind rain snow sun moon star sea hill".split()
    return [" ".join(words[(k + j) % len(words)] for j in range(4 + k % 5)) for k in range(N_TEXTS)]


class Run:
    """One forked ``attntopo`` command; with ``gate`` (a pipe's read and write ends) it waits
    for the parent to close the write end before it runs."""

    def __init__(self, args: list[str], log: Path, gate: tuple[int, int] | None = None) -> None:
        self.log = log
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            code = 99
            try:
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                if gate is not None:
                    os.close(gate[1])
                    os.read(gate[0], 1)  # EOF once the parent closes its write end: all released
                from attntopo.cli import main

                code = main(args)
            except BaseException as e:  # noqa: BLE001 - reported as exit 99 with the reason
                os.write(2, f"race child: {type(e).__name__}: {e}\n".encode())
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        self.code: int | None = None

    def wait(self, timeout: float = 300) -> int:
        deadline = time.monotonic() + timeout
        while self.code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
            elif time.monotonic() > deadline:
                os.kill(self.pid, 9)
            else:
                time.sleep(0.01)
        return self.code

    def output(self) -> str:
        return self.log.read_text(errors="replace").strip()


def damage(store_path: Path, n_texts: int) -> str | None:
    """None for a sound, complete store; else what is wrong, in one line."""
    from attntopo.corpus import open_store

    try:
        store = open_store(store_path)
        rows = store.to_arrow(["id", "row"])
        n_sql = int(store.sql("SELECT count(*) AS n FROM corpus")["n"][0])
        counts = store.counts()
    except Exception as e:  # noqa: BLE001 - any failure to read is damage
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    ids = rows["id"].to_pylist()
    if len(ids) != len(set(ids)):
        return f"duplicate ids ({len(ids)} rows, {len(set(ids))} ids)"
    if not (len(ids) == n_sql == counts["done"] == counts["total"] == n_texts):
        return f"counts disagree: {len(ids)} rows, SQL {n_sql}, counts {counts}, input {n_texts}"
    if rows["row"].to_pylist() != list(range(n_texts)):
        return "rows out of order or missing"
    return None


def trial(scenario: str, work: Path, src: Path, k: int) -> dict:
    out = work / f"{scenario}-{k}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = ["corpus", str(src), "--out", str(out), *ARGS]
    logs = [work / f"{scenario}-{k}.{n}.log" for n in (0, 1)]
    if scenario == "start":
        r, w = os.pipe()
        runs = [Run(cmd, logs[n], gate=(r, w)) for n in (0, 1)]
        os.close(r)
        time.sleep(0.05)  # both children are waiting on the gate
        os.close(w)
    else:
        runs = [Run(cmd, logs[0])]
        deadline = time.monotonic() + 120
        while runs[0].code is None and time.monotonic() < deadline:
            if any((out / "parts").glob("part-*.parquet")):
                break
            if os.waitpid(runs[0].pid, os.WNOHANG)[0]:
                break
            time.sleep(0.002)
        runs.append(Run([*cmd, "--new-store"], logs[1]))
    codes = [run.wait() for run in runs]
    # the --new-store run may have won after the first run ended: the store is then its own
    return {"codes": codes, "output": [run.output() for run in runs], "damage": damage(out, N_TEXTS)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--scenarios", default="start,new-store")
    a = ap.parse_args(argv)
    os.environ["ATTNTOPO_PROGRESS"] = "0"
    import torch

    torch.set_num_threads(1)  # no OpenMP threads in the parent: forking stays safe
    import attntopo as at
    import attntopo.cli  # noqa: F401 - imported once, here, for every child

    at.load_model("minilm")  # cached: every child's load_model("minilm") returns it
    a.work.mkdir(parents=True, exist_ok=True)
    src = a.work / "texts.txt"
    src.write_text("\n".join(_texts()) + "\n")
    # one small run here first: the lazy imports and first calls (~3 s) are then paid once,
    # and a forked run takes tenths of a second, as a long run's steady state does
    from attntopo import corpus

    shutil.rmtree(a.work / "warm-up", ignore_errors=True)
    corpus.run(_texts()[:2], out=a.work / "warm-up", layers=[0], heads=[0], n_jobs=1, progress=False)
    report: dict = {"trials": a.trials}
    for scenario in a.scenarios.split(","):
        t0 = time.monotonic()
        results = [trial(scenario, a.work, src, k) for k in range(a.trials)]
        report[scenario] = {
            "codes": [r["codes"] for r in results],
            "damaged": [(k, r["damage"]) for k, r in enumerate(results) if r["damage"]],
            "refusals": sorted({line for r in results for c, o in zip(r["codes"], r["output"])
                                if c != 0 for line in o.splitlines()}),
            "seconds": round(time.monotonic() - t0, 1),
        }
    return report


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
