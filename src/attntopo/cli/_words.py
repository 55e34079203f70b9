"""``attntopo words``: a text's words as ``compare --align`` counts them,
with the model's tokens of each."""

from __future__ import annotations

import time

from ..constants import DEFAULT_MODEL
from ..words import split_words
from ._common import finish_listing, opening, read_text
from ._options import command
from ._output import print_table
from ._table import data_table

_WORDS_EPILOG = (
    "[bold]Examples[/bold]\n"
    "  attntopo words \"La théorie de l'information étudie l'entropie\"\n"
    "  attntopo words -f examples/quantum.txt -m smollm2 --json\n\n"
    "Words are runs of letters/digits and single punctuation marks, numbered from 0: the numbers "
    "[bold]attntopo compare --align I:J[/bold] takes. A word's tokens are those whose first "
    "non-space character lies in it; their positions count special tokens (\\[CLS] is 0), as "
    "--align-tokens does. A word inside another word's token owns none and cannot be aligned."
)


@command("words", epilog=_WORDS_EPILOG, no_args_is_help=True)
def words_cmd(
    text=None,
    file=None,
    model=DEFAULT_MODEL,
    device="cpu",
    dtype="float32",
    truncate=False,
    json_out=False,
) -> None:
    """List the words of a text with their index (what compare --align I:J counts), their characters and the model's tokens of each.

    Runs the tokenizer and one forward pass of a single head; results to stdout.
    """  # noqa: E501 - typer keeps line breaks of help text
    body, source = read_text(text, file)
    run = opening(json_out=json_out, model=model, device=device, dtype=dtype)
    m = run.model
    t0 = time.perf_counter()
    rows = word_rows(body, m, truncate=truncate)
    finish_listing(
        "words",
        rows,
        json_out=json_out,
        timing=run.timing(words_s=time.perf_counter() - t0),
        t_start=run.t_start,
        summary=lambda _: _print_words(rows, m.name),
        head={"model": m.name, "source": source},
    )


def _print_words(rows: list[dict], model_name: str) -> None:
    table = data_table(f"{len(rows)} words, {model_name} tokens")
    for col, justify in (
        ("#", "right"),
        ("word", "left"),
        ("chars", "right"),
        ("tokens", "right"),
        ("token labels", "left"),
    ):
        table.add_column(col, justify=justify, no_wrap=col != "token labels")
    for r in rows:
        toks = r["tokens"]
        span = "—" if not toks else str(toks[0]) if len(toks) == 1 else f"{toks[0]}–{toks[-1]}"
        table.add_row(
            str(r["index"]), r["word"], f"{r['start']}–{r['end']}", span, " ".join(r["labels"])
        )
    table.caption = (
        "#: the word index of compare --align I:J; chars: [start, end) in the text; tokens: "
        "positions in the model's input, special tokens counted (compare --align-tokens); "
        "—: the word owns no token"
    )
    print_table(table)


def word_rows(text: str, model, truncate: bool = False) -> list[dict]:
    """One dict per word of :func:`attntopo.words.split_words`: ``index``, ``word``, ``start``,
    ``end`` (characters), ``tokens`` (positions in the model's input, special tokens counted)
    and their ``labels``; a word that owns no token has empty lists."""
    from ..words import word_tokens

    att = model.attention(text, layers=[0], heads=[0], truncate=truncate)
    owned = {w: list(toks) for w, _, toks in word_tokens(att)}
    labels = att.labels
    return [
        {
            "index": i,
            "word": w,
            "start": a,
            "end": b,
            "tokens": owned.get(i, []),
            "labels": [labels[t] for t in owned.get(i, [])],
        }
        for i, (a, b, w) in enumerate(split_words(text))
    ]
