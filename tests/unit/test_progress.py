"""Progress reporting (attntopo._progress) and the library functions that report into it:
persistence_batch (serially and through the worker pool) and token_distances.  No model."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console

from attntopo._progress import NO_PROGRESS, Reporter, check_progress, make_reporter, progress_wanted
from attntopo.distances import token_distances
from attntopo.errors import InvalidInputError
from attntopo.topology import persistence, persistence_batch
from attntopo.topology._pool import pool_size


class Recorder:
    """A progress callback that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def __call__(self, done: int, total: int, stage: str) -> None:
        assert isinstance(done, int) and isinstance(total, int) and isinstance(stage, str)
        self.calls.append((done, total, stage))

    def check_complete(self, total: int | None = None) -> None:
        """Done and total never decrease, done never exceeds total, and the run ends at total."""
        assert self.calls, "the callback was never called"
        dones = [c[0] for c in self.calls]
        totals = [c[1] for c in self.calls]
        assert dones == sorted(dones), dones
        assert totals == sorted(totals), totals
        assert all(d <= t for d, t in zip(dones, totals)), self.calls
        assert dones[-1] == totals[-1] > 0, self.calls[-1]
        if total is not None:
            assert totals[-1] == total

    @property
    def stages(self) -> list[str]:
        return list(dict.fromkeys(c[2] for c in self.calls if c[2]))


def _points_matrix(rng: np.random.Generator, n: int) -> np.ndarray:
    X = rng.random((n, 4))
    return np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))


def _rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    w = rng.random(shape) ** 4
    return w / w.sum(-1, keepdims=True)


# ----------------------------------------------------------------- the reporter
def test_off_is_the_shared_do_nothing_reporter():
    r = make_reporter(False, total=10, description="x")
    assert r is NO_PROGRESS and not r.enabled
    with r:
        r.add_total(5)
        r.stage("work")
        r.advance(3)
    assert (r.done, r.total, r.stage_name) == (0, 0, "")


def test_callback_gets_counts_and_stages_in_order():
    rec = Recorder()
    with make_reporter(rec, total=2, description="job") as r:
        r.stage("first")
        r.advance()
        r.add_total(3)
        r.stage("second")
        r.advance(4)
    assert rec.calls == [
        (0, 2, "first"),
        (1, 2, "first"),
        (1, 5, "first"),
        (1, 5, "second"),
        (5, 5, "second"),
    ]
    assert r.label == "job · second"


def test_an_open_reporter_is_passed_down_unchanged_and_closed_by_its_owner():
    rec = Recorder()
    outer = make_reporter(rec, total=4, description="outer")
    with outer:
        inner = make_reporter(outer, total=99, description="ignored")
        assert inner is outer and inner.total == 4  # the owner plans; total is ignored
        with inner:
            inner.advance(2)
        inner.advance(2)  # the nested block did not close it
    assert rec.calls[-1] == (4, 4, "")
    outer.advance()  # closed: reports nothing more
    assert rec.calls[-1] == (4, 4, "")


def test_a_callback_exception_stops_the_work():
    def stop(done, total, stage):
        if done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        persistence_batch([np.zeros((1, 1))] * 5, n_jobs=1, progress=stop)


@pytest.mark.parametrize("bad", [1, 0, "yes", 2.5, [True]])
def test_progress_values_are_checked(bad):
    with pytest.raises(InvalidInputError, match="progress must be None"):
        check_progress(bad)
    with pytest.raises(InvalidInputError, match="callback\\(done, total, stage\\)"):
        make_reporter(bad)


def test_progress_wanted_for_explicit_values():
    assert progress_wanted(True) and not progress_wanted(False)
    assert progress_wanted(print)


_PROBE = (
    "from attntopo._progress import make_reporter\n"
    "with make_reporter(None) as r:\n"
    "    on = r.enabled\n"
    "print(on)"
)


def _probe(stderr_tty: bool, env_value: str | None = None) -> str:
    """``make_reporter(None).enabled`` in a fresh interpreter whose stderr is a pipe or a pty."""
    env = {k: v for k, v in os.environ.items() if k != "ATTNTOPO_PROGRESS"}
    if env_value is not None:
        env["ATTNTOPO_PROGRESS"] = env_value
    if not stderr_tty:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True
        )
        return out.stdout.strip()
    master, slave = pty.openpty()
    try:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE],
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            env=env,
            check=True,
        )
    finally:
        os.close(slave)
        os.close(master)
    return out.stdout.strip()


def test_automatic_progress_is_off_without_a_terminal_and_on_with_one():
    assert _probe(stderr_tty=False) == "False"
    assert _probe(stderr_tty=True) == "True"
    assert _probe(stderr_tty=True, env_value="0") == "False"
    assert _probe(stderr_tty=False, env_value="1") == "True"


def test_in_this_test_process_automatic_progress_is_off():
    # pytest captures stderr (no terminal): library calls with the default stay silent
    if sys.stderr.isatty():
        pytest.skip("run with -s on a terminal")
    assert make_reporter(None) is NO_PROGRESS


def test_the_bar_shows_stage_counts_and_closes():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120, color_system=None)
    with make_reporter(True, total=5, description="demo", console=console) as r:
        assert isinstance(r, Reporter) and r.enabled
        r.stage("crunching")
        r.advance(5)
    text = buf.getvalue()
    assert "demo · crunching" in text and "5/5" in text


def test_nothing_is_written_when_off(capfd):
    persistence_batch([_points_matrix(np.random.default_rng(0), 8)] * 3, progress=False)
    token_distances(_rows(np.random.default_rng(1), (2, 6, 6)), progress=False)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


# ------------------------------------------------------------- library functions
def test_persistence_batch_reports_stacks_serially():
    # serially, same-size matrices are computed as stacks of ~50 ms of estimated work: seven
    # small matrices are one report, fifteen of n=100 (~7 ms each) come in several
    rng = np.random.default_rng(2)
    mats = [_points_matrix(rng, 12) for _ in range(7)] + [
        _points_matrix(rng, 100) for _ in range(15)
    ]
    rec = Recorder()
    dgms = persistence_batch(mats, n_jobs=1, progress=rec)
    rec.check_complete(22)
    dones = [c[0] for c in rec.calls[1:]]
    assert dones[0] == 7 and len(dones) >= 3 and len(set(dones)) == len(dones)  # progress moves
    assert rec.stages == ["persistence"]
    assert all(d == persistence(m) for d, m in zip(dgms, mats))


def test_persistence_batch_reports_chunks_from_the_worker_pool():
    # estimated work above the pool's start-up bound (~0.4 s): the worker processes run it
    rng = np.random.default_rng(3)
    mats = [_points_matrix(rng, 150) for _ in range(24)]
    rec = Recorder()
    dgms = persistence_batch(mats, n_jobs=2, progress=rec)
    assert pool_size() == 2  # the batch ran in the worker processes
    rec.check_complete(24)
    assert len(rec.calls) > 2  # several chunks, not one jump at the end
    assert all(d == persistence(m) for d, m in zip(dgms, mats))


@pytest.mark.parametrize("metric", ["jensen_shannon", "hellinger", "total_variation"])
def test_token_distances_reports_every_matrix(metric):
    rng = np.random.default_rng(4)
    w = _rows(rng, (3, 4, 40, 40))
    rec = Recorder()
    D = token_distances(w, metric=metric, progress=rec, chunk_elements=1 << 16)
    rec.check_complete(12)
    assert len(rec.calls) > 2  # a small budget: several chunks
    np.testing.assert_array_equal(D, token_distances(w, metric=metric))
