"""What every command shares: input checks, model loading, saving and finishing a result,
:func:`main` and the exit codes.  The typer app and the shared options are in ``_options``,
the consoles, tables and ``--json`` output in ``_output``.

The command modules (``_analyze``, ``_models``, …) register themselves on :data:`app`; :func:`main`
runs it and turns every :class:`~attntopo.errors.AttntopoError` into one ``error: …`` line and
exit code 2.  Nothing here imports torch: ``attntopo --help`` and ``attntopo models`` start fast.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional

import typer

from .. import __version__
from .._validation import check_unicode, refused_path
from ..errors import AttntopoError, EmptyTextError, InvalidInputError, TextTooLongError
from ..io import META_FILE
from ..models.describe import describe_alias
from ._options import DebugOpt, PlotFormat, app
from ._output import err_console, json_doc, one_line, print_json, print_saved

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


# ============================================================================ input
def read_text(text: Optional[str], file: Optional[str]) -> tuple[str, str]:
    """The text to analyse and where it came from."""
    if text is not None and file is not None:
        raise InvalidInputError("give the text either as an argument or with --file, not both")
    if text is None and file is None:
        raise InvalidInputError(
            "no text given: pass TEXT as an argument or --file PATH (see attntopo analyze --help)"
        )
    if file is not None:
        if file == "-":
            try:
                data, source = sys.stdin.read(), "stdin"
                data.encode("utf-8")  # bytes that are not UTF-8 come in as lone surrogates
            except UnicodeError:
                raise InvalidInputError("--file '-' (stdin) is not UTF-8 text") from None
        else:
            p = Path(file).expanduser()
            if not p.exists():
                raise InvalidInputError(f"--file {file!r} does not exist")
            if p.is_dir():
                raise InvalidInputError(f"--file {file!r} is a folder; give a text file")
            try:
                data = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise InvalidInputError(f"--file {file!r} is not UTF-8 text") from None
            except OSError as e:
                raise InvalidInputError(f"cannot read --file {file!r}: {e.strerror or e}") from None
            source = str(file)
        if data.endswith("\n"):  # the line end an editor puts last is not text: no "Ċ" token for it
            data = data[:-1]  # (one only; text mode has made "\r\n" a "\n")
        if not data.strip():
            raise EmptyTextError(
                f"--file {source!r} is empty or only whitespace: give at least one word"
            )
        return data, source
    assert text is not None
    if not text.strip():
        raise EmptyTextError("the text is empty or only whitespace: give at least one word")
    return check_unicode(text, "the text"), "argument"


def read_texts(
    texts: Optional[List[str]],
    file: Optional[str],
    missing: str = "no text given: pass TEXT arguments or --file PATH (one text per line)",
) -> tuple[list[str], str]:
    """The texts of a command that takes several (``TextsArg``, ``TextsFileOpt``) and where they
    came from: the arguments (``"arguments"``), or one text per non-empty line of ``--file``,
    stripped (``'-'`` reads stdin; the file's name, or ``"stdin"``).  ``missing`` is the error when
    neither is given."""
    if texts and file is not None:
        raise InvalidInputError("give the texts either as arguments or with --file, not both")
    if not texts and file is None:
        raise InvalidInputError(missing)
    if file is None:
        for i, t in enumerate(texts or []):
            if not t.strip():
                raise EmptyTextError(
                    f"text {i + 1} is empty or only whitespace: give at least one word"
                )
            check_unicode(t, f"text {i + 1}")
        return list(texts or []), "arguments"
    data, source = read_text(
        None, file
    )  # the file checks of every command (exists, UTF-8, not empty)
    return [ln.strip() for ln in data.splitlines() if ln.strip()], source


def check_writable_parent(out: Path, flag: str = "--out") -> None:
    """Refuse an --out (``flag``) whose nearest existing ancestor is not a writable folder."""
    anc = out.expanduser().absolute().parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InvalidInputError(f"cannot create {flag} {str(out)!r}: {str(anc)!r} is not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InvalidInputError(
            f"cannot write {flag} {str(out)!r}: no write permission in {str(anc)!r}"
        )


def check_out(out: Path) -> None:
    """Refuse an --out that cannot become a result folder before any work is done."""
    with refused_path(f"cannot use --out {str(out)!r}"):
        _check_out(out)


def _check_out(out: Path) -> None:
    p = out.expanduser()
    if p.exists() and not p.is_dir():
        raise InvalidInputError(f"--out {str(out)!r} exists and is a file: give a folder path")
    if p.is_dir():
        try:
            entries = list(p.iterdir())
        except OSError as e:
            raise InvalidInputError(
                f"cannot read --out folder {str(out)!r}: {e.strerror or e}"
            ) from None
        if entries and not (p / META_FILE).is_file():
            raise InvalidInputError(
                f"--out folder {str(out)!r} is not empty and holds no attntopo result: "
                f"choose a new or empty folder"
            )
        if not entries and p.resolve() == Path.cwd().resolve():
            raise InvalidInputError(  # a new result replaces an empty folder (io.save_payload)
                f"--out {str(out)!r} is the current folder, which saving would replace: give "
                "a new folder's name (e.g. out/)"
            )
    check_writable_parent(out)


def check_plot_options(plots: bool, plot_format, out: Path | None) -> list[str]:
    """Validate --plots/--plot-format/--out before any work; return the figure formats to draw.

    ``--plot-format`` implies ``--plots``.  Returns ``[]`` when no figure is asked for, so
    ``if formats:`` is the test for drawing.
    """
    formats = list(dict.fromkeys(PlotFormat(f).value for f in (plot_format or ["png"])))
    plots = plots or bool(plot_format)
    if plots and out is None:
        flag = "--plots" if not plot_format else "--plot-format"
        raise InvalidInputError(
            f"{flag} needs --out DIR: figures are written into the result folder"
        )
    if plots:
        try:
            from .. import plots as _plots  # noqa: F401
        except ImportError as e:
            raise InvalidInputError(
                f"--plots needs matplotlib and plotly: pip install 'attntopo[plots]' ({e})"
            ) from None
    if out is not None:
        check_out(out)
    return formats if plots else []


# ============================================================================ work
@contextmanager
def status(message: str, enabled: bool) -> Iterator[None]:
    """A spinner on stderr while ``message``'s work runs (only on a terminal)."""
    if enabled and err_console.is_terminal:
        with err_console.status(message, spinner="dots"):
            yield
    else:
        yield


@contextmanager
def progress_bar(description: str, enabled: bool) -> Iterator[Any]:
    """A progress bar on stderr for the block's work, to pass on as ``progress=``.

    It shows ``description · stage``, units done / total, the time spent and an estimate of
    the time left, and is gone when the block ends.  Off (a reporter that does nothing) when
    not ``enabled`` (``--json``), when stderr is not a terminal, or with ``ATTNTOPO_PROGRESS=0``.
    """
    from .._progress import make_reporter

    on = enabled and err_console.is_terminal
    with make_reporter(None if on else False, description=description, console=err_console) as bar:
        yield bar


def check_device_dtype(device: str, dtype: str) -> tuple[str, str]:
    """``--device`` and ``--dtype`` checked (one line and exit 2 for a device this machine
    lacks or a dtype it cannot run there), ``auto`` resolved."""
    from .._validation import check_device, check_dtype

    dev = check_device(device, "--device")
    return dev, check_dtype(dtype, dev, "--dtype")


def check_layers_heads(model: str, layers: Any, heads: Any) -> None:
    """``--layer``/``--head`` against ``model``'s configuration, before its weights load
    (:func:`attntopo.models.check_selection`: one line naming the allowed range)."""
    from ..models import check_selection

    check_selection(model, layers=layers, heads=heads, names=("--layer", "--head"))


def load_model_with_status(model: str, show: bool, *, device: str = "cpu", dtype: str = "float32"):
    """Load a model on ``device`` in ``dtype`` behind a progress bar (a GGUF conversion shows
    its stages); returns ``(model, seconds)``."""
    from ..models import load_model

    device, dtype = check_device_dtype(device, dtype)

    loading = f"model {model}"
    if model.strip().lower() == "smollm2" and show and err_console.is_terminal:
        if describe_alias("smollm2").get("converted") is False:
            loading = "smollm2, first use: its GGUF file is converted once (about 30 s)"
    with progress_bar(loading, show) as progress:
        t0 = time.perf_counter()
        m = load_model(model, device=device, dtype=dtype, progress=progress)
        return m, time.perf_counter() - t0


@dataclass
class Opening:
    """What :func:`opening` hands a command: when it started, whether it shows progress (not under
    ``--json``), the figure formats asked for (``[]``: none) and the model with its load time."""

    t_start: float
    show: bool
    formats: list[str]
    model: Any = None
    t_model: float = 0.0
    out: Path | None = None

    def finish(
        self,
        result: Any,
        *,
        summary: Callable[[dict], None],
        seconds: dict[str, float],
        **options: Any,
    ) -> None:
        """:func:`finish_result` for this command: its ``--out``, figure formats, ``--json`` and
        start time, with ``timing`` = :meth:`timing` of ``seconds`` (the command's own stages)."""
        finish_result(
            result,
            out=self.out,
            formats=self.formats,
            json_out=not self.show,
            timing=self.timing(**seconds),
            t_start=self.t_start,
            summary=summary,
            **options,
        )

    def timing(self, **seconds: float) -> dict:
        """``{"model_s": …, **seconds}``, each rounded to the millisecond (the ``timing`` of
        :func:`finish_result`)."""
        return {"model_s": round(self.t_model, 3), **{k: round(v, 3) for k, v in seconds.items()}}


def opening(
    *,
    t_start: float | None = None,
    json_out: bool = False,
    out: Path | None = None,
    plots: bool = False,
    plot_format: Any = None,
    model: str | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    show: bool | None = None,
    layers: Any = None,
    heads: Any = None,
) -> Opening:
    """The opening lines of every command, after its own input checks: the figure options checked
    (:func:`check_plot_options`, which also checks ``--out``), ``layers`` and ``heads``
    (``--layer``, ``--head``) checked against the model's configuration (one line, before any weight
    loads), then ``model`` loaded on ``device`` in ``dtype`` behind a progress bar (none when
    ``model`` is None).  ``t_start`` (default: now) is the start of the command's ``total_s``;
    ``show`` defaults to ``not json_out``."""
    t0 = time.perf_counter() if t_start is None else t_start
    formats = check_plot_options(plots, plot_format, out)
    shown = (not json_out) if show is None else show
    if model is None:
        return Opening(t0, shown, formats, out=out)
    check_layers_heads(model, layers, heads)
    m, t_model = load_model_with_status(model, shown, device=device, dtype=dtype)
    return Opening(t0, shown, formats, m, t_model, out)


def save_result(result: Any, out: Path, figures: dict[str, bytes] | None = None) -> Path:
    """Write ``result`` and its figure files into ``out`` in one atomic step."""
    try:
        return result.save(out, extra_files=figures or None)
    except OSError as e:
        raise InvalidInputError(f"cannot write --out {str(out)!r}: {e.strerror or e}") from None


def write_result(
    result: Any, out: Path | None, bundle: Any, formats: list[str], show: bool
) -> tuple[Path | None, dict[str, bytes], float]:
    """Draw ``bundle``'s figure files (``--plots``) and save them with ``result`` into ``out``
    in one atomic step, each behind a status line.

    Returns ``(saved folder or None, {relative path: bytes}, seconds spent drawing)``.
    """
    figures: dict[str, bytes] = {}
    t_plots = 0.0
    if bundle is not None:
        with status("drawing figures …", show):
            t0 = time.perf_counter()
            figures = bundle.files(formats=formats)
            t_plots = time.perf_counter() - t0
    saved = None
    if out is not None:
        with status(f"saving to {out} …", show):
            saved = save_result(result, out, figures)
    return saved, figures, t_plots


def finish_result(
    result: Any,
    *,
    out: Path | None,
    formats: list[str],
    json_out: bool,
    timing: dict,
    t_start: float,
    summary: Callable[[dict], None],
    bundle: Callable[[Any], Any] | None = None,
    source: str | None = None,
    extra: dict | None = None,
    plots_s: bool = False,
    document: Callable[[Path | None, dict[str, bytes], dict], dict] | None = None,
) -> None:
    """The end of a command that computes one result: figures, save, then ``--json`` or the summary.

    Draws ``bundle(result)``'s figure files when ``formats`` asks for figures and saves them with
    ``result`` into ``out`` (:func:`write_result`); completes ``timing`` (the command's own entries,
    in seconds) with ``plots_s`` (when asked) and ``total_s`` since ``t_start``.  With ``json_out``
    it prints ``document(saved, figures, timing)``, by default the result's ``to_dict()`` without
    its provenance, after ``"attntopo"`` (the version) and before ``"source"`` (when given),
    ``extra``'s keys, ``"timing"``, ``"out"`` and ``"figures"``; otherwise it calls
    ``summary(timing)`` and says where the result was saved.
    """
    saved, figures, t_plots = write_result(
        result,
        out,
        bundle(result) if formats and bundle is not None else None,
        formats,
        not json_out,
    )
    if plots_s:
        timing = {**timing, "plots_s": round(t_plots, 3)}
    timing = {**timing, "total_s": round(time.perf_counter() - t_start, 3)}
    if json_out:
        if document is None:
            doc = {k: v for k, v in result.to_dict().items() if k != "provenance"}
            head = {
                "attntopo": __version__,
                **doc,
                **({} if source is None else {"source": source}),
                **(extra or {}),
            }
            print_json(json_doc(head, saved=saved, figures=figures, timing=timing))
        else:
            print_json(document(saved, figures, timing))
        return
    summary(timing)
    print_saved(saved, figures)


def finish_listing(
    name: str,
    rows: list,
    *,
    json_out: bool,
    timing: dict,
    t_start: float,
    summary: Callable[[dict], None],
    head: dict | None = None,
) -> None:
    """The end of a command that lists rows instead of computing a result (``words``, ``models``,
    ``query``): :func:`finish_result` with nothing to save or draw.  Its ``--json`` is the shared
    document: ``"attntopo"``, ``head``'s keys, the list under ``name``, ``"timing"`` (``timing``
    and ``total_s`` since ``t_start``), ``"out"`` (null) and ``"figures"`` (``[]``)."""

    def document(saved: Path | None, figures: dict[str, bytes], timing: dict) -> dict:
        return json_doc(
            {"attntopo": __version__, **(head or {}), name: rows},
            saved=saved,
            figures=figures,
            timing=timing,
        )

    finish_result(
        None,
        out=None,
        formats=[],
        json_out=json_out,
        timing=timing,
        t_start=t_start,
        summary=summary,
        document=document,
    )


# ============================================================================ entry
def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("ATTNTOPO_DEBUG", "") not in ("", "0")
    if not args:
        args = ["--help"]
    if debug:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    else:
        # third-party log lines (transformers' warnings) are not the CLI's output:
        # --debug shows them
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    command = plain_flags(with_debug(typer.main.get_command(app)))
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=not debug) as rec:
            if not debug:
                warnings.simplefilter("default")
            try:
                rc = command.main(args=args, prog_name="attntopo", standalone_mode=False)
            finally:
                caught = list(rec or [])
        code = rc if isinstance(rc, int) else EXIT_OK
        if code == EXIT_OK:
            _show_warnings(caught)
        return code
    except typer.TyperException as e:  # usage errors: bad option, missing value, bad choice …
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError" and ctx is not None:
            sys.stdout.write(ctx.get_help() + "\n")
            return EXIT_OK
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _error(e.format_message().replace("Value error, ", "") + where, debug)
        return int(getattr(e, "exit_code", EXIT_USAGE) or EXIT_USAGE)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return EXIT_INTERRUPTED
    except TextTooLongError as e:  # the library names no interface's switch: the CLI names its own
        who = e.model or "the model"
        _error(
            f"text has {e.n_tokens} tokens but {who} takes "
            f"at most {e.limit}: shorten it or pass --truncate"
            if e.n_tokens is not None and e.limit is not None
            else f"{e}: shorten it or pass --truncate",
            debug,
        )
        return EXIT_USAGE
    except AttntopoError as e:
        _error(str(e), debug)
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `attntopo … | head`: the reader left; stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # silence the exit flush
        except (OSError, ValueError):
            pass
        return EXIT_FAILURE
    except Exception as e:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        _error(f"unexpected {type(e).__name__}: {e} (run with --debug for the traceback)", debug)
        return EXIT_FAILURE


