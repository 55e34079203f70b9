"""One check per kind of argument, shared by every layer.

Each ``check_*`` returns the value normalised (a Python ``int``, ``float``, ``bool`` or
``str``) or raises a typed error from :mod:`attntopo.errors` whose one-line message names
the argument, says what is allowed and repeats what was given::

    maxdim = check_maxdim(maxdim)                       # analyses: 0, 1 or 2
    maxdim = check_maxdim(maxdim, hi=MAX_MAXDIM)        # persistence: 0..3
    threshold = check_threshold(threshold)              # > 0, inf allowed
    eps = check_scale(eps, unit="JS distance")          # >= 0, inf allowed
    metric = check_metric(metric)

Rules shared by all checks (tested in ``tests/unit/test_validation.py``):

* **integers** are Python ``int`` or NumPy integer scalars; ``bool`` and ``numpy.bool_``
  are rejected (``True`` is not a dimension), and so are floats, even integral ones.
* **numbers** are anything ``float()`` accepts (``int``, ``float``, NumPy and 0-d torch
  scalars) except ``bool``/``numpy.bool_`` and text: ``"0.5"`` is rejected, since a
  number given as text is a caller's bug (the CLI and the web API convert before).
  NaN is always rejected.
* **flags** (:func:`check_bool`) are ``bool`` or ``numpy.bool_`` (what comparisons on
  arrays give); ``0``/``1``, strings and ``None`` are rejected.
* **choices** are compared exactly (``"Giotto"`` is not ``"giotto"``).

Only :mod:`attntopo.errors` and :mod:`attntopo.constants` are imported, so every layer
(the CLI at start-up included) can use this module without importing torch.
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from .constants import MAX_ANALYSIS_MAXDIM, METRICS, PAPER_MODES
from .errors import DeviceError, EmptyTextError, InvalidInputError, OutOfRangeError

__all__ = [
    "is_int",
    "check_texts",
    "check_int",
    "check_positive_int",
    "check_nonneg_int",
    "check_maxdim",
    "check_simplex_dim",
    "check_dim",
    "check_dims",
    "check_number",
    "check_threshold",
    "check_scale",
    "check_wasserstein_p",
    "check_bool",
    "check_byte_size",
    "format_bytes",
    "check_choice",
    "check_device",
    "check_dtype",
    "check_metric",
    "check_paper_compat",
    "check_index",
    "check_indices",
    "refused_path",
]


# ----------------------------------------------------------------------- helpers
def is_int(value: Any) -> bool:
    """True for ``int`` and NumPy integer scalars, False for ``bool``/``numpy.bool_``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _tail(hint: str | None) -> str:
    return f" ({hint})" if hint else ""


def _or_list(items: Sequence[Any]) -> str:
    """``"0, 1 or 2"``."""
    s = [str(x) for x in items]
    return s[0] if len(s) == 1 else f"{', '.join(s[:-1])} or {s[-1]}"


