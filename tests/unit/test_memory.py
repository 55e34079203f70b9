"""The one reader of a process's own peak memory (``attntopo._memory``), which the benchmarks,
the Ray engine's actors and the memory tests share: ``VmHWM``, not ``ru_maxrss``, because a
child's ``ru_maxrss`` starts at its parent's peak (``exec`` keeps the high-water mark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attntopo import _memory
from attntopo._memory import peak_rss, peak_rss_source, reset_peak, status_kib

linux = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux /proc needed")

_CHILD = """
import json, resource
from attntopo._memory import peak_rss, peak_rss_source
print(json.dumps({"own": peak_rss(), "source": peak_rss_source(),
                  "ru_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


@linux
def test_a_child_reads_its_own_peak_not_its_parents():
    """A child started from a parent holding 300 MB more: ``ru_maxrss`` starts above those
    300 MB, ``peak_rss`` is the child's own (a Python that imported attntopo: < 150 MB)."""
    held = bytearray(300 * 1024**2)
    held[::4096] = b"x" * len(held[::4096])  # touch every page: resident
    parent_rss = status_kib("VmRSS")["VmRSS"] * 1024
    assert parent_rss > 300 * 1024**2
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True)
    del held
    child = json.loads(r.stdout)
    assert child["source"] == "VmHWM"
    assert child["ru_maxrss"] > 300 * 1024**2  # inherited: the parent's peak
    assert 0 < child["own"] < 150 * 1024**2


@linux
def test_peak_is_vmhwm_and_reset_brings_it_down_to_now():
    assert peak_rss_source() == "VmHWM"
    assert peak_rss() == status_kib("VmHWM")["VmHWM"] * 1024
    block = bytearray(64 * 1024**2)
    block[::4096] = b"x" * len(block[::4096])
    high = peak_rss()
    del block
    assert reset_peak()
    now = status_kib("VmRSS")["VmRSS"] * 1024
    assert peak_rss() < high - 32 * 1024**2 and abs(peak_rss() - now) < 8 * 1024**2


def test_without_proc_the_fallback_says_it_is_ru_maxrss(monkeypatch):
    monkeypatch.setattr(_memory, "status_kib", lambda *keys, pid="self": None)
    import resource

    assert peak_rss_source() == "ru_maxrss (may start at the parent's peak)"
    unit = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    assert peak_rss() == resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
    assert status_kib("VmRSS", pid=2**31 - 1) is None  # no such process
