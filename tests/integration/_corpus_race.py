"""Two ``attntopo corpus`` runs racing on one store, many times: does any store come out damaged?

Run by ``test_corpus_safety.py`` (a few trials) and by hand (the issue's 20 trials each)::

    PYTHONPATH=src python tests/integration/_corpus_race.py --trials 20 --work /tmp/race

Scenarios (each trial its own store):

``start``
    two runs of the same command released at the same instant on a store that does not
    exist yet;
``new-store``
    a run writing its parts, and ``--new-store`` on the same store once its first part is
    there;
``readers``
    a finished store of one input, two reader processes, and ``--new-store`` with another
    input (issue 33): one reader opened the store before and reads it in a loop (counts,
    rows, SQL, ``verify``, ``refresh``), the other opens it afresh each time as ``attntopo
    query`` does (and runs that command).  The reader that opened the old store must get
    the old store's rows whole or stop with :class:`~attntopo.errors.StoreReplacedError`,
    never the new store's rows; a fresh reader gets either store, whole or being written,
    or one line saying what happened and what to do (never "corrupt part file", "not a part
    of this store", an unexpected error).

Every run is a real process running the command line (:func:`attntopo.cli.main`), forked
from this one after it imported torch and loaded MiniLM with one torch thread and no forward
pass but one small warm-up run with one thread (forking spares each run ~9 s of imports, model
loading and first calls, so 20 trials cost seconds, not minutes; the runs share no state
with each other but the store).

A store is *damaged* unless it opens, holds every text of the input exactly once and its
counts agree (``StoreReader.counts()``, SQL ``count(*)`` and the part rows).  Prints one JSON
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
        rows = store.to_arrow(columns=["id", "row"])
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


def _other_texts() -> list[str]:
    """The input of the ``--new-store`` run of ``readers``: other texts (fewer: its counts
    differ too), other ids."""
    return [f"{t} again and again" for t in reversed(_texts()[:17])]


#: What a reader may say while ``--new-store`` replaces the store (the start of each line).
READER_LINES = (
    "StoreReplacedError: STORE 'STORE' was ",  # a reader that opened the old store
    "InvalidInputError: STORE 'STORE' holds parts but no manifest.json: another run may be ",
    "InvalidInputError: 'STORE' is not a corpus store (no manifest.json), or not yet: a run ",
    "RuntimeError: exit 2: error: STORE 'STORE' was ",  # attntopo query: the same lines
    "RuntimeError: exit 2: error: STORE 'STORE' holds parts but no manifest.json",
    "RuntimeError: exit 2: error: 'STORE' is not a corpus store (no manifest.json), or not yet",
)


def _outcome(fn, old: set, new: set, out: Path) -> str:
    """``old`` / ``new`` (the ids read are those of one store; ``new`` may be partial while
    the run writes), ``mixed: …``, or the error's type and first line (the store's path
    written STORE)."""
    try:
        ids = fn()
    except Exception as e:  # noqa: BLE001 - recorded, judged by the caller
        line = str(e).splitlines()[0] if str(e) else ""
        return f"{type(e).__name__}: {line}".replace(str(out), "STORE")
    got = set(ids)
    if len(ids) == len(got) and got == old:
        return "old"
    if len(ids) == len(got) and got <= new:
        return "new"
    return f"mixed: {len(ids)} ids, {len(got & old)} old, {len(got & new)} new"


def _reader(out: Path, log: Path, stop: Path, old: set, new: set, held: bool) -> None:
    """A reader process's loop (``readers``): one JSON line per read, until ``stop`` exists
    and three more rounds are done (the store replaced for good by then)."""
    import contextlib
    import io

    from attntopo.cli import main as cli_main
    from attntopo.corpus import open_store

    opened = open_store(out) if held else None
    after = 0
    with open(log, "w") as f:
        while after < 3:
            after += stop.exists()
            if held:
                reads = {
                    "counts": lambda: (
                        sorted(old)
                        if opened.counts()["done"] == len(old)
                        else [f"done={opened.counts()['done']}"]
                    ),
                    "to_arrow": lambda: opened.to_arrow(columns=["id"])["id"].to_pylist(),
                    "sql": lambda: opened.sql("SELECT id FROM corpus")["id"].tolist(),
                    "verify": lambda: (opened.verify(), opened.to_pandas()["id"].tolist())[1],
                    "refresh": lambda: opened.refresh().to_arrow(columns=["id"])["id"].to_pylist(),
                }
            else:

                def query() -> list[str]:
                    err = io.StringIO()
                    o = io.StringIO()
                    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(err):
                        code = cli_main(["query", str(out), "SELECT id FROM corpus", "--csv"])
                    if code:
                        line = err.getvalue().strip().splitlines()[-1]
                        raise RuntimeError(f"exit {code}: {line}")
                    return o.getvalue().splitlines()[1:]

                reads = {
                    "open_store": lambda: (
                        open_store(out).to_arrow(columns=["id"])["id"].to_pylist()
                    ),
                    "query": query,
                }
            f.writelines(
                json.dumps([name, _outcome(fn, old, new, out)]) + "\n" for name, fn in reads.items()
            )
            f.flush()
            time.sleep(0.01)


def readers_trial(work: Path, src: Path, other: Path, k: int) -> dict:
    """One trial of ``readers``: what every read saw (``reads``: name → outcomes, in order)."""
    out = work / f"readers-{k}"
    shutil.rmtree(out, ignore_errors=True)
    first = Run(["corpus", str(src), "--out", str(out), *ARGS], work / f"readers-{k}.0.log")
    codes = [first.wait()]
    from attntopo.corpus import open_store

    old = set(open_store(out).to_arrow(columns=["id"])["id"].to_pylist())
    import hashlib

    new = {
        f"{n}-{hashlib.sha256(t.encode()).hexdigest()[:12]}" for n, t in enumerate(_other_texts())
    }
    stop = work / f"readers-{k}.stop"
    stop.unlink(missing_ok=True)
    logs = {
        held: work / f"readers-{k}.{'held' if held else 'fresh'}.jsonl" for held in (True, False)
    }
    pids = []
    for held in (True, False):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _reader(out, logs[held], stop, old, new, held)
            except BaseException as e:  # noqa: BLE001 - reported through the log
                with open(logs[held], "a") as f:
                    f.write(json.dumps(["reader", f"crashed: {type(e).__name__}: {e}"]) + "\n")
                code = 99
            finally:
                os._exit(code)
        pids.append(pid)
    # both readers have read the old store once (each log has its first round) before the
    # --new-store run starts: a fixed wait had let a reader on a loaded machine open the store
    # only while the run replaced it (open_store then said "replaced", outside any read)
    deadline = time.monotonic() + 120
    while not all(p.exists() and p.read_text().count("\n") >= 1 for p in logs.values()):
        if time.monotonic() > deadline:
            break  # a reader that hangs is reported by what its log lacks (one that crashed
            # wrote its line)
        time.sleep(0.02)
    run = Run(
        ["corpus", str(other), "--out", str(out), "--new-store", *ARGS], work / f"readers-{k}.1.log"
    )
    codes.append(run.wait())
    stop.touch()
    for pid in pids:
        os.waitpid(pid, 0)
    reads: dict[str, list[str]] = {}
    for held in (True, False):
        for line in logs[held].read_text().splitlines():
            name, outcome = json.loads(line)
            reads.setdefault(name, []).append(outcome)
    return {"codes": codes, "output": [first.output(), run.output()], "reads": reads}


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
    return {
        "codes": codes,
        "output": [run.output() for run in runs],
        "damage": damage(out, N_TEXTS),
    }


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
    corpus.run(
        _texts()[:2], out=a.work / "warm-up", layers=[0], heads=[0], n_jobs=1, progress=False
    )
    report: dict = {"trials": a.trials}
    other = a.work / "other.txt"
    other.write_text("\n".join(_other_texts()) + "\n")
    for scenario in a.scenarios.split(","):
        t0 = time.monotonic()
        if scenario == "readers":
            results = [readers_trial(a.work, src, other, k) for k in range(a.trials)]
            reads: dict[str, dict[str, int]] = {}
            for r in results:
                for name, outcomes in r["reads"].items():
                    for o in outcomes:
                        reads.setdefault(name, {})
                        reads[name][o] = reads[name].get(o, 0) + 1
            report[scenario] = {
                "codes": [r["codes"] for r in results],
                "reads": reads,
                "last": [{n: o[-1] for n, o in r["reads"].items()} for r in results],
                "seconds": round(time.monotonic() - t0, 1),
            }
            continue
        results = [trial(scenario, a.work, src, k) for k in range(a.trials)]
        report[scenario] = {
            "codes": [r["codes"] for r in results],
            "damaged": [(k, r["damage"]) for k, r in enumerate(results) if r["damage"]],
            "refusals": sorted(
                {
                    line
                    for r in results
                    for c, o in zip(r["codes"], r["output"])
                    if c != 0
                    for line in o.splitlines()
                }
            ),
            "seconds": round(time.monotonic() - t0, 1),
        }
    return report


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