# ----------------------------------------------------------------------- integers
def check_int(
    value: Any,
    name: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
    hint: str | None = None,
    error: type[InvalidInputError] | type[OutOfRangeError] = InvalidInputError,
) -> int:
    """An integer in ``lo..hi`` (both inclusive, ``None`` = unbounded).

    Small ranges (up to three values) are listed in the message ("must be 0, 1 or 2"),
    larger ones given as bounds ("an int in 0..3", "an int >= 1").

    Raises
    ------
    InvalidInputError (or ``error``)
        Not an integer (``bool`` included), or out of range.
    """
    if lo is not None and hi is not None and 0 <= hi - lo <= 2:
        allowed = _or_list(range(lo, hi + 1))
    elif lo is not None and hi is not None:
        allowed = f"an int in {lo}..{hi}"
    elif lo is not None:
        allowed = f"an int >= {lo}"
    elif hi is not None:
        allowed = f"an int <= {hi}"
    else:
        allowed = "an int"
    if not is_int(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        raise error(f"{name} must be {allowed}{_tail(hint)}, got {value!r}")
    return int(value)


def check_positive_int(
    value: Any,
    name: str,
    default: int | None = None,
    *,
    allow_none: bool = True,
    hint: str | None = None,
) -> int | None:
    """An integer >= 1; ``None`` gives ``default`` (unless ``allow_none=False``)."""
    if value is None and allow_none:
        return default
    if not is_int(value) or value < 1:
        allowed = "None or an int >= 1" if allow_none else "an int >= 1"
        raise InvalidInputError(f"{name} must be {allowed}{_tail(hint)}, got {value!r}")
    return int(value)


def check_nonneg_int(value: Any, name: str, *, hint: str | None = None) -> int:
    """An integer >= 0."""
    return check_int(value, name, lo=0, hint=hint)


def check_maxdim(
    value: Any,
    lo: int = 0,
    hi: int | None = MAX_ANALYSIS_MAXDIM,
    *,
    name: str = "maxdim",
    hint: str | None = None,
) -> int:
    """Highest homology dimension: an integer in ``lo..hi``.

    The contexts and their rules:

    * analyses, CLI, web (``analyze``, ``compare``, ``timeline``, ``head_space``):
      the default ``0..2`` (:data:`~attntopo.constants.MAX_ANALYSIS_MAXDIM`);
    * :func:`~attntopo.topology.persistence`: ``hi=MAX_MAXDIM`` (3);
    * a :class:`~attntopo.topology.Diagram` built from data: ``hi=None`` (any >= 0).

    The largest simplex dimension of a complex is another quantity: see
    :func:`check_simplex_dim`.
    """
    return check_int(value, name, lo=lo, hi=hi, hint=hint)


def check_simplex_dim(value: Any, name: str = "max_simplex_dim") -> int:
    """Largest simplex dimension of a complex: 1 (edges), 2 (triangles) or 3 (tetrahedra)."""
    if not is_int(value) or not 1 <= value <= 3:
        raise InvalidInputError(
            f"{name} must be 1 (edges), 2 (triangles) or 3 (tetrahedra), got {value!r}"
        )
    return int(value)


def check_dim(value: Any, maxdim: int, name: str = "dim", *, hint: str | None = None) -> int:
    """One homology dimension present in a result: an integer in ``0..maxdim``."""
    if not is_int(value) or not 0 <= value <= maxdim:
        raise InvalidInputError(
            f"{name} must be a homology dimension in 0..{maxdim}{_tail(hint)}, got {value!r}"
        )
    return int(value)


def check_dims(values: Any, maxdim: int, name: str = "dims") -> list[int]:
    """Homology dimensions to show: ``None`` (all, ``0..maxdim``), one int or a sequence."""
    if values is None:
        return list(range(maxdim + 1))
    if is_int(values):
        values = [values]
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInputError(
            f"{name} must be None, an int or a sequence of ints in 0..{maxdim}, got {values!r}"
        )
    out = [check_dim(d, maxdim, name) for d in values]
    if not out:
        raise InvalidInputError(f"{name} must name at least one dimension in 0..{maxdim}")
    return out


# ----------------------------------------------------------------------- numbers
def _as_float(value: Any) -> float:
    """``float(value)``, or NaN for what is not a number (bools and text included)."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.ndim(value) != 0:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def check_number(
    value: Any,
    name: str,
    *,
    lo: float | None = None,
    lo_open: bool = False,
    allow_inf: bool = False,
    allow_none: bool = False,
    hint: str | None = None,
) -> float | None:
    """A real number ``> lo`` (``lo_open``) or ``>= lo``, finite unless ``allow_inf``.

    The message spells the rule out: "a positive number or inf", "a finite number >= 1",
    "a number >= 0 or None (inf allowed; <hint>)".
    """
    if value is None and allow_none:
        return None
    x = _as_float(value)
    ok = not math.isnan(x)
    if ok and lo is not None:
        ok = x > lo if lo_open else x >= lo
    if ok and not allow_inf:
        ok = math.isfinite(x)
    if not ok:
        notes = [hint] if hint else []
        if lo == 0 and lo_open:
            allowed = "a positive number or inf" if allow_inf else "a positive finite number"
        else:
            bound = "" if lo is None else f" {'>' if lo_open else '>='} {lo:g}"
            allowed = f"a number{bound}" if allow_inf else f"a finite number{bound}"
            if allow_inf:
                notes.insert(0, "inf allowed")
        if allow_none:
            allowed += " or None"
        note = f" ({'; '.join(notes)})" if notes else ""
        raise InvalidInputError(f"{name} must be {allowed}{note}, got {value!r}")
    return x


def check_threshold(
    value: Any,
    name: str = "threshold",
    *,
    unit: str | None = None,
    allow_none: bool = False,
    hint: str | None = None,
) -> float | None:
    """A filtration cut-off: a number > 0, ``inf`` meaning no cut.

    ``unit`` names the scale in the message ("a distance in JS units").
    """
    if unit is not None:
        hint = f"a distance in {unit}" + (f"; {hint}" if hint else "")
    return check_number(
        value, name, lo=0, lo_open=True, allow_inf=True, allow_none=allow_none, hint=hint
    )


def check_scale(
    value: Any,
    name: str = "eps",
    *,
    unit: str | None = None,
    allow_zero: bool = True,
    allow_inf: bool = True,
    allow_none: bool = False,
    hint: str | None = None,
) -> float | None:
    """A filtration scale: a number >= 0 (> 0 without ``allow_zero``), ``inf`` if allowed.

    ``unit`` names the scale in the message ("a scale in head-distance units").
    """
    if unit is not None:
        hint = f"a scale in {unit}" + (f"; {hint}" if hint else "")
    return check_number(
        value,
        name,
        lo=0,
        lo_open=not allow_zero,
        allow_inf=allow_inf,
        allow_none=allow_none,
        hint=hint,
    )


def check_wasserstein_p(value: Any, name: str = "p") -> float:
    """Order of a Wasserstein distance: a finite number >= 1."""
    return check_number(
        value, name, lo=1, hint="the Wasserstein order; use the bottleneck distance for p = inf"
    )


# ----------------------------------------------------------------------- texts
def check_unicode(text: str, name: str = "text") -> str:
    """``text`` when it is valid Unicode; one :class:`InvalidInputError` for a lone surrogate.

    Python reads bytes that are not UTF-8 (a command-line argument, stdin) into lone surrogates
    (``'\\udcff'``) that no tokenizer takes; the message names the first.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        c = ord(text[e.start])
        what = (
            f"byte 0x{c - 0xDC00:02x}, not UTF-8" if 0xDC80 <= c <= 0xDCFF else "a lone surrogate"
        )
        raise InvalidInputError(
            f"{name} is not valid Unicode: character {e.start} is {text[e.start]!r} ({what}); "
            f"give UTF-8 text"
        ) from None
    return text


def check_texts(texts: Any, name: str = "texts") -> list[str]:
    """A string or a non-empty list/tuple of strings → a list of non-blank strings.

    Raises :class:`InvalidInputError` naming the first entry that is not a string and
    :class:`EmptyTextError` for no texts or a blank one (checked before any model loads).
    """
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, (list, tuple)):
        raise InvalidInputError(
            f"{name} must be a string or a list of strings, got {type(texts).__name__}"
        )
    if not texts:
        raise EmptyTextError(f"no {name} given: pass a string or a non-empty list of strings")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInputError(f"{name}[{i}] must be a string, got {type(t).__name__}")
        if not t.strip():
            raise EmptyTextError(f"{name}[{i}] is empty or only whitespace: give at least one word")
        check_unicode(t, f"{name}[{i}]")
    return list(texts)


