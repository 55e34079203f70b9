"""What every command shares: the typer app, options,
input checks, model loading, output, exit codes.

The command modules (``_analyze``, ``_models``, …) register themselves on :data:`app`; :func:`main`
runs it and turns every :class:`~attntopo.errors.AttntopoError` into one ``error: …`` line and
exit code 2.  Nothing here imports torch: ``attntopo --help`` and ``attntopo models`` start fast.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, List, Optional, get_args, get_type_hints

import typer
from rich.console import Console

from .. import __version__
from .._validation import refused_path
from ..constants import ENGINE_NAMES, METRICS, PAPER_MODES, PLOT_FORMATS
from ..errors import AttntopoError, EmptyTextError, InvalidInputError, TextTooLongError
from ..io import META_FILE, json_safe
from ..models.describe import describe_alias
from ._table import data_table, render_table  # noqa: F401 - data_table: for the commands

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_TOP = 20

# choices shown in --help and checked while parsing (typer turns Enums into choices)
Metric = Enum("Metric", [(m, m) for m in METRICS], type=str)
EngineName = Enum("EngineName", [(e, e) for e in ENGINE_NAMES], type=str)
PlotFormat = Enum("PlotFormat", [(f, f) for f in PLOT_FORMATS], type=str)
PaperMode = Enum("PaperMode", [(p, p) for p in PAPER_MODES], type=str)

app = typer.Typer(
    name="attntopo",
    help=(
        "The shape of transformer attention: text → attention → Jensen–Shannon distances "
        "between tokens → Vietoris–Rips persistence diagrams."
    ),
    epilog=(
        "[bold]Examples[/bold]\n"
        '  attntopo analyze "Quantum information theory allows us to study attention"\n'
        "  attntopo analyze -f examples/quantum.txt --layer 1 --head 2 --plots --out q\n"
        "  attntopo analyze -f examples/quantum.txt -m smollm2 --json > q.json\n"
        "  attntopo models\n\n"
        "Run [bold]attntopo COMMAND --help[/bold] for the options of a command. "
        "Exit codes: 0 ok, 2 bad input, 1 failure."
    ),
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# stdout carries results (tables or JSON); stderr carries progress, warnings and errors
console = Console(highlight=False, soft_wrap=False, emoji=False)  # ':x:' in a text is not an emoji
err_console = Console(stderr=True, highlight=False, emoji=False)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"attntopo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_version_callback,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    pass


# ============================================================================ options
# Every option that two commands share is declared once, here, as an ``Annotated`` type: its
# names, metavar and help (SHARED_OPTIONS maps each to its parameter name).  A command registered
# with @command writes only the name and the default of a shared option, in the place it wants it
# in --help, and may word its help (helps=) or make its figures static (static_figures=):
#
#     @command("heads", helps={"out": "Save the head space into this folder."})
#     def heads_cmd(..., model=DEFAULT_MODEL, device="cpu", dtype="float32", ...,
#                   truncate=False, out=None, plots=False, plot_format=None, json_out=False): ...
#
# An annotated parameter keeps its own declaration: ``file: TextsFileOpt = None``, and a command's
# own options: ``Annotated[int, typer.Option("--plot-heads", …)] = 3``.
TextArg = Annotated[
    Optional[str],
    typer.Argument(metavar="TEXT", help="The text (or use --file).", show_default=False),
]
FileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--file",
        "-f",
        metavar="PATH",
        help="Read the text from a UTF-8 file ('-' reads stdin).",
        show_default=False,
    ),
]
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model: a packaged alias (minilm, smollm2), a Hugging Face id or a folder.",
    ),
]
DeviceOpt = Annotated[
    str,
    typer.Option(
        "--device",
        metavar="DEVICE",
        help="Where the model runs: cpu, cuda, cuda:N (a GPU number), mps, or auto (the first GPU "
        "when there is one, else cpu).",
    ),
]  # check_device checks it before the model loads
DtypeOpt = Annotated[
    str,
    typer.Option(
        "--dtype",
        metavar="DTYPE",
        help="The model's weights: float32, bfloat16 or float16 (attention rows are renormalized "
        "in float64 and analysed as float32).",
    ),
]  # check_dtype checks it against the device
LayersOpt = Annotated[
    Optional[List[str]],
    typer.Option(
        "--layer",
        "-l",
        metavar="L",
        help="Layer(s), 0-based; repeat or comma-separate (default: all).",
        show_default=False,
    ),
]  # read by parse_indices
HeadsOpt = Annotated[
    Optional[List[str]],
    typer.Option(
        "--head",
        metavar="H",
        help="Head(s) in each chosen layer (default: all).",
        show_default=False,
    ),
]  # read by parse_indices
MetricOpt = Annotated[Metric, typer.Option("--metric", help="Distance between attention rows.")]
MaxdimOpt = Annotated[
    int, typer.Option("--maxdim", metavar="D", help="Highest homology dimension: 0, 1 or 2.")
]  # check_maxdim checks it
DropSpecialOpt = Annotated[
    bool,
    typer.Option(
        "--drop-special", help="Remove special tokens (\\[CLS], \\[SEP], …) and renormalize rows."
    ),
]
TextsArg = Annotated[
    Optional[List[str]],
    typer.Argument(metavar="TEXT", help="The texts (or use --file).", show_default=False),
]  # read by read_texts
TextsFileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--file",
        "-f",
        metavar="PATH",
        help="Read the texts from a UTF-8 file, one per non-empty line ('-': stdin).",
        show_default=False,
    ),
]  # read by read_texts
TruncateOpt = Annotated[
    bool, typer.Option("--truncate", help="Cut texts longer than the model's context.")
]
OutOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--out",
        "-o",
        metavar="DIR",
        help="Save the result (and figures) into this folder, atomically.",
        show_default=False,
    ),
]  # check_out checks it before any work
PlotsOpt = Annotated[
    bool,
    typer.Option(
        "--plots",
        help="Also draw figures into DIR/figures (needs --out; --plot-format implies it).",
    ),
]
PlotFormatOpt = Annotated[
    Optional[List[PlotFormat]],
    typer.Option(
        "--plot-format",
        help="Figure format(s): png (default), svg, pdf. Repeatable.",
        show_default=False,
    ),
]  # check_plot_options checks it with --plots and --out


def static_plot_format_opt(what: str) -> Any:
    """The ``--plot-format`` option of a command whose figures are all static: png, svg or pdf
    (repeatable), checked while parsing; ``html`` is refused in one line naming ``what`` ("the
    depth figure is").  Use: ``plot_format: static_plot_format_opt("the depth figure is") =
    None``."""

    def static_format(value: Any) -> str:
        v = str(getattr(value, "value", value)).strip().lower()
        if v == "html":
            raise typer.BadParameter(f"html: {what} static; use png, svg or pdf")
        if v not in STATIC_PLOT_FORMATS:
            raise typer.BadParameter(f"{value!r} is not one of png, svg, pdf")
        return v

    return Annotated[
        Optional[List[str]],
        typer.Option(
            "--plot-format",
            metavar="<list[png|svg|pdf]>",
            help="png (default), svg, pdf. Repeatable.",
            show_default=False,
            parser=static_format,
        ),
    ]


STATIC_PLOT_FORMATS = tuple(f for f in PLOT_FORMATS if f != "html")  # figures without an html form
TopOpt = Annotated[
    int, typer.Option("--top", "-n", min=0, metavar="N", help="Show at most N rows (0: all).")
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON on stdout (and nothing else).")
]
NoDiagramsOpt = Annotated[
    bool,
    typer.Option(
        "--no-diagrams",
        help="With --json: leave out the persistence diagrams "
        "(births and deaths per head and dimension), for size.",
    ),
]  # see grid_points
JobsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        metavar="N",
        help="Worker processes for persistence.",
        show_default=False,
    ),
]
DEBUG_HELP = "Show tracebacks and log messages."
DebugOpt = Annotated[
    bool, typer.Option("--debug", help=DEBUG_HELP)
]  # a command that reads it (serve); see with_debug


# the shared options by parameter name: a command parameter without an annotation takes its
# declaration from here (``out=None`` is ``out: OutOpt = None``); one with an annotation keeps its
# own
SHARED_OPTIONS: dict[str, Any] = {
    "text": TextArg,
    "file": FileOpt,
    "model": ModelOpt,
    "device": DeviceOpt,
    "dtype": DtypeOpt,
    "layer": LayersOpt,
    "head": HeadsOpt,
    "metric": MetricOpt,
    "maxdim": MaxdimOpt,
    "drop_special": DropSpecialOpt,
    "truncate": TruncateOpt,
    "out": OutOpt,
    "plots": PlotsOpt,
    "plot_format": PlotFormatOpt,
    "top": TopOpt,
    "json_out": JsonOpt,
    "no_diagrams": NoDiagramsOpt,
    "n_jobs": JobsOpt,
}


def command(
    *args: Any,
    group: Any = None,
    helps: dict[str, str] | None = None,
    static_figures: str | None = None,
    exclude_settings: tuple[str, ...] = (),
    **kwargs: Any,
) -> Callable:
    """Register a command on ``group`` (default: :data:`app`) like
    ``group.command(*args, **kwargs)``, from one mould:

    - a parameter written without an annotation (``truncate=False, out=None, json_out=False``)
      is the shared option of that name (:data:`SHARED_OPTIONS`: names, metavar, help), in the
      place the command gives it, with the help ``helps[name]`` when given (the command's own
      wording); an annotated one keeps its own declaration;
    - a parameter ``feature_settings=None`` stands for one option per feature setting that
      declares one (:class:`attntopo.features.FeatureSettings`' fields: ``--sets``,
      ``--layer``, ``--metric``, …, but those in ``exclude_settings``), in its place; the
      command gets them parsed, as one dict of keywords (None: not given), and
      ``helps[name]`` words one for the command;
    - ``static_figures`` ("the depth figure is"): the command's figures have no html form, so its
      ``plot_format`` is :func:`static_plot_format_opt`'s (png, svg, pdf; html refused in one line);
    - ``--debug`` is not declared here: :func:`main` gives every command one (:func:`with_debug`)
      and reads it itself; a command that reads it too (``serve``: request logs) declares it.

    Returns the function as written."""
    target = app if group is None else group

    def register(f: Callable) -> Callable:
        sig = inspect.signature(f)
        hints = get_type_hints(f, include_extras=True)
        params = []
        settings: dict[str, Any] = {}  # parameter name -> (setting name, its CliOption)
        for p in sig.parameters.values():
            if p.name in hints:
                params.append(p.replace(annotation=hints[p.name]))
            elif p.name == "feature_settings":
                for name, cli in setting_options(exclude_settings).items():
                    settings[f"setting__{name}"] = (name, cli)
                    params.append(_setting_parameter(name, cli, (helps or {}).get(name)))
            elif p.name in SHARED_OPTIONS:
                params.append(
                    p.replace(
                        annotation=_shared_option(p.name, (helps or {}).get(p.name), static_figures)
                    )
                )
            else:
                raise TypeError(
                    f"{f.__name__}: parameter {p.name!r} has no annotation and is no shared option"
                )
        unknown = (
            set(helps or {})
            - {p.name for p in sig.parameters.values() if p.name not in hints}
            - {name for name, _ in settings.values()}
        )
        if unknown:
            raise TypeError(
                f"{f.__name__}: helps for {sorted(unknown)}, which are no shared option of it"
            )

        @functools.wraps(f)
        def run(*a: Any, **kw: Any) -> Any:
            if settings:
                kw["feature_settings"] = {
                    name: _parse_setting(kw.pop(key), cli) for key, (name, cli) in settings.items()
                }
            return f(*a, **kw)

        run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        target.command(*args, **kwargs)(run)
        return f

    return register


def setting_options(exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The command-line option of each feature setting that declares one, by setting name
    (:class:`attntopo.features.FeatureSettings`' fields; read without importing torch)."""
    from dataclasses import fields

    from ..features import FeatureSettings

    return {
        f.name: f.metadata["cli"]
        for f in fields(FeatureSettings)
        if f.metadata["cli"] is not None and f.name not in exclude
    }


#: The typer type of each kind of setting option (:class:`attntopo.features.CliOption`).
_SETTING_TYPES = {
    "names": Optional[List[str]],
    "numbers": Optional[List[str]],
    "indices": Optional[List[str]],
    "int": Optional[int],
    "number": Optional[float],
    "choice": Optional[str],
    "flag": bool,
}


def _setting_parameter(name: str, cli: Any, help: str | None) -> inspect.Parameter:
    """The typer parameter of a feature setting's option (not given: None, a flag False)."""
    option = typer.Option(
        *cli.flags, metavar=cli.metavar or None, show_default=False, help=help or cli.text()
    )
    return inspect.Parameter(
        f"setting__{name}",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=False if cli.kind == "flag" else None,
        annotation=Annotated[_SETTING_TYPES[cli.kind], option],
    )


def _parse_setting(value: Any, cli: Any) -> Any:
    """A setting's option as the keyword's value (None when not given): lists comma-split,
    numbers read (a word that is none is one line naming the option), a flag True or None."""
    flag = cli.flags[0]
    if cli.kind == "flag":
        return True if value else None
    if value is None or value == []:
        return None
    if cli.kind == "indices":
        return parse_indices(value, flag)
    if cli.kind in ("names", "numbers"):
        words = [x.strip() for v in value for x in str(v).split(",") if x.strip()]
        if cli.kind == "names":
            return tuple(words)
        try:
            return tuple(float(x) for x in words)
        except ValueError:
            raise InvalidInputError(
                f"{flag} expects numbers such as 0.1 or 0.1,0.5; got {', '.join(value)!r}"
            ) from None
    return value


def _shared_option(name: str, help: str | None, static_figures: str | None) -> Any:
    """The declaration of the shared option ``name`` (:data:`SHARED_OPTIONS`), with ``help`` instead
    of its own when given; ``plot_format`` of a command whose figures are static
    (``static_figures``) is :func:`static_plot_format_opt`'s."""
    option = SHARED_OPTIONS[name]
    if name == "plot_format" and static_figures is not None:
        option = static_plot_format_opt(static_figures)
    if help is None:
        return option
    return Annotated[get_args(option)[0], with_help(option, help)]  # type: ignore[valid-type]


def with_help(option: Any, help: str) -> Any:
    """The typer option (or argument) of the ``Annotated`` type ``option``, with ``help`` instead
    of its own help: ``Annotated[str, with_help(ModelOpt, "…")]``."""
    info = copy.copy(get_args(option)[1])
    info.help = help
    return info


# ============================================================================ input
def parse_indices(values: Optional[List[str]], option: str) -> list[int] | None:
    """``--layer 0 --layer 2,5 --layer -1`` → ``[0, 2, 5, -1]`` (None when not given)."""
    if not values:
        return None
    out: list[int] = []
    for v in values:
        for part in str(v).split(","):
            part = part.strip()
            if not re.fullmatch(r"-?\d+", part):
                raise InvalidInputError(
                    f"{option} expects integers such as 0, -1 or 0,2,5; got {v!r}"
                )
            out.append(int(part))
    return out


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
            data, source = sys.stdin.read(), "stdin"
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
    return text, "argument"


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


# ============================================================================ output
def one_line(msg: str) -> str:
    return re.sub(r"\s*\n\s*", " ", str(msg)).strip()


def fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return str(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isinf(f):
        return "∞" if f > 0 else "-∞"
    if math.isnan(f):
        return "nan"
    if float(f).is_integer() and abs(f) < 1e6 and digits == 0:
        return str(int(f))
    return f"{f:.{digits}f}"


def num(x: Any) -> str:
    """A table number in 5 characters: 0.318, 8.111, 12.60, 123.4."""
    f = float(x)
    if not math.isfinite(f):
        return fmt(f)
    a = abs(f)
    return (
        f"{f:.3f}" if a < 10 else f"{f:.2f}" if a < 100 else f"{f:.1f}" if a < 1000 else f"{f:.3g}"
    )


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def print_table(table: Any) -> None:
    """Print a table of values (built with :func:`data_table`) on stdout: every title, header and
    cell as it is (never markup or emoji), never cut, at least one space between columns; a table
    too wide for the terminal (``COLUMNS``; 80 in a pipe) loses its padding, then wraps its word
    columns, then is printed one ``name  value`` line per column (:mod:`._table`)."""
    render_table(table, console)


def esc(s: str) -> str:
    """Escape rich markup in user data ([CLS] would otherwise vanish as a style tag)."""
    from rich.markup import escape

    return escape(str(s))


def print_json(doc: Any) -> None:
    """The whole stdout of ``--json``: one JSON document (NaN/inf made JSON-safe)."""
    sys.stdout.write(json.dumps(json_safe(doc), ensure_ascii=False, indent=1) + "\n")
    sys.stdout.flush()


def diagram_points(dgm: Any, **where: Any) -> dict:
    """One persistence diagram in ``--json``: where it comes from (``layer``, ``head``, ``t``, …),
    then :meth:`Diagram.to_dict` with its points — ``points[d]`` is the list of ``[birth, death]``
    of dimension ``d``, ``death`` null for a class that never dies (``threshold`` is the string
    ``"inf"`` when the filtration was not cut).  :meth:`Diagram.from_dict` reads it back."""
    return {**where, **dgm.to_dict(include_points=True)}


def grid_points(grid: Any, layers: Any, heads: Any, **where: Any) -> list[dict]:
    """Every diagram of a ``grid[i][j]``
    (layer position ``i``, head position ``j``), layer by layer."""
    return [
        diagram_points(grid[i][j], **where, layer=int(lay), head=int(hd))
        for i, lay in enumerate(layers)
        for j, hd in enumerate(heads)
    ]


def json_doc(
    doc: dict,
    *,
    source: str | None = None,
    saved: Path | None = None,
    figures: dict[str, bytes] | None = None,
    **tail: Any,
) -> dict:
    """What ``--json`` prints: a result's ``to_dict()`` with the command's additions — where
    the text came from (after the settings), then ``tail`` (timing, …), the saved folder and
    the figure files written."""
    out: dict = {}
    for k, v in doc.items():
        out[k] = v
        if k == "settings" and source is not None:
            out["source"] = source
    out.update(tail)
    out["out"] = None if saved is None else str(saved)
    if figures is not None:
        out["figures"] = sorted(figures)
    return out


def model_line(m: Any, extra: str = "") -> str:
    """``attntopo 0.1.0 · model minilm (6 layers × 12 heads, bidirectional)`` + ``extra``."""
    kind = "causal" if m.causal else "bidirectional"
    return (
        f"[bold]attntopo {__version__}[/bold] · model [bold]{esc(m.name)}[/bold] "
        f"({m.n_layers} layers × {m.n_heads} heads, {kind}{where_line(m)}){extra}"
    )


def where_line(m: Any) -> str:
    """``", bfloat16 on cuda:0"`` for a model not in float32 on the CPU, else ``""``."""
    dev, dt = str(getattr(m, "device", "cpu")), str(getattr(m, "dtype", "float32"))
    return "" if (dev, dt) == ("cpu", "float32") else f", {dt} on {dev}"


def print_saved(saved: Path | None, figures: dict[str, bytes] | None = None) -> None:
    """Where the result went and how to load it back (nothing when not saved)."""
    if saved is None:
        return
    n = len(figures or {})
    extra = f" with {n} figure file{'s' if n != 1 else ''} in figures/" if n else ""
    console.print(
        f"saved to [bold]{esc(saved)}[/bold]{extra}; load with "
        f"attntopo.load_result({esc(repr(str(saved)))})"
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
