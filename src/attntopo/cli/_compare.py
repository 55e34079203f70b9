"""``attntopo compare``: two texts head by head
(shared tokens, scales, shared simplices, diagram distances)."""

from __future__ import annotations

import contextlib
import re
import time
from typing import Annotated, Iterator, List, Optional

import typer

from .. import __version__
from .._validation import check_dim, check_maxdim, check_scale
from ..constants import DEFAULT_MODEL
from ..errors import EmptyTextError, InvalidInputError, OutOfRangeError
from ..words import split_words
from ._common import opening, progress_bar
from ._options import DEFAULT_TOP, Metric, command, parse_indices
from ._output import console, esc, grid_points, json_doc, model_line, num, print_table
from ._table import data_table

_COMPARE_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo compare "Quantum information theory allows us to study attention" '
    '"Classical information theory studies entropy"\n'
    '  attntopo compare "TEXT A" "TEXT B" --layer 2 --head 4 --scale 0.2 '
    '--highlight "information theory"\n'
    '  attntopo compare "TEXT A" "TEXT B" --plots --plot-format png --plot-format html --out cmp\n'
    '  attntopo compare "Information theory studies entropy" '
    "\"La théorie de l'information étudie l'entropie\" --align 0:5 --align 1:1 --json\n\n"
    "Shared tokens are matched by word (case-insensitive, subwords grouped) and occurrence; "
    "--align I:J pairs word I of TEXT A with word J of TEXT B instead (words: runs of letters/"
    "digits and single punctuation marks, 0-based; [bold]attntopo words TEXT[/bold] lists them). "
    "Without --scale the scale is chosen per head (median of both texts' H0 deaths). A saved "
    "result loads back with [bold]attntopo.load_result(DIR)[/bold]."
)


_HELPS = {  # the shared options in this command's words
    "model": "Model: a packaged alias, a Hugging Face id (a "
    "multilingual one for translations) or a folder.",
    "out": "Save the comparison (and figures) into this folder.",
    "plot_format": "png (default), svg, pdf; html writes one interactive report.html.",
    "top": "Show at most N heads (0: all). JSON holds all.",
}