# ----------------------------------------------------------------------- flags, choices
def check_bool(value: Any, name: str) -> bool:
    """``True`` or ``False`` (``numpy.bool_`` accepted); 0/1, text and None are rejected."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?", re.IGNORECASE)
_UNIT = {
    "": 1,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "t": 1000**4,
    "ki": 1024,
    "mi": 1024**2,
    "gi": 1024**3,
    "ti": 1024**4,
}


def check_byte_size(value: Any, name: str, *, lo: int = 0) -> int:
    """A size in bytes, at least ``lo``: an int (bytes) or text such as ``"512MB"``,
    ``"2GB"``, ``"1.5GiB"`` or ``"4096"`` (kB, MB, GB, TB are powers of 1000; KiB, MiB,
    GiB, TiB of 1024; case and a space before the unit do not matter)."""
    if is_int(value):
        n = int(value)
    elif isinstance(value, str) and (m := _SIZE.fullmatch(value.strip())):
        n = int(float(m.group(1)) * _UNIT[(m.group(2) or "").lower()])
    else:
        raise InvalidInputError(
            f"{name} must be a size such as 512MB, 2GB or 1.5GiB, got {value!r}"
        )
    if n < lo:
        raise InvalidInputError(f"{name} must be at least {format_bytes(lo)}, got {value!r}")
    return n


def format_bytes(n: int) -> str:
    """``n`` bytes in the largest unit of 1000 that keeps a number >= 1: ``"1GB"``,
    ``"512MB"``, ``"1.5GB"``."""
    for unit, size in (("TB", 1000**4), ("GB", 1000**3), ("MB", 1000**2), ("kB", 1000)):
        if n >= size:
            return f"{n / size:.4g}{unit}"
    return f"{n}B"


def check_choice(
    value: Any,
    name: str,
    options: Iterable[str],
    *,
    what: str | None = None,
    hint: str | None = None,
) -> str:
    """One of ``options`` (exact match).

    The message reads "unknown <what> 'x'; allowed: 'a', 'b'"; ``what`` defaults to
    ``name`` and should contain it ("persistence engine" for ``engine=``).
    """
    opts = tuple(options)
    if not isinstance(value, str) or value not in opts:
        allowed = ", ".join(repr(o) for o in opts)
        raise InvalidInputError(
            f"unknown {what or name} {value!r}; allowed: {allowed}{_tail(hint)}"
        )
    return value


#: Devices a model can be loaded on (``"cuda:N"`` too); ``"auto"``: the first GPU, else the CPU.
DEVICES: tuple[str, ...] = ("cpu", "cuda", "cuda:N", "mps", "auto")
#: Weights' dtypes a model can be loaded in (attention is always handed out as float32).
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")


def check_device(value: Any, name: str = "device") -> str:
    """A torch device this machine has: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``, or
    ``"auto"`` (resolved to ``"cuda:0"`` when CUDA has a GPU, else ``"mps"`` when Apple's GPU
    is there, else ``"cpu"``); ``None`` is ``"cpu"``.  Returns the device to load on.

    Raises :class:`~attntopo.errors.DeviceError`: an unknown device, ``cuda`` on a machine
    (or a torch build) without a CUDA GPU, a GPU number beyond the ones there, ``mps``
    without Apple's GPU.  Imports torch (not at module level: the CLI starts without it).
    """
    if value is None:
        return "cpu"
    allowed = "cpu, cuda, cuda:N (a GPU number), mps or auto"
    if not isinstance(value, str) or not re.fullmatch(r"cpu|cuda|cuda:\d+|mps|auto", value):
        raise DeviceError(f"unknown {name} {value!r}; allowed: {allowed}")
    dev = value
    if dev == "cpu":
        return dev
    import torch

    if dev == "auto":
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            return "cuda:0"
        mps = getattr(torch.backends, "mps", None)
        return "mps" if mps is not None and mps.is_available() else "cpu"
    if dev.startswith("cuda"):
        if not torch.cuda.is_available():
            why = (
                "this torch was built without CUDA"
                if torch.version.cuda is None
                else "torch finds no CUDA GPU or driver"
            )
            raise DeviceError(
                f"{name} {value!r}: this machine has no CUDA GPU ({why}); use cpu or auto"
            )
        count = torch.cuda.device_count()
        index = int(dev.partition(":")[2] or 0)
        if index >= count:
            raise DeviceError(
                f"{name} {value!r}: this machine has {count} CUDA GPU{'s' if count != 1 else ''} "
                f"(cuda:0{f' to cuda:{count - 1}' if count > 1 else ''})"
            )
        return dev
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_available():
        raise DeviceError(f"{name} {value!r}: this machine has no Apple GPU (MPS); use cpu or auto")
    return dev


def check_dtype(value: Any, device: str = "cpu", name: str = "dtype") -> str:
    """A weights' dtype from :data:`DTYPES` that ``device`` (already checked with
    :func:`check_device`) can run; ``None`` is ``"float32"``.

    The device is asked, not a table: a matrix product and a softmax in that dtype are run
    on it once (cached), so a CPU whose torch has no float16 kernels, a GPU without bfloat16
    (CUDA before compute capability 8.0) or an MPS without it (macOS < 14) is refused with
    :class:`~attntopo.errors.DeviceError` before any model is loaded.
    """
    if value is None:
        return "float32"
    if not isinstance(value, str) or value not in DTYPES:
        allowed = ", ".join(DTYPES)
        raise DeviceError(f"unknown {name} {value!r}; allowed: {allowed}")
    if value == "float32":
        return value
    why = _dtype_unsupported(value, device)
    if why:
        raise DeviceError(
            f"{name} {value!r} cannot run on {device}: {why}; use float32"
            f"{' or bfloat16' if value == 'float16' and device == 'cpu' else ''}"
        )
    return value


_DTYPE_PROBES: dict[tuple[str, str], str] = {}


def _dtype_unsupported(dtype: str, device: str) -> str:
    """Why ``device`` cannot run ``dtype`` ("" when it can): a probe of the operations a
    transformer's attention needs, run once per (dtype, device)."""
    key = (dtype, device)
    if key not in _DTYPE_PROBES:
        import torch

        dt = getattr(torch, dtype)
        why = ""
        if device.startswith("cuda") and dtype == "bfloat16":
            index = int(device.partition(":")[2] or 0)
            major, minor = torch.cuda.get_device_capability(index)
            if major < 8:
                why = f"the GPU has compute capability {major}.{minor}, and bfloat16 needs 8.0"
        if not why:
            try:
                with torch.no_grad():
                    x = torch.ones((4, 8), dtype=dt, device=device)
                    w = torch.nn.Linear(8, 8, dtype=dt, device=device)
                    y = torch.softmax(w(x) @ x.T, -1, dtype=torch.float32).to(dt)
                    torch.nn.functional.layer_norm(y, (4,))
                    float(y.sum())
            except (RuntimeError, TypeError, NotImplementedError) as e:
                why = (
                    f"torch {torch.__version__} has no {dtype} kernels there "
                    f"({str(e).splitlines()[0][:80]})"
                )
        _DTYPE_PROBES[key] = why
    return _DTYPE_PROBES[key]


