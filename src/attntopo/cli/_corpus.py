"""``attntopo corpus``: every text of a file into a resumable Parquet feature store."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import __version__
from ..constants import DEFAULT_MODEL, ENGINE_NAMES
from ._common import check_layers_heads
from ._options import JobsOpt, command, nonblank_path
from ._output import console, err_console, esc, json_doc, print_json

_CORPUS_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo corpus texts.txt --out store\n"
    "  attntopo corpus reviews.csv --text-column review --id-column id --out store --sets "
    "js,graph\n  cat texts.txt | attntopo corpus - --out store --keep-diagrams\n"
    "  attntopo corpus pairs.jsonl --text-column prompt --answer-column answer --sets prompt "
    "--out scores\n  attntopo query store \"SELECT count(*) FROM corpus WHERE status = 'ok'\"\n\n"
    "Run the same command again to continue an interrupted run: batches already in STORE are "
    "kept, the rest computed; every text ends up in STORE exactly once. A run with other settings "
    "or another input on an existing STORE stops with one line naming the difference "
    "(--new-store starts it over; --append adds a new input's texts to it). docs/corpus.md has "
    "the store layout and SQL examples."
)


def _sets_help() -> str:
    """``--sets``' help, from the registry (``attntopo.features.FEATURE_SETS``; read without
    importing torch)."""
    from ..corpus import DEFAULT_CORPUS_SETS
    from ..features import FEATURE_SETS

    texts = [
        n + (" (default)" if n in DEFAULT_CORPUS_SETS else "")
        for n, s in FEATURE_SETS.items()
        if s.input == "text"
    ]
    return (
        f"Feature sets, comma-separated: {', '.join(texts)}; {', '.join(_pair_sets())} with "
        "--answer-column."
    )


def _pair_sets() -> list[str]:
    """The sets that need (prompt, answer) pairs, from the registry."""
    from ..features import FEATURE_SETS

    return [n for n, s in FEATURE_SETS.items() if s.input == "pair"]


def _check_engine(engine: Optional[str]) -> None:
    """``--engine`` is the persistence engine; ``local``/``ray`` there get one line naming
    ``--backend`` (where the corpus runs)."""
    from ..corpus import BACKENDS
    from ..errors import InvalidInputError

    if engine in BACKENDS:
        raise InvalidInputError(
            f"--engine {engine}: --engine is the persistence engine "
            f"({', '.join(ENGINE_NAMES)}); where the corpus runs is --backend {engine}"
        )


@command(
    "corpus",
    epilog=_CORPUS_EPILOG,
    exclude_settings=("min_persistence",),
    helps={
        "sets": _sets_help(),
        "engine": f"Persistence engine: {', '.join(ENGINE_NAMES)} "
        "(default: the fastest installed).",
    },
)
def corpus_cmd(
    input: Annotated[
        str,
        typer.Argument(
            metavar="INPUT",
            show_default=False,
            help="Text file (one text per line), .jsonl, .csv/.tsv or .parquet; '-' reads stdin.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            parser=nonblank_path,
            metavar="STORE",
            show_default=False,
            help="The store folder: new, empty, or one to continue.",
        ),
    ],
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    feature_settings=None,  # --sets, --layer, --head, --metric, … (FeatureSettings' options)
    keep_diagrams: Annotated[
        bool,
        typer.Option(
            "--keep-diagrams",
            help="Also store every head's diagram (H0, H1) of the token distances (--metric).",
        ),
    ] = False,
    keep_text: Annotated[
        bool,
        typer.Option(
            "--keep-text/--no-keep-text",
            help="Store each text itself (column text) beside "
            "its SHA-256; --no-keep-text keeps the hash only.",
        ),
    ] = True,
    backend: Annotated[
        Optional[str],
        typer.Option(
            "--backend",
            metavar="local|ray",
            help="Where the corpus runs: this machine (default) or Ray Data (actor pool).",
        ),
    ] = None,
    ray_address: Annotated[
        Optional[str],
        typer.Option(
            "--ray-address",
            metavar="ADDRESS",
            show_default=False,
            help="Join this Ray cluster (--backend ray); default: start a local Ray.",
        ),
    ] = None,
    gpus_per_actor: Annotated[
        Optional[float],
        typer.Option(
            "--gpus-per-actor",
            metavar="G",
            show_default=False,
            help="--backend ray: GPUs Ray gives each actor (0.5 shares a GPU between two); each "
            "actor loads the model on its GPU.",
        ),
    ] = None,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size",
            "-b",
            min=1,
            metavar="N",
            help="Texts per batch and part file.",
        ),
    ] = 32,
    on_long: Annotated[
        str,
        typer.Option(
            "--on-long",
            help="Texts longer than the model's context: truncate, skip or error.",
        ),
    ] = "truncate",
    text_column: Annotated[
        str,
        typer.Option(
            "--text-column",
            metavar="NAME",
            help="The text's column (JSONL, CSV, Parquet).",
        ),
    ] = "text",
    id_column: Annotated[
        Optional[str],
        typer.Option(
            "--id-column",
            metavar="NAME",
            show_default=False,
            help="Column of unique ids (default: row number and text hash).",
        ),
    ] = None,
    answer_column: Annotated[
        Optional[str],
        typer.Option(
            "--answer-column",
            metavar="NAME",
            show_default=False,
            help="Read (prompt, answer) pairs: the text column is the prompt, this column its "
            f"answer (JSONL, CSV, Parquet); needed by --sets {' and '.join(_pair_sets())}.",
        ),
    ] = None,
    input_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto (by suffix), text, jsonl, csv, tsv or parquet.",
        ),
    ] = "auto",
    encoding: Annotated[
        str, typer.Option("--encoding", help="Encoding of text, JSONL and CSV input.")
    ] = "utf-8",
    new_store: Annotated[
        bool,
        typer.Option(
            "--new-store",
            help="Remove an existing store at STORE and start over.",
        ),
    ] = False,
    append: Annotated[
        bool,
        typer.Option(
            "--append",
            help="Add INPUT's texts to the existing STORE (same settings): ids it holds are "
            "skipped; the same command again continues an interrupted append.",
        ),
    ] = False,
    jobs: JobsOpt = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar or log lines.")
    ] = False,
    log_every: Annotated[
        int,
        typer.Option(
            "--log-every",
            min=1,
            metavar="N",
            help="Without a terminal: one progress line on stderr every N batches.",
        ),
    ] = 10,
    json_out=False,
) -> None:
    """Compute topological features of every text of INPUT into a resumable Parquet store.

    Progress goes to stderr (a bar on a terminal, else a line every --log-every batches); the
    final counts to stdout.
    """
    from ..corpus import run

    t0 = time.perf_counter()
    fs = dict(feature_settings)
    _check_engine(fs["engine"])
    handler = _log_lines() if not quiet and not json_out and not err_console.is_terminal else None
    # before the input is read or the weights load
    check_layers_heads(model, fs["layers"], fs["heads"])
    try:
        store = run(
            input,
            out,
            model=model,
            keep_diagrams=keep_diagrams,
            keep_text=keep_text,
            backend=backend,
            batch_size=batch_size,
            on_long=on_long,
            text_column=text_column,
            id_column=id_column,
            answer_column=answer_column,
            input_format=input_format,
            encoding=encoding,
            new_store=new_store,
            append=append,
            n_jobs=jobs,
            ray_address=ray_address,
            device=device,
            dtype=dtype,
            gpus_per_actor=gpus_per_actor,
            progress=False if (quiet or json_out) else None,
            log_every=log_every,
            **fs,
        )
    except KeyboardInterrupt:
        _interrupted(out)
    finally:
        if handler is not None:
            logging.getLogger("attntopo.corpus").removeHandler(handler)
    _print_counts(store, time.perf_counter() - t0, json_out)


def _log_lines() -> logging.Handler:
    """Progress lines of the run on stderr (without a terminal), the final counts left to
    stdout; the caller removes the handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(lambda record: not getattr(record, "final", False))  # stdout has the counts
    logger = logging.getLogger("attntopo.corpus")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


