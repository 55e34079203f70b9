"""The command scaffold: the typer :data:`app` every command registers on, and every option
that two commands share, declared once as an ``Annotated`` type, with :func:`command`, which
gives a command its shared options by parameter name.  Nothing here imports torch.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, List, Optional, get_args, get_type_hints

import typer

from .. import __version__
from ..constants import ENGINE_NAMES, METRICS, PAPER_MODES, PLOT_FORMATS
from ..errors import InvalidInputError

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


def nonblank_path(value: str) -> Path:
    """The ``parser`` of a path option: a blank value (``--out ""``, an unset variable) is a usage
    error, not ``Path("")``, the current folder, which an atomic write replaced when empty."""
    if not str(value).strip():
        raise typer.BadParameter(f"{value!r} is empty: give a path")
    if "\0" in str(value):  # no file system takes it
        raise typer.BadParameter(f"{value!r} holds a null byte: give a path")
    return Path(value)


OutOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--out",
        "-o",
        parser=nonblank_path,
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
    - ``--debug`` is not declared here: :func:`~attntopo.cli._common.main` gives every command
      one (:func:`~attntopo.cli._common.with_debug`) and reads it itself; a command that reads
      it too (``serve``: request logs) declares it.

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


#: The typer type of each kind of setting option (:class:`attntopo.features._settings.CliOption`).
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
        words = comma_words(value, flag, "0.1,0.5" if cli.kind == "numbers" else "a,b")
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


def comma_words(values: List[str], flag: str, example: str) -> list[str]:
    """``--x a,b --x c`` → ``["a", "b", "c"]`` (items stripped; a value given blank adds none).

    An empty item between commas (``"0.1,,0.2"``, ``"js,"``) is a slip, not a shorter list: one
    line naming the value, as ``--layer 1,,2`` is; ``example`` is shown when nothing else is left.
    """
    out: list[str] = []
    for v in values:
        parts = [x.strip() for x in str(v).split(",")]
        if str(v).strip() and "" in parts:
            meant = ",".join(x for x in parts if x) or example
            raise InvalidInputError(
                f"{flag} has an empty item in {v!r}: separate the values by single commas, "
                f"such as {meant!r}"
            )
        out += [x for x in parts if x]
    return out


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