def check_metric(value: Any, options: Iterable[str] = METRICS, name: str = "metric") -> str:
    """A row distance name from :data:`~attntopo.constants.METRICS`."""
    return check_choice(value, name, options)


def check_paper_compat(
    value: Any,
    name: str = "paper_compat",
    *,
    modes: Sequence[str] = PAPER_MODES,
    hint: str | None = None,
) -> str | None:
    """A founding-paper mode from ``modes``, or ``None`` for attntopo's own numbers.

    ``False`` and ``None`` mean off.  ``True`` is refused: the paper has two recipes and
    ``True`` does not say which.
    """
    opts = tuple(modes)
    if value is None or (isinstance(value, (bool, np.bool_)) and not value):
        return None
    if isinstance(value, str) and value in opts:
        return value
    allowed = " or ".join(repr(o) for o in opts)
    raise InvalidInputError(
        f"{name} must be {allowed} (a founding-paper recipe) or False/None (attntopo's own); "
        f"got {value!r}{_tail(hint)}"
    )


# ----------------------------------------------------------------------- indices
def check_index(
    index: Any, size: int, what: str, *, name: str | None = None, owner: str = "this model"
) -> int:
    """A 0-based index into ``size`` items; negative counts from the end (``-1`` = last).

    Returns the index as non-negative.  ``what`` is the singular noun ("layer", "head",
    "token"), ``name`` the argument (default ``what``), ``owner`` what holds the items
    ("this model has 6 layers", "the matrix has 9 tokens").

    Raises
    ------
    OutOfRangeError
        Not an integer, or outside ``-size..size-1`` (the message states the range).
    """
    name = name or what
    if not is_int(index):
        raise OutOfRangeError(
            f"{name} must be {'an integer' if name == what else f'a {what} index'} in "
            f"0..{size - 1} (or -{size}..-1), got {index!r}"
        )
    i = int(index)
    if not -size <= i < size:
        raise OutOfRangeError(
            f"{name} {i} is out of range: {owner} has {size} {what}s, valid are 0..{size - 1} "
            f"(or -{size}..-1)"
        )
    return i % size


