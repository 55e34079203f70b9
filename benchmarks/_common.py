"""Shared helpers of the benchmarks: timing, texts of exact token counts, machine info, memory.

Nothing here imports torch or attntopo at import time, so that ``run.py`` stays quick to
start and its worker processes import only what their section needs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

HERE = Path(__file__).resolve().parent
CORPUS_PATH = HERE / "corpus.txt"

VERSION_PACKAGES = (
    "attntopo",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "scipy",
    "giotto-ph",
    "gudhi",
    "ripser",
)


# ------------------------------------------------------------------------ timing
def now() -> float:
    return time.perf_counter()


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``fn()`` once; return (seconds, result)."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def repeat(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Seconds of ``repeats`` calls of ``fn()`` (results dropped)."""
    out = []
    for _ in range(max(1, int(repeats))):
        t, _res = timed(fn)
        out.append(t)
    return out


def log(msg: str) -> None:
    """Progress on stderr (stdout is reserved for the report)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------ stage timing hooks
class StageTimer:
    """Times the stages of :func:`attntopo.analyze` from inside one call.

    While :meth:`installed` is active, the functions that ``analyze`` calls for each
    stage are wrapped with timers (in the benchmark process only; the library is not
    changed): ``AttentionModel.attention`` (tokenization + forward pass + packing),
    ``AttentionModel._forward_layers`` (the forward pass, layer by layer: input tensors, the
    model call with each layer's weights captured by a hook and handed over, renormalized, as
    the layer is done), ``analyses._analysis.token_distances`` and
    ``analyses._analysis.persistence_batch_valid`` (the validated-input form of
    ``persistence_batch`` that ``analyze`` calls).
    A wrapper costs about a microsecond per call.  If a hook point no longer exists
    (the library was refactored), that stage is reported as missing instead of failing.
    """

    HOOKS = {
        "attention": ("attntopo.models.model", "AttentionModel", "attention"),
        "forward": ("attntopo.models.model", "AttentionModel", "_forward_layers"),
        "distances": ("attntopo.analyses._analysis", None, "token_distances"),
        "persistence": ("attntopo.analyses._analysis", None, "persistence_batch_valid"),
    }

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self.missing: list[str] = []

    def reset(self) -> None:
        self.times = {k: 0.0 for k in self.HOOKS if k not in self.missing}

    def _wrap(self, name: str, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.times[name] = self.times.get(name, 0.0) + time.perf_counter() - t0

        return wrapper

    @contextlib.contextmanager
    def installed(self) -> Iterator["StageTimer"]:
        import importlib

        restore = []
        self.missing = []
        for name, (mod_name, cls_name, attr) in self.HOOKS.items():
            try:
                mod = importlib.import_module(mod_name)
                owner = getattr(mod, cls_name) if cls_name else mod
                orig = owner.__dict__[attr] if cls_name else getattr(owner, attr)
            except (ImportError, AttributeError, KeyError):
                self.missing.append(name)
                continue
            setattr(owner, attr, self._wrap(name, orig))
            restore.append((owner, attr, orig))
        self.reset()
        try:
            yield self
        finally:
            for owner, attr, orig in reversed(restore):
                setattr(owner, attr, orig)

    def split(self, total: float) -> dict[str, float]:
        """Stages of one call: forward, distances, persistence, overhead (= total - those)."""
        t = dict(self.times)
        out = {"total": total}
        for k in ("forward", "distances", "persistence"):
            out[k] = t.get(k, float("nan"))
        known = sum(v for k, v in out.items() if k != "total" and v == v)
        out["overhead"] = total - known
        # part of the overhead: tokenization and packing of the Attention objects
        if "attention" in t and "forward" in t:
            out["tokenize_pack"] = t["attention"] - t["forward"]
        return out


# ------------------------------------------------------------------------ texts
def corpus() -> str:
    return CORPUS_PATH.read_text(encoding="utf-8")


def _word_starts(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\S+", text)]


def text_with_tokens(tokenizer, n: int, start_word: int = 0) -> str:
    """A natural text (from ``corpus.txt``) that ``tokenizer`` turns into exactly ``n`` tokens.

    ``n`` counts special tokens (``[CLS]``/``[SEP]`` for BERT), i.e. it is the size of
    the attention matrices.  The text starts at word ``start_word`` of the corpus
    (wrapping around), so different starts give different texts.
    """
    base = corpus()
    starts = _word_starts(base)
    pos = starts[start_word % len(starts)]
    long = base[pos:] + "\n\n" + base[:pos]
    while True:
        enc = tokenizer(
            long,
            add_special_tokens=True,
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
            verbose=False,
        )
        content = [i for i, s in enumerate(enc["special_tokens_mask"]) if not s]
        n_special = len(enc["input_ids"]) - len(content)
        if len(content) >= n - n_special + 8:
            break
        long = long + "\n\n" + base
    need = n - n_special
    if need < 1:
        raise ValueError(f"cannot build a text of {n} tokens ({n_special} are special)")
    offs = enc["offset_mapping"]
    for k in sorted(range(-6, 7), key=abs):
        idx = need - 1 + k
        if not 0 <= idx < len(content):
            continue
        text = long[: offs[content[idx]][1]].strip()
        if len(tokenizer(text, add_special_tokens=True)["input_ids"]) == n:
            return text
    raise ValueError(f"could not cut the corpus to exactly {n} tokens")


def texts_with_tokens(tokenizer, n: int, count: int, stride_words: int = 9) -> list[str]:
    """``count`` different texts of exactly ``n`` tokens (windows starting every few words)."""
    return [text_with_tokens(tokenizer, n, start_word=i * stride_words) for i in range(count)]


# ----------------------------------------------------------------- machine info
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


def machine_info() -> dict:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    torch = sys.modules.get("torch")
    try:  # torch-free: which Jensen–Shannon kernel attntopo uses here
        from attntopo import _native

        js_kernel = _native.describe()
    except ImportError:  # pragma: no cover - attntopo not importable
        js_kernel = None
    return {
        "torch_threads": torch.get_num_threads() if torch is not None else None,
        "js_kernel": js_kernel,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "ram_gib": _ram_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "loadavg": load,
    }


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in VERSION_PACKAGES:
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


# ------------------------------------------------------------------------ memory
def _rss_bytes(pid: int | str = "self") -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
    except OSError:
        pass
    return out


class RSSSampler:
    """Samples the resident memory of this process and of its children (worker pool).

    ``peak_self``, ``peak_child`` (the largest single child) and ``peak_total`` (self + all
    children at the same instant), in bytes.  Linux only (reads /proc); elsewhere they stay 0.
    (``getrusage(RUSAGE_CHILDREN)`` is no substitute: a child started by fork + exec keeps
    the parent's resident size at the fork as its peak.)
    """

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.peak_self = 0
        self.peak_child = 0
        self.peak_total = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        me = _rss_bytes()
        kids = [_rss_bytes(c) for c in _children(os.getpid())]
        self.peak_self = max(self.peak_self, me)
        self.peak_child = max([self.peak_child, *kids])
        self.peak_total = max(self.peak_total, me + sum(kids))

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> "RSSSampler":
        self.sample()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="bench-rss")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()


def rss_now() -> int:
    return _rss_bytes()


def peak_rss_self() -> tuple[int, str]:
    """``(bytes, source)``: this process's own peak resident size and how it was read
    (:func:`attntopo._memory.peak_rss`: ``VmHWM``; where ``/proc`` is absent ``ru_maxrss``,
    which for a section's worker process may start at the peak of ``run.py`` that started it)."""
    from attntopo._memory import peak_rss, peak_rss_source

    return peak_rss(), peak_rss_source()
