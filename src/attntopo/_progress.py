"""Progress of long work: one bar per command, a callback, or nothing.

Every long-running entry point (:func:`attntopo.analyze`, :func:`~attntopo.compare`,
:func:`~attntopo.head_space`, :func:`~attntopo.timeline`, :func:`~attntopo.load_model`)
takes ``progress=``, which :func:`make_reporter` turns into a :class:`Reporter`:

* ``None`` (default): automatic, a bar when ``sys.stderr`` is a terminal or the code runs in
  a Jupyter kernel, nothing otherwise (pipes, files, tests); ``ATTNTOPO_PROGRESS=0`` in the
  environment turns the automatic bar off, ``ATTNTOPO_PROGRESS=1`` on;
* ``True`` / ``False``: a bar always / never;
* a callable ``callback(done, total, stage)``: called in the caller's thread whenever work
  is done or a stage begins, with ``done`` (int, units finished so far, never decreasing),
  ``total`` (int, units known so far, never decreasing; ``done == total`` at the end of a
  successful run) and ``stage`` (str, what runs now: ``"loading model"``, ``"attention"``,
  ``"distances"``, ``"persistence"``, …).  Units are whatever the stage counts (texts,
  heads' matrices, tensors); an exception raised by the callback stops the work;
* a :class:`Reporter` already open: the work reports into it (how the entry points pass one
  bar down to the functions they call; see below).

The bar is :mod:`rich.progress` on stderr (in Jupyter: an ipywidgets output when
ipywidgets is installed, else a plain-text line updated in place); it is transient (gone
when the work ends) and shows the stage, units done / total, elapsed time and an estimate
of the time left.

How the work reports (for the modules that do it)::

    with make_reporter(progress, description="analyze") as r:
        r.add_total(n_texts + 2 * n_matrices)     # the plan, as soon as it is known
        r.stage("attention")
        ...; r.advance(len(batch))

The function that opens the reporter owns its plan (:meth:`Reporter.add_total`); a
function handed an open reporter only calls :meth:`~Reporter.stage` and
:meth:`~Reporter.advance` (``make_reporter(reporter, total=…)`` returns it unchanged and
ignores ``total``), except model loading, whose work nobody can plan ahead (a GGUF file is
converted only once), which adds its own units.  When progress is off the reporter is a
shared object whose methods do nothing.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from typing import Any, Callable, TypeVar, Union

from .errors import InvalidInputError

__all__ = [
    "ProgressCallback",
    "ProgressOption",
    "Reporter",
    "make_reporter",
    "reports",
    "check_progress",
    "progress_wanted",
    "NO_PROGRESS",
]

#: ``callback(done, total, stage)``: units done so far, units known so far, current stage.
ProgressCallback = Callable[[int, int, str], Any]
#: What ``progress=`` accepts.
ProgressOption = Union[bool, None, ProgressCallback, "Reporter"]

_ENV = "ATTNTOPO_PROGRESS"
T = TypeVar("T")


def _in_jupyter_kernel() -> bool:
    """True inside a Jupyter (ipykernel) or Colab kernel; IPython is never imported here."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    if shell is None:
        return False
    name = type(shell).__name__
    return name == "ZMQInteractiveShell" or "google.colab" in str(type(shell))


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):  # closed or replaced stderr
        return False