def check_indices(
    indices: Any, size: int, what: str, *, name: str | None = None, owner: str = "this model"
) -> tuple[int, ...]:
    """A selection of layers or heads: ``None`` (all), one index, a slice, or a sequence.

    This is what ``layers=`` and ``heads=`` accept everywhere.  Negative indices count
    from the end.  Returns distinct non-negative indices in the order given.  ``name`` and
    ``owner`` as in :func:`check_index` (``"--layer"``, ``"minilm"``).

    Raises
    ------
    OutOfRangeError
        An index out of range, or an empty selection.
    InvalidInputError
        The same index twice.
    """
    name = name or what
    if indices is None:
        return tuple(range(size))
    if is_int(indices):
        return (check_index(indices, size, what, name=name, owner=owner),)
    if isinstance(indices, slice):
        out = tuple(range(size))[indices]
    elif isinstance(indices, (str, bytes)) or not isinstance(indices, Iterable):
        raise OutOfRangeError(
            f"{what}s must be None (all), an int or a sequence of ints in 0..{size - 1}, "
            f"got {indices!r}"
        )
    else:
        out = tuple(check_index(i, size, what, name=name, owner=owner) for i in indices)
    if not out:
        raise OutOfRangeError(f"no {what}s selected: give at least one index in 0..{size - 1}")
    if len(set(out)) != len(out):
        raise InvalidInputError(f"{what} indices must be distinct, got {list(out)}")
    return out


@contextmanager
def refused_path(what: str) -> Iterator[None]:
    """Inside the block, the file system refusing a path while it is probed (a name longer
    than it allows, a loop of links, a null byte) becomes one line,
    ``InvalidInputError(f"{what}: {reason}")``; attntopo's own errors pass unchanged."""
    try:
        yield
    except InvalidInputError:
        raise
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"{what}: {getattr(e, 'strerror', None) or e}") from None
