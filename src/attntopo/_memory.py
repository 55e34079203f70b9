"""A process's own peak resident memory: the one reader the benchmarks, the Ray engine's actors
and the memory tests share.

On Linux the peak is ``VmHWM`` in ``/proc/<pid>/status``: the high-water mark of the process's
own address space, which ``exec`` starts afresh and ``/proc/self/clear_refs`` (``5``) resets.
``getrusage(RUSAGE_SELF).ru_maxrss`` is not that: ``exec`` carries the old address space's
high-water mark over into it, so a child started from a large parent (a pytest worker that had
loaded models, a benchmark driver) reports its parent's peak (a query that peaked at 480 MB read
850 MB). Where ``/proc`` is absent (macOS, Windows), :func:`peak_rss` falls back to
``ru_maxrss`` and :func:`peak_rss_source` says so, for whoever records the number.
"""

from __future__ import annotations

import sys

__all__ = ["peak_rss", "peak_rss_source", "reset_peak", "status_kib"]

#: what :func:`peak_rss_source` returns for each way of reading the peak
VMHWM = "VmHWM"
RU_MAXRSS = "ru_maxrss (may start at the parent's peak)"
NONE = "none"


def status_kib(*keys: str, pid: int | str = "self") -> dict[str, int] | None:
    """``{key: KiB}`` of the lines ``keys`` (``"VmHWM"``, ``"VmRSS"``, …) of
    ``/proc/<pid>/status``; None where the file cannot be read (no ``/proc``, no such
    process).  A key the file lacks is left out."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in keys:
                    out[key] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return out


def peak_rss() -> int:
    """Peak resident memory of this process in bytes: its own ``VmHWM`` (Linux), since it
    started or since the last :func:`reset_peak`; where ``/proc`` is absent ``ru_maxrss``
    (which may include the parent's peak: module docstring); 0 where neither can be read.
    :func:`peak_rss_source` names which."""
    hwm = (status_kib(VMHWM) or {}).get(VMHWM)
    if hwm is not None:
        return hwm * 1024
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, else KiB


def peak_rss_source() -> str:
    """How :func:`peak_rss` reads the peak here: :data:`VMHWM`, :data:`RU_MAXRSS` or
    :data:`NONE`."""
    if status_kib(VMHWM):
        return VMHWM
    try:
        import resource  # noqa: F401 - only whether it exists
    except ImportError:  # pragma: no cover - not POSIX
        return NONE
    return RU_MAXRSS


def reset_peak() -> bool:
    """Reset this process's peak resident memory to what it holds now (Linux:
    ``/proc/self/clear_refs``, ``5``); False where that cannot be done."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True
