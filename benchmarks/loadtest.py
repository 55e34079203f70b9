#!/usr/bin/env python
"""Load test of the explorer (``attntopo serve``): bounded, repeatable, about one minute.

    make loadtest     # .venv/bin/python benchmarks/loadtest.py

Starts ``attntopo serve`` (its defaults: MiniLM, ``--max-concurrent 2``, ``--timeout 60``) on
a free 127.0.0.1 port, waits for the model, then runs two phases of ``--seconds`` each
(default 25): 8 and then 32 concurrent clients (threads, one ``httpx.Client`` each) posting
short texts to ``POST /api/analyze`` with ``auto_head``.  Every text is new (a sentence and
a counter), so every answer is a model run and a persistence of all 72 heads, never a cache
hit.  A client that gets the documented 503 (busy) waits ``--backoff`` seconds and tries
again.  Throughout, one more thread asks ``GET /api/health`` every 0.2 s.

Reported per phase: analyses/s (200 answers), p50/p95/max latency of the analyses, the
number of 503 answers, the worst health-check latency; and the server's resident memory
(VmRSS of the server process, in MiB) after warm-up, its peak (sampled every 0.25 s) and at
the end.

Exit status: 0 when every answer was 200 or 503 and every health check answered within
``--health-limit`` seconds (1 s); 1 otherwise (another 5xx, a transport error, a slow or
failed health check); 2 when the server could not be started.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

SENTENCES = (
    "Attention heads see the same sentence differently",
    "Quantum information theory allows us to study attention",
    "The cat sat on the mat and looked at the dog",
    "Classical information theory studies entropy and communication",
    "A small model reads a short text about persistent homology",
    "Every token attends to the words that came before it",
    "The weather was cold but the tea was warm",
    "Topological data analysis finds loops in point clouds",
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    """Resident memory of a process (VmRSS), in MiB; nan once it is gone."""
    from attntopo._memory import status_kib

    kib = (status_kib("VmRSS", pid=pid) or {}).get("VmRSS")
    return float("nan") if kib is None else kib / 1024


@dataclass
class Phase:
    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)  # of the 200 answers, s
    busy: int = 0  # 503 answers
    failures: list[str] = field(default_factory=list)  # other statuses, transport errors
    health: list[float] = field(default_factory=list)  # health-check latencies, s
    health_failures: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def report(self) -> dict:
        lat = sorted(self.latencies)

        def q(p: float) -> float:
            return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

        return {
            "clients": self.clients,
            "seconds": round(self.elapsed, 1),
            "analyses": len(lat),
            "analyses_per_s": round(len(lat) / self.elapsed, 2) if self.elapsed else 0.0,
            "p50_s": round(statistics.median(lat), 3) if lat else float("nan"),
            "p95_s": round(q(0.95), 3),
            "max_s": round(lat[-1], 3) if lat else float("nan"),
            "busy_503": self.busy,
            "failures": len(self.failures),
            "health_checks": len(self.health),
            "health_worst_s": round(max(self.health), 3) if self.health else float("nan"),
            "health_failures": len(self.health_failures),
        }


def client_loop(
    base: str,
    phase: Phase,
    stop: threading.Event,
    lock: threading.Lock,
    counter: list[int],
    backoff: float,
    timeout: float,
) -> None:
    with httpx.Client(base_url=base, timeout=timeout) as c:
        while not stop.is_set():
            with lock:
                counter[0] += 1
                i = counter[0]
            text = f"{SENTENCES[i % len(SENTENCES)]} ({i})"
            t0 = time.perf_counter()
            try:
                r = c.post("/api/analyze", json={"text": text, "auto_head": True})
            except httpx.HTTPError as e:
                with lock:
                    phase.failures.append(f"{type(e).__name__}: {e}")
                time.sleep(backoff)
                continue
            dt = time.perf_counter() - t0
            with lock:
                if r.status_code == 200:
                    phase.latencies.append(dt)
                elif r.status_code == 503:
                    phase.busy += 1
                else:
                    phase.failures.append(f"{r.status_code}: {r.text[:200]}")
            if r.status_code == 503:
                time.sleep(backoff)


def health_loop(base: str, phase: Phase, stop: threading.Event, limit: float) -> None:
    with httpx.Client(base_url=base, timeout=max(5.0, 5 * limit)) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                r = c.get("/api/health")
                dt = time.perf_counter() - t0
                phase.health.append(dt)
                if r.status_code != 200:
                    phase.health_failures.append(f"status {r.status_code}")
            except httpx.HTTPError as e:
                phase.health.append(time.perf_counter() - t0)
                phase.health_failures.append(f"{type(e).__name__}: {e}")
            stop.wait(0.2)


def run_phase(
    base: str,
    clients: int,
    seconds: float,
    backoff: float,
    health_limit: float,
    pid: int,
    rss: list[float],
    counter: list[int],
) -> Phase:
    phase = Phase(clients, seconds)
    stop, lock = threading.Event(), threading.Lock()
    threads = [
        threading.Thread(
            target=client_loop, daemon=True, args=(base, phase, stop, lock, counter, backoff, 60.0)
        )
        for _ in range(clients)
    ]
    threads.append(
        threading.Thread(target=health_loop, args=(base, phase, stop, health_limit), daemon=True)
    )
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    while time.perf_counter() - t0 < seconds:
        rss.append(rss_mib(pid))
        time.sleep(0.25)
    stop.set()
    for t in threads:
        t.join(timeout=90)  # an analysis running at the stop finishes and is counted
    phase.elapsed = time.perf_counter() - t0
    rss.append(rss_mib(pid))
    return phase


def start_server(port: int, startup: float) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "attntopo", "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup
    with httpx.Client(base_url=base, timeout=5) as c:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"attntopo serve exited ({proc.returncode}): {proc.stderr.read()[-1500:]}"
                )
            try:
                if c.get("/api/health").status_code == 200:
                    # one analysis, so that the model is loaded before the clock starts
                    r = c.post("/api/analyze", json={"text": "warm up"}, timeout=startup)
                    if r.status_code != 200:
                        raise RuntimeError(
                            f"warm-up analysis failed: {r.status_code} {r.text[:300]}"
                        )
                    return proc
            except httpx.TransportError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"attntopo serve did not answer within {startup:g} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def markdown(result: dict) -> str:
    lines = [
        f"Measured {result['date']} on {result['machine']} (`make loadtest`; "
        f"{result['seconds']:g} s per phase, server defaults: `--max-concurrent 2`, `--timeout "
        "60`, MiniLM, short texts, every text new; 1-minute load average "
        f"{result['load_average']['before']:.1f} before, {result['load_average']['after']:.1f} "
        "after):",
        "",
        "| clients | analyses/s | p50 | p95 | max | 503 busy | other errors | worst health check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in result["phases"]:
        lines.append(
            f"| {p['clients']} | {p['analyses_per_s']:.2f} | {p['p50_s']:.2f} s | "
            f"{p['p95_s']:.2f} s | {p['max_s']:.2f} s | {p['busy_503']} | {p['failures']} | "
            f"{p['health_worst_s']:.3f} s |"
        )
    m = result["rss_mib"]
    lines += [
        "",
        f"Server resident memory: {m['start']:.0f} MiB after warm-up, peak {m['peak']:.0f} MiB, "
        f"{m['end']:.0f} MiB at the end.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--clients", default="8,32", help="concurrent clients per phase (default 8,32)")
    ap.add_argument("--seconds", type=float, default=25.0, help="length of each phase (default 25)")
    ap.add_argument(
        "--backoff", type=float, default=0.2, help="wait after a 503, seconds (default 0.2)"
    )
    ap.add_argument(
        "--health-limit", type=float, default=1.0, help="slowest health check allowed (1 s)"
    )
    ap.add_argument("--startup", type=float, default=120.0, help="seconds to wait for the server")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    args = ap.parse_args(argv)
    clients = [int(c) for c in args.clients.split(",") if c.strip()]

    load_before = os.getloadavg()[0]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    print(f"starting attntopo serve on {base} ...", file=sys.stderr)
    try:
        proc = start_server(port, args.startup)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        rss = [rss_mib(proc.pid)]
        counter = [0]
        phases = []
        for n in clients:
            print(f"{n} clients for {args.seconds:g} s ...", file=sys.stderr)
            phases.append(
                run_phase(
                    base, n, args.seconds, args.backoff, args.health_limit, proc.pid, rss, counter
                )
            )
        alive = proc.poll() is None
    finally:
        stop_server(proc)

    result = {
        "date": datetime.date.today().isoformat(),
        "machine": (
            f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
        ),
        "seconds": args.seconds,
        # other work on the machine competes for the same cores: the 1-minute load average
        "load_average": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "phases": [p.report() for p in phases],
        "rss_mib": {
            "start": round(rss[0], 1),
            "peak": round(max(rss), 1),
            "end": round(rss[-1], 1),
        },
    }
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")

    problems = []
    if not alive:
        problems.append("the server died during the test")
    for p in phases:
        for f in sorted(set(p.failures))[:5]:
            problems.append(f"{p.clients} clients: {f} ({p.failures.count(f)}x)")
        for f in sorted(set(p.health_failures))[:5]:
            problems.append(f"{p.clients} clients: health check failed: {f}")
        worst = max(p.health, default=0.0)
        if worst > args.health_limit:
            problems.append(
                f"{p.clients} clients: a health check took {worst:.2f} s (limit "
                f"{args.health_limit:g} s)"
            )
        if not p.latencies:
            problems.append(f"{p.clients} clients: no analysis succeeded")
    for line in problems:
        print(f"FAIL: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