def progress_wanted(progress: Any = None) -> bool:
    """Whether ``progress=None`` (automatic) means a bar here and now.

    ``ATTNTOPO_PROGRESS`` (``0``/``1``) decides if set; else a bar when stderr is a terminal
    or in a Jupyter kernel.  Any other value of ``progress`` is returned as its own answer
    (``True``/``False``; a callback or a reporter counts as wanted).
    """
    if progress is not None:
        return progress is not False
    env = os.environ.get(_ENV, "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    return _stderr_is_terminal() or _in_jupyter_kernel()


class Reporter:
    """Counts units of work in stages and reports them; this base class reports nothing.

    Attributes
    ----------
    done : int
        Units finished so far.
    total : int
        Units announced so far (:meth:`add_total`).
    stage_name : str
        The current stage.
    description : str
        What the whole work is (``"analyze"``, ``"compare"``, …): the bar's title.
    enabled : bool
        False for the do-nothing reporter (progress off).

    Used as a context manager: entering counts a user, leaving the last one closes it
    (a nested ``with`` on the same reporter does not close the bar).
    """

    enabled = True

    def __init__(self, description: str = "", total: int = 0) -> None:
        self.description = description
        self.total = max(0, int(total))
        self.done = 0
        self.stage_name = ""
        self._depth = 0
        self._closed = False
        self._lock = threading.Lock()

    # -------------------------------------------------------------- counting
    def add_total(self, k: int) -> None:
        """Announce ``k`` more units of work (the plan; called by the reporter's owner)."""
        k = int(k)
        if k <= 0:
            return
        with self._lock:
            self.total += k
        self._emit()

    def advance(self, k: int = 1) -> None:
        """``k`` more units are done."""
        k = int(k)
        if k <= 0:
            return
        with self._lock:
            self.done += k
        self._emit()

    def stage(self, name: str) -> None:
        """A new stage begins (shown in the bar's description, passed to the callback)."""
        if name == self.stage_name:
            return
        self.stage_name = name
        self._emit()

    @property
    def label(self) -> str:
        """``"description · stage"`` (or whichever of them is set)."""
        return " · ".join(x for x in (self.description, self.stage_name) if x)

    # ------------------------------------------------------------- lifecycle
    def __enter__(self) -> "Reporter":
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth <= 0:
            self.close()

    def close(self) -> None:
        """Stop reporting (removes the bar); later calls do nothing."""
        self._closed = True

    def _emit(self) -> None:
        """Show the current state (subclasses)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r}, {self.done}/{self.total})"


class _NoProgress(Reporter):
    """Progress off: every method does nothing (one shared instance, :data:`NO_PROGRESS`)."""

    enabled = False

    def add_total(self, k: int) -> None:
        pass

    def advance(self, k: int = 1) -> None:
        pass

    def stage(self, name: str) -> None:
        pass

    def __enter__(self) -> "Reporter":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


#: The reporter of ``progress=False``.
NO_PROGRESS: Reporter = _NoProgress()


class _CallbackReporter(Reporter):
    """Calls ``callback(done, total, stage)`` on every change."""

    def __init__(self, callback: ProgressCallback, description: str, total: int) -> None:
        super().__init__(description, total)
        self._callback = callback

    def _emit(self) -> None:
        if not self._closed:
            self._callback(self.done, self.total, self.stage_name)


class _RichReporter(Reporter):
    """A transient :class:`rich.progress.Progress` bar (terminal, or Jupyter with ipywidgets)."""

    def __init__(self, description: str, total: int, console: Any = None) -> None:
        super().__init__(description, total)
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console if console is not None else Console(stderr=True),
            transient=True,
            redirect_stdout=False,  # stdout carries results; only stderr writes go above the bar
        )
        self._task = self._bar.add_task(self.label, total=self.total or None)
        self._bar.start()

    def _emit(self) -> None:
        if not self._closed:
            self._bar.update(
                self._task, completed=self.done, total=self.total or None, description=self.label
            )

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._bar.stop()


class _DisplayReporter(Reporter):
    """Jupyter without ipywidgets: one plain-text output updated in place (``display_id``)."""

    _WIDTH = 30
    _EVERY_S = 0.2

    def __init__(self, description: str, total: int) -> None:
        super().__init__(description, total)
        from IPython.display import display

        self._t0 = time.monotonic()
        self._last = 0.0
        self._handle = display({"text/plain": self._line()}, raw=True, display_id=True)

    def _line(self) -> str:
        elapsed = time.monotonic() - self._t0
        if self.total:
            frac = min(1.0, self.done / self.total)
            fill = int(round(frac * self._WIDTH))
            bar = "━" * fill + " " * (self._WIDTH - fill)
            eta = elapsed * (self.total - self.done) / self.done if self.done else None
            rest = f" eta {_clock(eta)}" if eta is not None else ""
            return f"{self.label} {bar} {self.done}/{self.total} {_clock(elapsed)}{rest}"
        return f"{self.label} … {_clock(elapsed)}"

    def _emit(self) -> None:
        now = time.monotonic()
        if self._closed or now - self._last < self._EVERY_S:
            return
        self._last = now
        self._handle.update({"text/plain": self._line()}, raw=True)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._handle.update({"text/plain": ""}, raw=True)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _ipywidgets_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def check_progress(progress: Any) -> ProgressOption:
    """``progress`` itself if it is a value ``progress=`` accepts.

    Raises
    ------
    InvalidInputError
        Anything but None, a bool, a callable or a :class:`Reporter` (0 and 1 included).
    """
    if progress is None or isinstance(progress, (bool, Reporter)) or callable(progress):
        return progress
    raise InvalidInputError(
        "progress must be None (automatic: a bar on a terminal or in Jupyter), True, False or "
        f"a callable callback(done, total, stage); got {type(progress).__name__}"
    )


def reports(description: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator of an entry point with a keyword-only ``progress=`` parameter: the function
    runs inside ``with make_reporter(progress, description=description)`` and receives the
    open :class:`Reporter` as ``progress`` (it plans with :meth:`Reporter.add_total` and
    passes it down); the bar closes when the function returns or raises."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def run(*args: Any, progress: ProgressOption = None, **kwargs: Any) -> T:
            with make_reporter(progress, description=description) as reporter:
                return fn(*args, progress=reporter, **kwargs)

        return run

    return decorate


def make_reporter(
    progress: ProgressOption = None,
    *,
    total: int = 0,
    description: str = "",
    console: Any = None,
) -> Reporter:
    """The :class:`Reporter` for a ``progress=`` argument (see the module docstring).

    Parameters
    ----------
    progress : None, bool, callable or Reporter
        ``None``: automatic (:func:`progress_wanted`); ``True``/``False``; a callback
        ``callback(done, total, stage)``; an open reporter (returned as is).
    total : int
        Units of work planned so far (more can be added with :meth:`Reporter.add_total`).
        Ignored when ``progress`` is a reporter: its owner plans.
    description : str
        The work's name, the bar's title.  Ignored for a reporter.
    console : rich.console.Console, optional
        Where the bar goes (default: a console on stderr).

    Returns
    -------
    Reporter
        Use it in a ``with`` block: the bar closes when the block ends.

    Raises
    ------
    InvalidInputError
        ``progress`` is none of the above.
    """
    progress = check_progress(progress)
    if isinstance(progress, Reporter):
        return progress
    if callable(progress) and not isinstance(progress, bool):
        return _CallbackReporter(progress, description, total)
    if not progress_wanted(progress):
        return NO_PROGRESS
    if console is None and _in_jupyter_kernel() and not _ipywidgets_available():
        return _DisplayReporter(description, total)
    return _RichReporter(description, total, console)
