"""``attntopo hardmax simulate|train|explain``:
hardmax attention dynamics, and the paper's classifier built on them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import __version__
from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError
from ._common import finish_result, opening, read_text, status
from ._options import OutOpt, app, comma_words, command, with_help
from ._output import console, err_console, esc, plural, print_table
from ._table import data_table

hardmax_app = typer.Typer(
    name="hardmax",
    help="Hardmax attention dynamics (Alcalde, Fantuzzi "
    "& Zuazua 2025): tokens gather around leaders.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(hardmax_app, name="hardmax")

_SIMULATE_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo hardmax simulate --n 40 --dim 2 --seed 1 --plots --out hm\n"
    "  attntopo hardmax simulate --n 128 --dim 16 --random-a --alpha 0.5 --steps 80 --json\n"
    "  attntopo hardmax simulate --z0 tokens.npy --a A.npy --steps 100\n"
    '  attntopo hardmax simulate "The cat sat on the mat because it was tired." --layer 5 '
    "--head 0\n\nThree sources of tokens: random Gaussian tokens (--n, --dim, --seed; the "
    "default), an array file (--z0, .npy or text with one token per row), or a text (TEXT or "
    "--file): the hidden states entering --layer of --model, with A from that layer's --head "
    "(W_Q^T W_K, symmetrized, shifted to be positive definite; docs/hardmax.md). The result loads "
    "back with [bold]attntopo.load_result(DIR)[/bold]."
)


_STATIC_FIGURES = "the hardmax figures are"  # their --plot-format: png, svg or pdf


def _load_array(path: str, option: str):
    import numpy as np

    p = Path(path).expanduser()
    if not p.is_file():
        raise InvalidInputError(f"{option} {path!r} is not a file")
    try:
        if p.suffix == ".npy":
            return np.load(p, allow_pickle=False)
        return np.loadtxt(p, delimiter="," if p.suffix == ".csv" else None, ndmin=2)
    except (ValueError, OSError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InvalidInputError(f"cannot read {option} {path!r} as numbers: {reason}") from None


def _random_instance(n: int, dim: int, seed: int, random_a: bool):
    import numpy as np

    rng = np.random.default_rng(seed)
    Z0 = rng.normal(size=(n, dim))
    A = None
    if random_a:
        Q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
        A = (Q * np.exp(rng.uniform(0.0, np.log(10.0), size=dim))) @ Q.T
    return Z0, A


@command(
    "simulate",
    group=hardmax_app,
    static_figures=_STATIC_FIGURES,
    epilog=_SIMULATE_EPILOG,
    no_args_is_help=False,
)
def simulate_cmd(
    text: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[TEXT]",
            help="A text: run on a model's tokens.",
            show_default=False,
        ),
    ] = None,
    file=None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    layer: Annotated[
        int,
        typer.Option(
            "--layer",
            "-l",
            metavar="L",
            help="Layer whose input tokens and head are used (text).",
        ),
    ] = 0,
    head: Annotated[
        int,
        typer.Option(
            "--head",
            metavar="H",
            help="Head whose W_Q^T W_K gives A (text).",
        ),
    ] = 0,
    margin: Annotated[
        float,
        typer.Option(
            "--margin",
            metavar="M",
            help="Text: smallest eigenvalue of A as a share of the head's ||S||_2.",
        ),
    ] = 0.01,
    truncate=False,
    z0: Annotated[
        Optional[str],
        typer.Option(
            "--z0",
            metavar="PATH",
            help="Tokens from a file: (n, d) array, .npy/.csv/.txt.",
            show_default=False,
        ),
    ] = None,
    a_file: Annotated[
        Optional[str],
        typer.Option(
            "--a",
            metavar="PATH",
            help="A (d, d) from a file (with --z0; default identity).",
            show_default=False,
        ),
    ] = None,
    n: Annotated[
        Optional[int],
        typer.Option(
            "--n",
            metavar="N",
            help="Random tokens: how many (default 32).",
            show_default=False,
        ),
    ] = None,
    dim: Annotated[
        Optional[int],
        typer.Option(
            "--dim",
            "-d",
            metavar="D",
            help="Random tokens: dimension (default 2).",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", min=0, metavar="S", help="Random tokens: seed.")
    ] = 0,
    random_a: Annotated[
        bool,
        typer.Option(
            "--random-a",
            help="Random tokens: a random SPD A (condition <= 10), not the identity.",
        ),
    ] = False,
    alpha: Annotated[float, typer.Option("--alpha", metavar="α", help="Step size α > 0.")] = 1.0,
    steps: Annotated[
        int,
        typer.Option(
            "--steps",
            metavar="K",
            help="Layers (steps) to apply.",
        ),
    ] = 50,
    rtol: Annotated[
        Optional[float],
        typer.Option(
            "--rtol",
            help="Relative tie tolerance (default max(1e-12, 4·d·2^-53)).",
            show_default=False,
        ),
    ] = None,
    cluster_tol: Annotated[
        Optional[float],
        typer.Option(
            "--cluster-tol",
            help="Tokens closer than this × max|z0| are one point (default 1e-8).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Optional[Path],
        with_help(
            OutOpt,
            "Save the simulation (and figures) into this folder, atomically.",
        ),
    ] = None,
    plots=False,
    plot_format=None,
    json_out=False,
) -> None:
    """Run the hardmax dynamics z ← z/(1+α) + α/(1+α)·mean of argmax_j ⟨A z, z_j⟩ and report leaders, clusters and where the limit points lie.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    from .. import hardmax as hm

    t_start = time.perf_counter()
    from_text = text is not None or file is not None
    if from_text and z0 is not None:
        raise InvalidInputError("give either a text (TEXT or --file) or --z0, not both")
    if a_file is not None and z0 is None:
        raise InvalidInputError(
            "--a needs --z0 (random tokens use --random-a; a text takes A from --head)"
        )
    if (from_text or z0 is not None) and (n is not None or dim is not None or random_a):
        raise InvalidInputError(
            "--n, --dim and --random-a describe random tokens; not with a text or --z0"
        )
    if from_text:
        body, source = read_text(text, file)
    run = opening(
        t_start=t_start,
        json_out=json_out,
        out=out,
        plots=plots,
        plot_format=plot_format,
        model=model if from_text else None,
        device=device,
        dtype=dtype,
    )
    m, show, formats = run.model, run.show, run.formats
    if from_text:
        with status("hardmax dynamics on the model's tokens …", show):
            t0 = time.perf_counter()
            r = hm.simulate_text(
                body,
                m,
                layer=layer,
                head=head,
                alpha=alpha,
                steps=steps,
                margin=margin,
                truncate=truncate,
                rtol=rtol,
                cluster_tol=cluster_tol,
            )
            t_sim = time.perf_counter() - t0
        where = f"{source}, {m.name} layer {r.source['layer']} head {r.source['head']}"
    else:
        if z0 is not None:
            Z0 = _load_array(z0, "--z0")
            A = _load_array(a_file, "--a") if a_file is not None else None
            src = {"kind": "array", "z0": str(z0), "A": str(a_file) if a_file else "identity"}
            where = f"--z0 {z0}" + (f", A from {a_file}" if a_file else ", A = identity")
        else:
            n_, d_ = 32 if n is None else n, 2 if dim is None else dim
            if n_ < 1 or d_ < 1:
                raise InvalidInputError(f"--n and --dim must be >= 1, got --n {n_} --dim {d_}")
            Z0, A = _random_instance(n_, d_, seed, random_a)
            src = {
                "kind": "random",
                "n": n_,
                "dim": d_,
                "seed": seed,
                "A": "random SPD" if random_a else "identity",
            }
            where = f"{n_} Gaussian tokens in R^{d_} (seed {seed}), A = {src['A']}"
        t0 = time.perf_counter()
        r = hm.simulate(
            Z0, A=A, alpha=alpha, steps=steps, rtol=rtol, cluster_tol=cluster_tol, source=src
        )
        t_sim = time.perf_counter() - t0
    pos = r.polytope() if r.leaders[-1].any() else None
    geometry = (
        None
        if pos is None
        else {
            "leader_points": int(r.leader_points.shape[0]),
            "affine_dim": pos.affine_dim,
            "ambient_dim": pos.ambient_dim,
            "limit_points_inside": bool(pos.inside.all()),
            "limit_points_on_boundary": bool(pos.on_boundary.all()),
            "limit_points_on_relative_boundary": int(pos.on_relative_boundary.sum()),
        }
    )
    finish_result(
        r,
        out=out,
        formats=formats,
        json_out=json_out,
        bundle=_bundle,
        extra={"polytope": geometry},
        timing={"model_s": round(run.t_model, 3), "simulate_s": round(t_sim, 4)},
        plots_s=True,
        t_start=t_start,
        summary=lambda timing: _print_report(r, where, geometry, timing),
    )