def _print_counts(store: Any, seconds: float, json_out: bool) -> None:
    """The final counts on stdout: one line, or the JSON document."""
    from ..corpus import ERRORS

    c = store.counts()
    if json_out:
        # the shared document (finish_result's keys): the store is what the command wrote
        print_json(
            json_doc(
                {
                    "attntopo": __version__,
                    "store": str(store.path),
                    "counts": c,
                    "already_stored": store.appended["already"] if store.appended else 0,
                    "settings": store.settings.to_manifest(),
                    "errors": str(store.path / ERRORS),
                },
                saved=store.path,
                figures={},
                timing={"corpus_s": round(seconds, 3), "total_s": round(seconds, 3)},
            )
        )
        return
    already = (
        f", {store.appended['already']} already in the store (skipped)"
        if getattr(store, "appended", None)
        else ""
    )
    failed = f"{c['failed']} failed" + (
        f" (reasons in {esc(store.path / ERRORS)})" if c["failed"] or c["skipped_long"] else ""
    )
    console.print(
        f"corpus: {c['ok']} done, {c['skipped_empty']} skipped (empty), {c['skipped_long']} "
        f"skipped (too long), {c['truncated']} truncated, "
        f"{failed}{already} → {esc(store.path)} · {seconds:.1f} s",
        soft_wrap=True,
    )


def _interrupted(out: Path) -> None:
    """Ctrl-C: one line with what is stored and the command that continues, exit 130."""
    import shlex

    from ..corpus import open_store

    try:
        c = open_store(out).counts()
        what = f"{c['done']} of {c['total']} texts are stored in {out}"
    except Exception:  # noqa: BLE001 - interrupted before the store was made
        what = "nothing is stored yet"
    again = (
        shlex.join(["attntopo", *sys.argv[1:]])
        if sys.argv[1:2] == ["corpus"]
        else "the same command"
    )
    sys.stderr.write(f"corpus: interrupted; {what}; continue with: {again}\n")
    raise typer.Exit(130)