def with_debug(command: Any) -> Any:
    """Give ``command`` and each of its subcommands one ``--debug`` flag; returns ``command``.

    :func:`main` reads ``--debug`` (or ``ATTNTOPO_DEBUG``) from the command line before parsing,
    to show tracebacks and log messages from the first line on, so no command declares or reads
    it: the flag is here for parsing and ``--help`` only.  A command that reads a ``--debug`` of
    its own (``serve``: it also logs every request) keeps its declaration.
    """
    if not any("--debug" in getattr(p, "opts", ()) for p in getattr(command, "params", [])):
        command.params.append(_debug_option())
    for sub in getattr(command, "commands", {}).values():
        with_debug(sub)
    return command


def _debug_option() -> Any:
    """The click option typer makes of :data:`DebugOpt`, its value not passed to the command."""
    probe = typer.Typer()

    @probe.command()
    def _probe(debug: DebugOpt = False) -> None:  # pragma: no cover - never run
        pass

    option = typer.main.get_command(probe).params[0]
    option.expose_value = False
    return option


def plain_flags(command: Any) -> Any:
    """Show every on/off flag of ``command`` and its subcommands without a value placeholder.

    typer writes ``<bool>`` beside a flag in ``--help``, which reads as if it took a value
    (``--json true``); a flag takes none, so its placeholder is emptied.  Returns ``command``.
    """
    _plain_flags(
        command, typer.Context(command, info_name="attntopo", **(command.context_settings or {}))
    )
    return command


def _plain_flags(command: Any, ctx: Any) -> None:
    help_option = command.get_help_option(ctx)  # made (and cached) with the names ctx holds
    for param in [*getattr(command, "params", []), *([help_option] if help_option else [])]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for name, sub in getattr(command, "commands", {}).items():
        _plain_flags(
            sub, typer.Context(sub, parent=ctx, info_name=name, **(sub.context_settings or {}))
        )


def _error(message: str, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    sys.stderr.write(f"error: {one_line(message)}\n")
    sys.stderr.flush()


def _show_warnings(caught: list) -> None:
    """Repeat attntopo's own warnings as one ``warning:`` line each (others need --debug)."""
    pkg = str(Path(__file__).parent.parent)  # the attntopo package folder
    seen = set()
    for w in caught:
        if not str(getattr(w, "filename", "")).startswith(pkg):
            continue
        msg = one_line(str(w.message))
        if msg in seen:
            continue
        seen.add(msg)
        sys.stderr.write(f"warning: {msg}\n")