def _bundle(r):
    from ..plots.hardmax import hardmax_bundle

    return hardmax_bundle(r)


def _print_report(r, where: str, geometry: dict | None, timing: dict) -> None:
    console.print(
        f"[bold]attntopo {__version__}[/bold] · hardmax dynamics · {esc(where)}", overflow="fold"
    )
    conv = (
        "converged"
        if r.converged
        else f"[yellow]not converged[/yellow] (last move {r.movement[-1]:.2e})"
    )
    console.print(
        f"{plural(r.n_tokens, 'token')} in R^{r.dim}, α = {r.alpha:g}, {plural(r.steps, 'step')}: "
        f"{plural(int(r.n_leaders[-1]), 'leader')}, {plural(int(r.n_clusters[-1]), 'cluster')}, "
        f"{conv} · time {timing['simulate_s'] * 1000:.1f} ms"
    )
    # the steps where something changed
    nl, nc = r.n_leaders, r.n_clusters
    rows = [
        k
        for k in range(r.steps + 1)
        if k in (0, r.steps) or nl[k] != nl[k - 1] or nc[k] != nc[k - 1]
    ]
    table = data_table("Steps where the counts change")
    for col in ("step", "leaders", "clusters", "max move"):
        table.add_column(col, justify="right", no_wrap=True)
    mv = r.movement
    for k in rows[:40]:
        table.add_row(str(k), str(int(nl[k])), str(int(nc[k])), "–" if k == 0 else f"{mv[k]:.2e}")
    print_table(table)
    clusters = r.clusters()
    table = data_table("Clusters at the last step")
    for col, just in (
        ("cluster", "right"),
        ("size", "right"),
        ("leaders", "left"),
        ("members", "left"),
    ):
        table.add_column(col, justify=just, no_wrap=col not in ("leaders", "members"))
    names = r.tokens if r.tokens is not None else [str(i) for i in range(r.n_tokens)]
    for c in sorted(clusters, key=lambda c: -len(c["members"]))[:30]:
        mem = [names[i] for i in c["members"]]
        shown = mem if len(mem) <= 12 else mem[:12] + [f"… (+{len(mem) - 12})"]
        table.add_row(
            str(c["cluster"]),
            str(len(c["members"])),
            " ".join(names[i] for i in c["leaders"]) or "–",
            " ".join(shown),
        )
    print_table(table)
    if len(clusters) > 30:
        console.print(f"… and {len(clusters) - 30} more clusters (--json lists all)")
    if geometry is not None:
        deg = (
            ""
            if geometry["affine_dim"] == geometry["ambient_dim"]
            else (
                f" (the {geometry['leader_points']} leader points span {geometry['affine_dim']} "
                f"of {geometry['ambient_dim']} dimensions: the "
                "polytope has no interior, all of it is boundary)"
            )
        )
        verdict = "yes" if geometry["limit_points_on_boundary"] else "[red]no[/red]"
        console.print(f"limit points on the boundary of the leaders' polytope: {verdict}{deg}")


