"""``attntopo heads``: head space (every head a point), its persistence, redundancy and head types;
with ``--compare-model``, two models' head spaces compared."""

from __future__ import annotations

import time
from typing import Annotated, List, Optional

import typer

from .. import __version__
from .._validation import check_maxdim, check_scale
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError
from ._common import finish_result, opening, progress_bar, read_text
from ._options import Metric, command
from ._output import console, esc, fmt, json_doc, num, plural, print_table
from ._table import data_table

_HEADS_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo heads "The cat sat on the mat." "Einstein published four papers in 1905."\n'
    "  attntopo heads -f a.txt -f b.txt -f c.txt --model smollm2 --out heads --plots\n"
    "  attntopo heads -f a.txt -f b.txt -f c.txt --compare-model smollm2 --n-boot 200 --json\n\n"
    "Every head of every layer is one point; two heads are as far apart as the Jensen–Shannon "
    "distances between the rows they give the same tokens, averaged over tokens and texts. "
    "Each TEXT or --file is one text. With --compare-model the bootstrap over texts needs at "
    "least 2 texts (10 or more for a meaningful p-value). A saved result loads back with "
    "[bold]attntopo.load_result(DIR)[/bold]."
)


_HELPS = {  # the shared options in this command's words
    "maxdim": "Highest homology dimension of head space: 0, 1 or 2.",
    "out": "Save the head space (or the comparison) and figures into this folder, atomically.",
    "plot_format": "png (default), svg, pdf; html writes the interactive MDS scatter. Repeatable.",
    "top": "Show at most N redundant groups (0: all).",
    "n_jobs": "Worker processes for the bootstrap diagrams.",
}


