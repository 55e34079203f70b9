"""attntopo's optional C kernel, loaded through ctypes.

``attntopo._native._jsd`` is built from ``jsd.c`` when attntopo is installed (an optional
extension: without a C compiler the install still succeeds, with a warning).  It holds the
Jensen–Shannon inner loop (sums of ``u ln u`` over the keys for every pair of rows) with a
vectorized logarithm that is within 1 ulp of the true value.  :mod:`attntopo.distances`
uses it for float64 CPU work when it is present and falls back to its pure-torch path
otherwise; both give the same distances to ~1e-15.

The functions are called through :mod:`ctypes`, which releases the GIL during the call, so
the distance code's worker threads run them in parallel.

Set the environment variable ``ATTNTOPO_NATIVE=0`` (before the first distance call) to
force the pure-torch path, e.g. to compare the two.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from typing import Any

import numpy as np

__all__ = ["available", "kernel", "describe", "log", "disabled_by_env"]

_lock = threading.Lock()
_state: dict[str, Any] = {}

_i64 = ctypes.c_int64
_ptr = ctypes.c_void_p
_f64 = ctypes.c_double
_int = ctypes.c_int

# (x, m, k, c_mass, s, lo_hi, rows, r, a0, a1, out, cutoff) of attntopo_js_cross_rows (jsd.c)
_CROSS_ROWS = [_ptr, _i64, _i64, _ptr, _ptr, _ptr, _ptr, _i64, _i64, _i64, _ptr, _f64]

#: name -> (argtypes, restype) of every function of the C kernel (jsd.c), declared once
_SIGNATURES: dict[str, tuple[list, Any]] = {
    "attntopo_js_divergences": ([_ptr, _i64, _i64, _i64, _ptr, _i64, _f64], _i64),
    "attntopo_js_finish": ([_ptr, _i64, _i64, _f64, _int], None),
    "attntopo_js_divergences_many": ([_ptr, _i64, _i64, _i64, _ptr, _f64, _ptr], _i64),
    "attntopo_js_finish_many": ([_ptr, _i64, _i64, _f64, _int], None),
    "attntopo_js_cross_many": ([_ptr, _i64, _i64, _i64, _ptr, _i64, _ptr, _f64, _ptr], _i64),
    "attntopo_js_cross_finish_many": ([_ptr, _i64, _i64, _ptr, _i64, _f64, _int], None),
    "attntopo_js_rows_prepare": ([_ptr, _i64, _i64, _ptr, _ptr, _ptr], None),
    "attntopo_js_cross_rows": (_CROSS_ROWS, _i64),
    # the same and `nearest`: columns below it need only each row's minimum
    "attntopo_js_cross_rows_nearest": ([*_CROSS_ROWS, _i64], _i64),
    "attntopo_log": ([_ptr, _ptr, _i64], None),
    "attntopo_simd_level": ([], _int),
}


def disabled_by_env() -> bool:
    """True when ``ATTNTOPO_NATIVE`` is set to ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get("ATTNTOPO_NATIVE", "").strip().lower() in {"0", "false", "no", "off"}


def _load() -> ctypes.CDLL | None:
    with _lock:
        if "lib" in _state:
            return _state["lib"]
        lib = None
        error = None
        try:
            spec = importlib.util.find_spec("attntopo._native._jsd")
            if spec is None or not spec.origin:
                error = "not built (no C compiler at install time?)"
            else:
                lib = ctypes.CDLL(spec.origin)
                for name, (argtypes, restype) in _SIGNATURES.items():
                    fn = getattr(lib, name)
                    fn.argtypes, fn.restype = argtypes, restype
        except (OSError, AttributeError, ImportError) as exc:  # broken build: fall back
            lib, error = None, f"{type(exc).__name__}: {exc}"
        _state["lib"] = lib
        _state["error"] = error
        return lib


def kernel() -> ctypes.CDLL | None:
    """The loaded library, or None (not built, failed to load, or ``ATTNTOPO_NATIVE=0``)."""
    if disabled_by_env():
        return None
    return _load()


def available() -> bool:
    """Whether the C kernel will be used (built, loadable and not disabled)."""
    return kernel() is not None


def describe() -> str:
    """One line for reports: which Jensen–Shannon kernel runs here, and why."""
    if disabled_by_env():
        return "pure torch (ATTNTOPO_NATIVE=0)"
    lib = _load()
    if lib is None:
        return f"pure torch (C kernel unavailable: {_state.get('error')})"
    level = int(lib.attntopo_simd_level())
    simd = {2: "AVX2+FMA", 1: "x86-64 baseline SIMD"}.get(level, "generic SIMD build")
    return f"C kernel ({simd})"


def log(x: Any) -> np.ndarray:
    """The C kernel's natural logarithm of positive normal float64 numbers (for tests).

    Raises RuntimeError when the kernel is not available, ValueError on other input.
    """
    lib = kernel()
    if lib is None:
        raise RuntimeError(f"the C kernel is not available: {describe()}")
    a = np.ascontiguousarray(x, dtype=np.float64)
    if a.size and not (np.all(np.isfinite(a)) and a.min() >= np.finfo(np.float64).tiny):
        raise ValueError("log: the kernel takes positive normal float64 numbers only")
    y = np.empty_like(a)
    lib.attntopo_log(a.ctypes.data, y.ctypes.data, a.size)
    return y