# ============================================================================ train
_TRAIN_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo hardmax train --fortunes politics,science --d 2 --layers 8 --out clf\n"
    "  attntopo hardmax train reviews.csv --d 16 --layers 8 --epochs 20 --out imdb16 --json\n\n"
    "DATA is a CSV (header row) or JSON Lines file with a text and a label column, exactly two "
    "classes. Each class is split (stratified, --seed) into training, validation (--val) and test "
    "(--test) parts. The saved model holds the parameters of the epoch with the best validation "
    "accuracy; the test split is scored twice, after the last epoch and with those parameters, and "
    "both numbers are reported. Explain predictions "
    "with [bold]attntopo hardmax explain DIR TEXT[/bold]."
)


@command("train", group=hardmax_app, epilog=_TRAIN_EPILOG, no_args_is_help=False)
def train_cmd(
    data: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[DATA]",
            help="CSV or JSONL with text and label columns.",
            show_default=False,
        ),
    ] = None,
    fortunes: Annotated[
        Optional[str],
        typer.Option(
            "--fortunes",
            metavar="A,B",
            help="Two categories of Debian's fortunes instead of DATA.",
            show_default=False,
        ),
    ] = None,
    text_column: Annotated[
        str,
        typer.Option(
            "--text-column",
            help="Column (key) of the texts.",
        ),
    ] = "text",
    label_column: Annotated[
        str,
        typer.Option(
            "--label-column",
            help="Column (key) of the labels.",
        ),
    ] = "label",
    d: Annotated[int, typer.Option("--d", metavar="D", help="Embedding dimension.")] = 2,
    layers: Annotated[
        int,
        typer.Option(
            "--layers",
            "-K",
            metavar="K",
            help="Applications of the shared attention layer.",
        ),
    ] = 8,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            metavar="α",
            help="Value matrix α·I (step size).",
        ),
    ] = 1.0,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            metavar="T",
            help="Softmax temperature while training.",
        ),
    ] = 0.001,
    max_len: Annotated[
        int,
        typer.Option(
            "--max-len",
            metavar="N",
            help="Tokens per text (more are cut).",
        ),
    ] = 128,
    epochs: Annotated[int, typer.Option("--epochs", metavar="E")] = 20,
    batch_size: Annotated[int, typer.Option("--batch-size", metavar="B")] = 64,
    lr: Annotated[float, typer.Option("--lr", help="Adam learning rate.")] = 0.01,
    val: Annotated[float, typer.Option("--val", help="Share of each class for validation.")] = 0.15,
    test: Annotated[float, typer.Option("--test", help="Share of each class for the test.")] = 0.15,
    min_count: Annotated[
        int,
        typer.Option(
            "--min-count",
            help="Vocabulary: training tokens seen this often.",
        ),
    ] = 2,
    seed: Annotated[int, typer.Option("--seed", min=0)] = 0,
    baseline: Annotated[
        bool,
        typer.Option(
            "--baseline/--no-baseline",
            help="Logistic regression on word counts, same split.",
        ),
    ] = True,
    top_words: Annotated[
        int,
        typer.Option(
            "--top-words",
            metavar="N",
            help="Leader words reported per class.",
        ),
    ] = 10,
    out: Annotated[
        Optional[Path],
        with_help(
            OutOpt,
            "Save the trained model into this folder, atomically.",
        ),
    ] = None,
    json_out=False,
) -> None:
    """Train the paper's interpretable classifier: word embeddings → one hardmax attention layer K times → mean → linear → sigmoid.

    Progress goes to stderr; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    from .. import hardmax as hm
    from ..datasets import fortunes as load_fortunes
    from ..datasets import read_texts

    t_start = time.perf_counter()
    if (data is None) == (fortunes is None):
        raise InvalidInputError("give either DATA (a CSV or JSONL file) or --fortunes A,B")
    show = opening(t_start=t_start, json_out=json_out, out=out).show
    if data is not None:
        p = Path(data).expanduser()
        if not p.is_file():
            raise InvalidInputError(f"DATA {data!r} is not a file")
        ds = read_texts(p, text=text_column, label=label_column)
        source = {"kind": "file", "path": str(data), "text": text_column, "label": label_column}
    else:
        cats = comma_words([fortunes], "--fortunes", "food,law")
        if len(cats) != 2:
            raise InvalidInputError(
                f"--fortunes takes exactly two categories, comma-separated; got {fortunes!r}"
            )
        ds = load_fortunes(categories=cats)
        source = {"kind": "fortunes", "categories": cats}

    def progress(row: dict) -> None:
        if show:
            err_console.print(
                f"epoch {row['epoch']:>3}: loss {row['train_loss']:.4f} · train "
                f"{row['train_accuracy']:.3f} · validation {row['val_accuracy']:.3f}"
            )

    with status(f"training on {len(ds)} texts …", show and not err_console.is_terminal):
        model = hm.train_classifier(
            ds.texts,
            ds.labels,
            d=d,
            layers=layers,
            alpha=alpha,
            temperature=temperature,
            max_len=max_len,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            val=val,
            test=test,
            min_count=min_count,
            seed=seed,
            baseline=baseline,
            top_words=top_words,
            source=source,
            progress=progress,
        )
    finish_result(
        model,
        out=out,
        formats=[],
        json_out=json_out,
        timing={"train_s": model.metrics["train_seconds"]},
        t_start=t_start,
        summary=lambda timing: _print_training(model, timing),
    )


def _print_training(model, timing: dict) -> None:
    m = model.metrics
    console.print(
        f"[bold]attntopo {__version__}[/bold] · hardmax classifier d = {model.dim}, K = "
        f"{model.layers}, α = {model.alpha:g}, T = {model.temperature:g} · classes "
        f"{esc(model.classes[0])} / {esc(model.classes[1])} · "
        f"vocabulary {len(model.vocab)} · {timing['train_s']:.1f} s"
    )
    console.print(
        f"split: {m['n_train']} train, {m['n_val']} validation, {m['n_test']} test "
        f"(majority class on test: {m['majority_test_accuracy']:.3f})"
    )
    table = data_table("Test accuracy")
    table.add_column("model")
    table.add_column("selected on", no_wrap=True)
    table.add_column("test accuracy", justify="right")
    table.add_row(
        "hardmax, last epoch",
        f"— (epoch {len(model.history['epoch'])})",
        f"{m['test_accuracy_final']:.3f}",
    )
    table.add_row(
        "hardmax, early-stopped",
        f"validation (epoch {m['best_epoch']}, {m['val_accuracy_best']:.3f})",
        f"{m['test_accuracy_early']:.3f}",
    )
    if "baseline" in m:
        b = m["baseline"]
        table.add_row(
            "logistic regression, word counts",
            f"validation (C = {b['C']:g}, {b['val_accuracy']:.3f})",
            f"{b['test_accuracy']:.3f}",
        )
    print_table(table)
    for c, words in (m.get("leader_words") or {}).items():
        shown = ", ".join(f"{esc(w)} ({share:.0%})" for w, _, share in words)
        console.print(f"leader words, {esc(c)} (share of its test texts): {shown}", overflow="fold")


# ========================================================================== explain
_EXPLAIN_EPILOG = (
    "[bold]Examples[/bold]\n"
    '  attntopo hardmax explain clf "The government raised taxes again"\n'
    "  attntopo hardmax explain clf -f review.txt --plots --out why\n\n"
    "Runs the text through the trained model with exact hardmax and shows what the prediction "
    "averages: the cluster each word ends in and the leader words. --out saves that simulation "
    "(attntopo.load_result(DIR)); --plots adds its figures."
)


@command(
    "explain",
    group=hardmax_app,
    static_figures=_STATIC_FIGURES,
    epilog=_EXPLAIN_EPILOG,
    no_args_is_help=False,
)
def explain_cmd(
    model_dir: Annotated[
        Path,
        typer.Argument(
            metavar="MODEL",
            help="Folder of a model saved by attntopo hardmax train.",
        ),
    ],
    text: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[TEXT]",
            help="The text (or use --file).",
            show_default=False,
        ),
    ] = None,
    file=None,
    out: Annotated[
        Optional[Path],
        with_help(
            OutOpt,
            "Save the simulation behind the prediction (and figures) into this folder.",
        ),
    ] = None,
    plots=False,
    plot_format=None,
    json_out=False,
) -> None:
    """Explain one prediction of a hardmax classifier: the leader words and each word's cluster."""
    import attntopo as at

    from ..errors import ResultFormatError

    body, source = read_text(text, file)
    run = opening(json_out=json_out, out=out, plots=plots, plot_format=plot_format)
    try:
        model = at.load_result(model_dir)
    except ResultFormatError as e:
        raise InvalidInputError(f"MODEL {str(model_dir)!r}: {e}") from None
    if getattr(model, "kind", None) != "hardmax_classifier":
        raise InvalidInputError(
            f"MODEL {str(model_dir)!r} holds a {getattr(model, 'kind', type(model).__name__)} "
            "result, not a model from attntopo hardmax train"
        )
    t0 = time.perf_counter()
    sim, prob = model.explain(body)
    t_explain = time.perf_counter() - t0
    label = model.classes[int(prob >= 0.5)]
    clusters = sim.attention_clusters()

    def document(saved, figures, timing):
        return {
            "attntopo": __version__,
            "prediction": label,
            "probability": {model.classes[0]: 1.0 - prob, model.classes[1]: prob},
            "classes": model.classes,
            "tokens": sim.tokens,
            "leaders": sim.leader_indices.tolist(),
            "clusters": clusters,
            "source": source,
            "timing": timing,
            "out": None if saved is None else str(saved),
            "figures": sorted(figures),
        }

    finish_result(
        sim,
        out=out,
        formats=run.formats,
        json_out=json_out,
        bundle=_bundle,
        timing={"explain_s": round(t_explain, 3)},
        t_start=run.t_start,
        document=document,
        summary=lambda _: _print_explanation(model, sim, prob, label, clusters),
    )


def _print_explanation(model, sim, prob, label, clusters) -> None:
    """The prediction and its word groups (``hardmax explain`` without ``--json``)."""
    p_label = prob if label == model.classes[1] else 1.0 - prob  # the prediction's own probability
    console.print(
        f"[bold]{esc(label)}[/bold] (P({esc(label)}) = {p_label:.3f}) · "
        f"{plural(sim.n_tokens, 'word')}, {plural(len(sim.leader_indices), 'leader')}, "
        f"{plural(len(clusters), 'group')} after {plural(model.layers, 'layer')}"
    )
    table = data_table("Words by the leader they follow after the last layer (largest group first)")
    table.add_column("size", justify="right")
    table.add_column("leader")
    table.add_column("words")
    for c in clusters:
        table.add_row(
            str(len(c["members"])),
            " ".join(sim.tokens[i] for i in c["leaders"]) or "–",
            " ".join(c["labels"]),
        )
    print_table(table)
