"""``attntopo context``: permutation equivariance,
contextual-mapping margins and contextuality per layer."""

from __future__ import annotations

import time
from typing import Annotated, List, Optional

import typer

from ..constants import DEFAULT_MODEL
from ..errors import EmptyTextError, InvalidInputError
from ._common import opening, progress_bar, read_texts
from ._options import TextsFileOpt, command
from ._output import console, esc, model_line, print_table
from ._table import data_table

_CONTEXT_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo context "The cat sat on the mat." "A dog slept by the door." "Rain fell all day."\n'
    "  attntopo context --word bank                       (attntopo's eight 'bank' sentences)\n"
    "  attntopo context --word light --fortunes --contexts 12 -m smollm2 --json\n"
    "  attntopo context -f texts.txt --out ctx --plots --plot-format svg\n\n"
    "Per depth (0 = embeddings, l+1 = after layer l): the relative permutation-equivariance error "
    "‖f(XP) − f(X)P‖/‖f(X)‖ of each layer alone and of the encoder up to it, with the model's "
    "positional information on and off (position embeddings zeroed; rotary made the identity and, "
    "in causal models, the causal mask removed; causal models also without rotary but with the "
    "mask); special tokens stay in place. Contextual-mapping margins (Yun et al. 2020) within and "
    "across texts, Ethayarajh's self-similarity, intra-sentence similarity and anisotropy (3 or "
    "more texts for the cross-text measures). With --word: the word's attention rows across its "
    "contexts (JS over offsets and over token types) and its hidden states. docs/theory.md §3."
)


def _texts(
    texts: Optional[List[str]],
    file: Optional[str],
    word: Optional[str],
    fortunes: bool,
    contexts: int,
    seed: int,
) -> tuple[list[str], str]:
    """The texts (arguments, lines of --file, or the word's contexts) and where they came from."""
    from ..theory import word_contexts

    if texts and file is not None:
        raise InvalidInputError("give the texts either as arguments or with --file, not both")
    if word is not None and not word.strip():  # before the model loads (the library's: after)
        raise EmptyTextError("--word is empty or only whitespace: give one word, e.g. --word bank")
    if fortunes and word is None:
        raise InvalidInputError(
            "--fortunes takes the contexts of --word from Debian's fortunes: give --word too"
        )
    if not texts and file is None:
        if word is None:
            raise InvalidInputError(
                "no text given: pass TEXT arguments, --file PATH (one text per line) or --word W"
            )
        source = "fortunes" if fortunes else "builtin"
        return word_contexts(
            word, k=contexts, source=source, seed=seed
        ), f"{source} contexts of {word!r}"
    if fortunes:
        raise InvalidInputError("--fortunes replaces the texts: give either texts or --fortunes")
    return read_texts(texts, file)