@command("compare", epilog=_COMPARE_EPILOG, no_args_is_help=True, helps=_HELPS)
def compare_cmd(
    text_a: Annotated[
        str,
        typer.Argument(
            metavar="TEXT_A",
            help="The first text.",
            show_default=False,
        ),
    ],
    text_b: Annotated[
        str,
        typer.Argument(
            metavar="TEXT_B",
            help="The second text.",
            show_default=False,
        ),
    ],
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer=None,
    head=None,
    metric="jensen_shannon",
    maxdim=1,
    scale: Annotated[
        Optional[float],
        typer.Option(
            "--scale",
            metavar="SCALE",
            help="Scale ε at which shared edges/triangles are compared, >= 0 (default: per head, "
            "the median H0 death of both texts). The filtration itself is never cut.",
            show_default=False,
        ),
    ] = None,
    highlight: Annotated[
        Optional[List[str]],
        typer.Option(
            "--highlight",
            metavar="WORDS",
            help="Shared words to report pair by pair and "
            'highlight in figures, e.g. "information theory".',
            show_default=False,
        ),
    ] = None,
    align: Annotated[
        Optional[List[str]],
        typer.Option(
            "--align",
            metavar="I:J",
            help="Pair word I of TEXT A with word J of TEXT B (repeat or comma-separate) instead "
            "of string matching; attntopo words TEXT numbers the words.",
            show_default=False,
        ),
    ] = None,
    align_tokens: Annotated[
        bool,
        typer.Option(
            "--align-tokens",
            help="--align gives token positions, not words.",
        ),
    ] = False,
    include_special: Annotated[
        bool,
        typer.Option(
            "--include-special",
            help="Also match special tokens (\\[CLS] with \\[CLS], …).",
        ),
    ] = False,
    drop_special=False,
    truncate=False,
    dim: Annotated[
        Optional[int],
        typer.Option(
            "--dim",
            metavar="D",
            help="Homology dimension used to rank heads (default: the highest one in which no "
            "distance is shared by more than half of the heads; "
            "H0 on short texts, where most H1 distances are 0).",
            show_default=False,
        ),
    ] = None,
    out=None,
    plots=False,
    plot_format=None,
    plot_heads: Annotated[
        int,
        typer.Option(
            "--plot-heads",
            min=0,
            metavar="N",
            help="Per-head figures for the N most similar heads.",
        ),
    ] = 2,
    top=DEFAULT_TOP,
    json_out=False,
    no_diagrams=False,
    n_jobs=None,
) -> None:
    """Compare two texts head by head: shared tokens, when they connect in each text, simplices present in both, and diagram distances (bottleneck, Wasserstein) per homology dimension.

    The table lists heads from the most similar (smallest bottleneck distance) to the most different. Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    metric = Metric(metric).value
    if not text_a.strip() or not text_b.strip():
        raise EmptyTextError("TEXT_A and TEXT_B must both hold at least one word")
    check_maxdim(maxdim, name="--maxdim")
    if include_special and drop_special:  # the library drops the matching silently
        raise InvalidInputError(
            "--include-special matches special tokens ([CLS] with [CLS], …) that --drop-special "
            "removes: give one or the other"
        )
    eps = check_scale(scale, "--scale", allow_inf=False, allow_none=True)
    if dim is not None:
        check_dim(dim, maxdim, "--dim", hint="--maxdim")
    layers = parse_indices(layer, "--layer")
    heads = parse_indices(head, "--head")
    alignment = _alignment(align, align_tokens, text_a, text_b)
    words = _highlight_words(highlight)
    run = opening(
        json_out=json_out,
        out=out,
        plots=plots,
        plot_format=plot_format,
        model=model,
        device=device,
        dtype=dtype,
        layers=layers,
        heads=heads,
    )
    m, show, formats = run.model, run.show, run.formats
    with progress_bar("comparing", show) as progress:
        t0 = time.perf_counter()
        with _alignment_hint():
            c = at.compare(
                text_a,
                text_b,
                m,
                layers=layers,
                heads=heads,
                metric=metric,
                maxdim=maxdim,
                scale=eps,
                drop_special=drop_special,
                include_special=include_special,
                alignment=alignment,
                alignment_units="token" if align_tokens else "word",
                n_jobs=n_jobs,
                truncate=truncate,
                progress=progress,
            )
        t_cmp = time.perf_counter() - t0
    keys = [
        c.keys[c._key_index(w)] for w in words
    ]  # validates the words: one-line error if not shared
    rank_dim = c.ranking_dim if dim is None else dim
    rows = _compare_rows(c, rank_dim)
    single = len(rows) == 1
    pairs = _highlight_pairs(c, rows, keys)
    bundle = None
    if formats:
        from ..plots import comparison_bundle

        bundle = comparison_bundle(
            c, heads=[(r["layer"], r["head"]) for r in rows[:plot_heads]], highlight=keys
        )

    def document(saved, figures, timing):
        doc = c.to_dict(k=min(5, len(rows)), dim=dim)
        doc.update(
            {
                "attntopo": __version__,
                "model": m.info(),
                "tokens_a": c.a.attention.labels,
                "tokens_b": c.b.attention.labels,
                "highlight": keys,
                "highlight_pairs": pairs,
            }
        )
        if single:
            doc["head_report"] = c.head_report(rows[0]["layer"], rows[0]["head"])
        doc = json_doc(doc, saved=saved, figures=figures, timing=timing)
        if not no_diagrams:
            doc["diagrams"] = {
                side: grid_points(an.diagrams, an.layers, an.heads)
                for side, an in (("a", c.a), ("b", c.b))
            }
        return doc

    run.finish(
        c,
        seconds={"compare_s": t_cmp},
        bundle=lambda _: bundle,
        document=document,
        summary=lambda timing: _print_summary(
            c,
            m,
            rows,
            keys,
            pairs,
            timing,
            metric=metric,
            eps=eps,
            alignment=alignment,
            top=top,
            dim=dim,
        ),
    )


def _print_summary(c, m, rows, keys, pairs, timing, *, metric, eps, alignment, top, dim) -> None:
    """The tables and lines of ``compare`` without ``--json``."""
    rank_dim = c.ranking_dim if dim is None else dim
    single = len(rows) == 1
    report_heads = [(r["layer"], r["head"]) for r in rows[: max(1, min(top or len(rows), 5))]]
    console.print(model_line(m, f" · metric {metric}"))
    for name, an in (("A", c.a), ("B", c.b)):
        console.print(
            f"[bold]{name}[/bold] {an.attention.n_tokens} tokens: "
            + esc(" ".join(an.attention.labels)),
            overflow="fold",
        )
    shared = ", ".join(c.keys) if c.keys else "none"
    how = "aligned" if alignment is not None else "shared"
    console.print(f"{how} tokens ({len(c.keys)}): {esc(shared)}", overflow="fold")
    at_scale = (
        f"scale ε = {eps:g}"
        if eps is not None
        else f"scale ε per head (median H0 death), {c.scales.min():.3g}–{c.scales.max():.3g}"
    )
    console.print(f"{at_scale} · time {timing['total_s']:.1f} s")
    _print_heads_table(c, rows, rank_dim, top, default=dim is None)
    if len(keys) >= 2:
        pt = data_table(
            "Highlighted pairs (edge birth = distance; connection = minimax path scale)"
        )
        for col in ("layer", "head", "pair", "edge A", "edge B", "connect A", "connect B"):
            pt.add_column(col, justify="left" if col == "pair" else "right", no_wrap=True)
        for p in pairs:
            if (p["layer"], p["head"]) in report_heads:
                pt.add_row(
                    str(p["layer"]),
                    str(p["head"]),
                    f"{p['a']} – {p['b']}",
                    num(p["edge_birth_a"]),
                    num(p["edge_birth_b"]),
                    num(p["connection_a"]),
                    num(p["connection_b"]),
                )
        print_table(pt)
    if single and c.keys:
        simp = c.shared_simplices(rows[0]["layer"], rows[0]["head"])
        if simp:
            console.print(
                "present in both texts at ε: "
                + esc(
                    "; ".join(
                        f"{' – '.join(s['tokens'])} (born {s['birth_a']:.3f} / {s['birth_b']:.3f})"
                        for s in simp
                    )
                ),
                overflow="fold",
            )


def _check_word_indices(alignment: list[tuple[int, int]], text_a: str, text_b: str) -> None:
    """``--align`` word indices out of range: one line that lists the text's words, before any
    model is loaded (words do not depend on the model: :func:`attntopo.words.split_words`)."""
    for side, name, text in ((0, "TEXT_A", text_a), (1, "TEXT_B", text_b)):
        words = [w for _, _, w in split_words(text)]
        for pair in alignment:
            if not -len(words) <= pair[side] < len(words):
                listed = [f"{i} {w}" for i, w in enumerate(words)]
                if len(listed) > 30:
                    listed = listed[:28] + ["…", listed[-1]]
                raise OutOfRangeError(
                    f"--align {pair[0]}:{pair[1]}: word {pair[side]} is out of range for {name}, "
                    f"which has {len(words)} words: {' · '.join(listed)} "
                    "(attntopo words TEXT shows their tokens too)"
                )


def _parse_alignment(values: Optional[List[str]]) -> list[tuple[int, int]] | None:
    """``--align 0:5 --align 1:1,2:6`` → ``[(0, 5), (1, 1), (2, 6)]``."""
    if not values:
        return None
    out: list[tuple[int, int]] = []
    for v in values:
        for part in str(v).split(","):
            m_ = re.fullmatch(r"\s*(-?\d+)\s*:\s*(-?\d+)\s*", part)
            if not m_:
                raise InvalidInputError(
                    f"--align expects pairs I:J such as 0:5 or 0:5,1:1; got {v!r}"
                )
            out.append((int(m_.group(1)), int(m_.group(2))))
    return out


def _alignment(
    align: Optional[List[str]], align_tokens: bool, text_a: str, text_b: str
) -> list[tuple[int, int]] | None:
    """``--align`` pairs, parsed and (word indices) checked against the texts."""
    alignment = _parse_alignment(align)
    if align_tokens and alignment is None:
        raise InvalidInputError("--align-tokens needs --align I:J pairs")
    if alignment is not None and not align_tokens:
        _check_word_indices(alignment, text_a, text_b)
    return alignment


@contextlib.contextmanager
def _alignment_hint() -> Iterator[None]:
    """An alignment refused by :func:`attntopo.compare` (a word that owns no token, a token
    position out of range): the same line, naming ``--align`` and where to look."""
    try:
        yield
    except (InvalidInputError, OutOfRangeError) as e:
        if not str(e).startswith("alignment:"):
            raise
        raise type(e)(
            f"--align: {str(e).removeprefix('alignment: ')} (attntopo words TEXT lists a "
            "text's words and the positions of their tokens)"
        ) from None


def _highlight_pairs(c, rows: list[dict], keys: list[str]) -> list[dict]:
    """For every head of ``rows`` and every pair of highlighted words, :meth:`Comparison.pair`."""
    return [
        {"layer": lay, "head": hd, **c.pair(u, v, lay, hd)}
        for lay, hd in ([(r["layer"], r["head"]) for r in rows])
        for i_, u in enumerate(keys)
        for v in keys[i_ + 1 :]
    ]


def _highlight_words(values: Optional[List[str]]) -> list[str]:
    """``--highlight "information theory" --highlight entropy`` → three words; a blank one is
    one line (it highlighted nothing, silently, where an unknown word is refused)."""
    for v in values or []:
        if not str(v).strip():
            raise InvalidInputError(
                f"--highlight {v!r} names no word: give shared words, e.g. --highlight theory"
            )
    return [w for v in (values or []) for w in str(v).split()]


def _compare_rows(c, dim: int) -> list[dict]:
    """One dict per head, most similar first (:meth:`Comparison.ranking`: ties share a rank)."""
    s = c.summary()
    keys = (
        ["layer", "head", "scale"]
        + [f"{n}_h{d}" for n in ("bottleneck", "wasserstein1") for d in range(c.maxdim + 1)]
        + ["shared_edges", "shared_triangles"]
    )
    pos = {(lay, hd): t for t, (lay, hd) in enumerate(zip(s["layer"].tolist(), s["head"].tolist()))}
    r = c.ranking(by="bottleneck", dim=dim)
    rows = []
    for q in range(r.n_rows):
        t = pos[int(r["layer"][q]), int(r["head"][q])]
        rows.append(
            {
                "rank": int(r["rank"][q]),
                "n_tied": int(r["n_tied"][q]),
                **{k: s[k][t].item() for k in keys},
            }
        )
    return rows


def _print_heads_table(c, rows: list[dict], rank_dim: int, top: int, default: bool = False) -> None:
    shown = rows if top == 0 else rows[:top]
    why = " (the highest dimension without a majority tie)" if default else ""
    table = data_table(
        f"Heads from most similar to most different by bottleneck H{rank_dim}{why}"
        + ("" if len(shown) == len(rows) else f" (top {len(shown)} of {len(rows)})")
    )
    for col in ("#", "layer", "head", "ε"):
        table.add_column(col, justify="right", no_wrap=True)
    for d in range(c.maxdim + 1):
        table.add_column(
            f"bottl.\nH{d}",
            justify="right",
            no_wrap=True,
            style="bold cyan" if d == rank_dim else None,
        )
    for d in range(c.maxdim + 1):
        table.add_column(f"W1\nH{d}", justify="right", no_wrap=True)
    table.add_column("shared\nedges", justify="right", no_wrap=True)
    table.add_column("shared\ntriangles", justify="right", no_wrap=True)
    for r in shown:
        table.add_row(
            f"{r['rank']}{'=' if r['n_tied'] > 1 else ''}",
            str(r["layer"]),
            str(r["head"]),
            num(r["scale"]),
            *[num(r[f"bottleneck_h{d}"]) for d in range(c.maxdim + 1)],
            *[num(r[f"wasserstein1_h{d}"]) for d in range(c.maxdim + 1)],
            str(r["shared_edges"]),
            str(r["shared_triangles"]),
        )
    table.caption = (
        "Diagram distances between the two texts' diagrams, per homology dimension (distance "
        "units); #: rank, '1=' tied with other heads (equal distances share a rank); "
        "shared edges/triangles: among shared tokens, present in both texts at ε."
    )
    print_table(table)