@command("heads", epilog=_HEADS_EPILOG, no_args_is_help=False, helps=_HELPS)
def heads_cmd(
    text: Annotated[
        Optional[List[str]],
        typer.Argument(
            metavar="TEXT...",
            help="Texts (each argument is one text; or use --file).",
            show_default=False,
        ),
    ] = None,
    file: Annotated[
        Optional[List[str]],
        typer.Option(
            "--file",
            "-f",
            metavar="PATH",
            help="Read one text from a UTF-8 file ('-' reads stdin); repeatable.",
            show_default=False,
        ),
    ] = None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    compare_model: Annotated[
        Optional[str],
        typer.Option(
            "--compare-model",
            metavar="MODEL",
            help="Also build this model's head space on the "
            "same texts and compare the two diagrams.",
            show_default=False,
        ),
    ] = None,
    metric="jensen_shannon",
    maxdim=1,
    raw: Annotated[
        bool,
        typer.Option(
            "--sum",
            help="Sum over tokens (the founding paper) instead "
            "of the mean; not with --compare-model.",
        ),
    ] = False,
    scale: Annotated[
        Optional[float],
        typer.Option(
            "--scale",
            metavar="SCALE",
            help="Scale of the redundancy report (default: the median nearest-neighbour distance).",
            show_default=False,
        ),
    ] = None,
    n_boot: Annotated[
        Optional[int],
        typer.Option(
            "--n-boot",
            min=0,
            metavar="N",
            help="Bootstrap replicates of --compare-model (default 100 with 2+ texts, 0 with one).",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", min=0, metavar="S", help="Seed of the bootstrap.")
    ] = 0,
    drop_special=False,
    truncate=False,
    out=None,
    plots=False,
    plot_format=None,
    top=8,
    json_out=False,
    n_jobs=None,
) -> None:
    """Head space: every attention head is a point, at Jensen–Shannon distance from the others; its persistence, clusters, redundant heads and head types (sink, self, previous/next token, banded, vertical, broad) — and, with --compare-model, two models' head spaces compared.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    import attntopo as at

    t_start = time.perf_counter()
    metric = Metric(metric).value
    bodies, sources = _texts(text, file)
    check_maxdim(maxdim, name="--maxdim")
    if scale is not None:
        check_scale(scale, "--scale")
    if raw and compare_model is not None:
        raise InvalidInputError(
            "--sum cannot be used with --compare-model: models are compared on mean distances"
        )
    if n_boot is not None and compare_model is None:
        raise InvalidInputError("--n-boot needs --compare-model")
    if compare_model is not None and n_boot is not None and n_boot > 0 and len(bodies) < 2:
        raise InvalidInputError(
            "the bootstrap over texts needs at least 2 texts; give more or --n-boot 0"
        )
    boots = (100 if len(bodies) >= 2 else 0) if n_boot is None else n_boot
    run = opening(t_start=t_start, json_out=json_out, out=out, plots=plots, plot_format=plot_format)
    show, formats = run.show, run.formats
    names = [model] + ([compare_model] if compare_model is not None else [])
    spaces = []
    t_model = t_space = 0.0
    for name in names:
        m_run = opening(json_out=json_out, model=name, device=device, dtype=dtype)
        m, t_model = m_run.model, t_model + m_run.t_model
        with progress_bar(f"{name}: head space of {plural(len(bodies), 'text')}", show) as progress:
            t1 = time.perf_counter()
            spaces.append(
                at.head_space(
                    bodies,
                    m,
                    normalize=not raw,
                    maxdim=maxdim,
                    metric=metric,
                    drop_special=drop_special,
                    truncate=truncate,
                    progress=progress,
                )
            )
            t_space += time.perf_counter() - t1
    comparison = None
    t_cmp = 0.0
    if compare_model is not None:
        with progress_bar(
            f"comparing the diagrams ({boots} bootstrap replicates)", show
        ) as progress:
            t1 = time.perf_counter()
            comparison = at.compare_models(
                None,
                model_a=spaces[0],
                model_b=spaces[1],
                maxdim=maxdim,
                n_boot=boots,
                seed=seed,
                n_jobs=n_jobs,
                progress=progress,
            )
            t_cmp = time.perf_counter() - t1
    bundle = None
    if formats:
        from ..plots import head_space_bundle

        bundle = head_space_bundle(spaces, comparison=comparison)

    def document(saved, figures, timing):
        return json_doc(
            {
                "attntopo": __version__,
                "settings": {
                    "metric": metric,
                    "maxdim": maxdim,
                    "normalize": not raw,
                    "scale": scale,
                    "drop_special": drop_special,
                    "truncate": truncate,
                },
                "sources": sources,
                "models": [hs.to_dict(k=top, scale=scale) for hs in spaces],
                "comparison": None if comparison is None else comparison.to_dict(),
            },
            saved=saved,
            figures=figures,
            timing=timing,
        )

    def summary(timing):
        _print_summary(
            spaces, comparison, sources, len(bodies), timing, metric=metric, top=top, scale=scale
        )

    timing = {
        "model_s": round(t_model, 3),
        "head_space_s": round(t_space, 3),
        "compare_s": round(t_cmp, 3),
    }
    finish_result(
        comparison or spaces[0],
        out=out,
        formats=formats,
        json_out=json_out,
        bundle=lambda _: bundle,
        timing=timing,
        plots_s=True,
        t_start=t_start,
        document=document,
        summary=summary,
    )


def _print_summary(spaces, comparison, sources, n_texts, timing, *, metric, top, scale) -> None:
    """The lines and tables of ``heads`` without ``--json``."""
    console.print(
        f"[bold]attntopo {__version__}[/bold] · head space · metric {metric} · "
        f"{plural(n_texts, 'text')} ({esc(', '.join(sources))}) · time {timing['total_s']:.1f} s"
    )
    for hs in spaces:
        _print_space(hs, top, scale)
    if comparison is not None:
        _print_comparison(comparison)


def _texts(texts: Optional[List[str]], files: Optional[List[str]]) -> tuple[list[str], list[str]]:
    """All texts (arguments first, then files) and where each came from."""
    out: list[tuple[str, str]] = []
    for k, t in enumerate(texts or []):
        body, _ = read_text(t, None)
        out.append((body, f"argument {k + 1}"))
    if files and sum(1 for f in files if f == "-") > 1:
        raise InvalidInputError("--file - (stdin) can be given only once")
    for f in files or []:
        out.append(read_text(None, f))
    if not out:
        raise InvalidInputError(
            "no text given: pass TEXT arguments or --file PATH (see attntopo heads --help)"
        )
    return [b for b, _ in out], [s for _, s in out]


def _print_space(hs, top: int, scale: Optional[float]) -> None:
    from ..plots.heads import TYPE_CODES

    s = hs.overview()
    kind = "causal" if hs.causal else "bidirectional"
    console.print(
        f"[bold]{esc(hs.model)}[/bold]: {hs.n_layers} layers × {hs.n_heads} heads = "
        f"{hs.n_points} points ({kind}) · {plural(hs.n_texts, 'text')}, "
        f"{'/'.join(str(n) for n in hs.n_tokens)} tokens"
    )
    unit = "mean JS distance per token" if hs.normalize else "JS distance summed over tokens"
    console.print(
        f"  head distances ({unit}): min {num(s['distance_min'])}, median "
        f"{num(s['distance_median'])}, max {num(s['distance_max'])}; median nearest neighbour "
        f"{num(s['nearest_neighbour_median'])}; MDS shows {s['mds_explained']:.0%} of the geometry"
    )
    parts = []
    for d, ds in s["diagram"].items():
        parts.append(
            f"H{d} {ds['n_bars']} bars (max persistence {num(ds['max_persistence'])}, "
            f"total {num(ds['total_persistence'])})"
        )
    console.print("  head-space diagram: " + "; ".join(parts))
    if hs.types is not None:
        counts = {k: v for k, v in hs.types.counts().items() if v}
        console.print("  head types: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        width = max(2, len(str(max(hs.layers))))
        console.print("  " + " " * (width + 1) + " ".join(f"{h:>2d}" for h in hs.heads))
        for i, li in enumerate(hs.layers):
            console.print(
                f"  {li:>{width}d} " + " ".join(TYPE_CODES[x] for x in hs.types.labels[i])
            )
        console.print(
            "  (sk sink, se self, pr previous, nx next, br broad, bd banded, vt vertical, mx mixed)"
        )
    groups = hs.redundancy(scale=scale)
    used = groups[0]["scale"] if groups else (hs.default_scale() if scale is None else scale)
    if not groups:
        console.print(f"  redundant heads within {num(used)}: none")
        return
    console.print(
        f"  redundant groups (every pair within {num(used)}): {len(groups)} groups, "
        f"{sum(g['size'] for g in groups)} heads"
    )
    for g in groups if top == 0 else groups[:top]:
        console.print(
            f"    {' '.join(g['heads'])}  (mean {num(g['mean_distance'])})", overflow="fold"
        )


def _print_comparison(comparison) -> None:
    table = data_table(
        f"{comparison.a.model} vs {comparison.b.model}: distance between the head-space diagrams"
    )
    cols = ["dim", "bottleneck", f"W{comparison.p:g}"]
    if comparison.n_boot:
        cols += ["null (bottl.)", "z", "p", f"null (W{comparison.p:g})", "z ", "p "]
    for c in cols:
        table.add_column(c, justify="right", no_wrap=True)
    for r in comparison.summary_rows():
        cells = [f"H{r['dim']}", num(r["bottleneck"]), num(r["wasserstein"])]
        if comparison.n_boot:
            for name in ("bottleneck", "wasserstein"):
                mu = (r[f"{name}_null_mean_a"] + r[f"{name}_null_mean_b"]) / 2
                cells += [
                    f"{num(mu)}±{num(r[f'{name}_null_std'])}",
                    fmt(r[f"{name}_z"], 1),
                    fmt(r[f"{name}_p"], 3),
                ]
        table.add_row(*cells)
    if comparison.n_boot:
        table.caption = (
            f"null: distance between one model's diagrams on two bootstrap resamples of the texts "
            f"({comparison.n_boot} replicates, seed {comparison.seed}); p = share of null ≥ "
            "observed. H0 Wasserstein grows with the difference in head counts."
        )
    else:
        table.caption = "no bootstrap (one text or --n-boot 0)"
    print_table(table)