@command(
    "context", epilog=_CONTEXT_EPILOG, no_args_is_help=False, static_figures="the context figure is"
)
def context_cmd(
    texts: Annotated[
        Optional[List[str]],
        typer.Argument(
            metavar="TEXT...",
            show_default=False,
            help="The texts (or use --file, or --word alone).",
        ),
    ] = None,
    file: TextsFileOpt = None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    word: Annotated[
        Optional[str],
        typer.Option(
            "--word",
            "-w",
            metavar="W",
            show_default=False,
            help="Study this word across the texts that contain it (at least 3); "
            "without texts: its built-in contexts (bank, light, play).",
        ),
    ] = None,
    fortunes: Annotated[
        bool, typer.Option("--fortunes", help="Take --word's contexts from Debian's fortunes.")
    ] = False,
    contexts: Annotated[
        int,
        typer.Option(
            "--contexts",
            min=3,
            help="How many contexts --word takes (no texts given).",
        ),
    ] = 8,
    permutations: Annotated[
        int, typer.Option("--permutations", min=1, help="Random permutations per text.")
    ] = 3,
    equivariance_texts: Annotated[
        Optional[int],
        typer.Option(
            "--equivariance-texts",
            min=0,
            show_default=False,
            help="Measure equivariance on the first N texts only (default: all; 0: none).",
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            min=0,
            help="Seed of the permutations (and of the fortunes drawn).",
        ),
    ] = 0,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    json_out=False,
) -> None:
    """Permutation equivariance, contextual-mapping margins and contextuality of a model, per layer.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    from ..theory import context

    body, source = _texts(texts, file, word, fortunes, contexts, seed)
    run = opening(
        json_out=json_out,
        out=out,
        plots=plots,
        plot_format=plot_format,
        model=model,
        device=device,
        dtype=dtype,
    )
    m, show = run.model, run.show
    with progress_bar(f"context · {len(body)} text{'s' if len(body) != 1 else ''}", show) as bar:
        t0 = time.perf_counter()
        r = context(
            body,
            m,
            word=word,
            n_permutations=permutations,
            seed=seed,
            equivariance_texts=equivariance_texts,
            truncate=truncate,
            progress=bar,
        )
        t_c = time.perf_counter() - t0
    run.finish(
        r,
        seconds={"context_s": t_c},
        bundle=_bundle,
        source=source,
        summary=lambda timing: _print_summary(r, m, source, timing),
    )


def _bundle(r):
    from ..plots.theory_context import context_bundle

    return context_bundle(r)


def _cell(v: float) -> str:
    if v != v:
        return "–"
    return f"{v:.1e}" if abs(v) < 0.01 and v != 0 else f"{v:.3f}"


def _table(cols, heads: list[tuple[str, str]], title: str) -> None:
    table = data_table(title)
    for h, _ in heads:
        table.add_column(h, justify="right", no_wrap=True)
    for row in range(cols.n_rows):
        table.add_row(
            str(int(cols["depth"][row])), *[_cell(float(cols[name][row])) for _, name in heads[1:]]
        )
    print_table(table)


def _print_summary(r, m, source: str, timing: dict) -> None:
    console.print(model_line(m))
    console.print(
        f"{len(r.texts)} text{'s' if len(r.texts) != 1 else ''} from {esc(source)} "
        f"({int(r.n_tokens.min())}–{int(r.n_tokens.max())} tokens) · {esc(r.positional)} · "
        f"{timing['context_s']:.1f} s"
    )
    cols = r.summary()
    short = {"positions": "on", "no_positions": "off", "no_rotary_causal": "mask"}
    if r.layer_error.size:
        eq = (
            [("depth", "depth")]
            + [(f"layer {short[c]}", f"layer_error_{c}") for c in r.conditions]
            + [(f"enc {short[c]}", f"encoder_error_{c}") for c in r.conditions]
        )
        _table(cols, eq, "equivariance error per depth (0 = embeddings, l+1 = after layer l)")
    ctx = [("depth", "depth"), ("margin in", "margin_within_rel")]
    if r.n_cross_pairs:
        ctx += [
            ("margin x", "margin_cross_rel"),
            ("self-sim", "self_similarity"),
            ("aniso", "anisotropy"),
        ]
    ctx += [("intra", "intra_similarity")]
    _table(cols, ctx, "margins and contextuality per depth")
    if r.word is not None:
        _table(
            cols,
            [
                ("depth", "depth"),
                ("JS offsets", "word_js_relative"),
                ("JS types", "word_js_vocabulary"),
                ("entropy spread", "word_entropy_spread"),
                ("1 − cos", "word_hidden_cosine"),
            ],
            f"{r.word!r} in {len(r.word_texts)} contexts per depth",
        )
    notes = [
        "layer/enc: ‖f(XP) − f(X)P‖/‖f(X)‖ (mean over texts and permutations) of the layer alone "
        "/ the encoder up to it, positions on / off"
        + (" / rotary off with the causal mask kept (mask)" if r.causal else "")
    ]
    notes.append(
        "margins: min token distance / mean distance, within texts (min over texts)"
        + (
            f" and across {r.n_cross_pairs} text pairs"
            if r.n_cross_pairs
            else " (cross-text measures need 3 or more texts)"
        )
    )
    if r.word is not None:
        notes.append(
            f"{r.word!r}: mean JS distance of its attention rows over offsets / token types and "
            "std of their normalized entropy (means over heads), "
            "1 − cos of its hidden states, over context pairs"
        )
    console.print("; ".join(notes) + ". --json for every text, permutation and head.")
