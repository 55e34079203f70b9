"""One vocabulary on the command line (issue 15, item 8, and the CLI parts of items 3 and 5):
every option means one thing in every command, flags take no value, the JSON keys agree, tables
fit 80 columns, errors name the CLI's own fix.  Each test runs ``python -m attntopo`` as a
subprocess."""

from __future__ import annotations

import inspect
import json
import re

import numpy as np
import pytest
import typer

import attntopo as at
from _cli import ROOT, assert_one_line_error, run  # noqa: E402
from _tables import parse_table  # noqa: E402
from attntopo.cli import app


def _command_paths(command=None, prefix=()):
    """Every runnable command of the app: ``[("analyze",), ("hardmax", "train"), …]``."""
    command = command or typer.main.get_command(app)
    out = []
    for name, sub in getattr(command, "commands", {}).items():
        if getattr(sub, "commands", None):
            out += _command_paths(sub, prefix + (name,))
        else:
            out.append(prefix + (name,))
    return out


# ----------------------------------------------------------------------- flags
def test_flags_show_no_value_placeholder():
    """typer wrote ``<bool>`` beside every flag (``--json <bool>``), inviting ``--json true``."""
    paths = _command_paths()
    assert ("analyze",) in paths and ("hardmax", "train") in paths
    for path in [()] + paths:
        r = run(*path, "--help")
        assert r.returncode == 0, (path, r.stderr)
        assert "<bool>" not in r.stdout, path
        assert "--help" in r.stdout
        assert r.stdout.count("--debug") == 1, path  # every command takes --debug (the app adds it)
    r = run("analyze", "--help")
    line = next(ln for ln in r.stdout.splitlines() if "--json" in ln)
    assert line.split("--json", 1)[1].split()[0] == "Print", line  # the help text follows the name


def test_debug_is_declared_once_by_the_app():
    """``--debug`` was declared in 13 commands and read by none (``main`` reads it from the command
    line): no command declares it now but ``serve``, whose own flag also logs every request; the
    app gives every command the flag, before or after the command's name."""

    def callbacks(typer_app):
        for c in typer_app.registered_commands:
            yield c.name or c.callback.__name__, c.callback
        for g in typer_app.registered_groups:
            yield from callbacks(g.typer_instance)

    declared = sorted(
        name for name, cb in callbacks(app) if "debug" in inspect.signature(cb).parameters
    )
    assert declared == ["serve"]
    for args in (
        ["--debug", "words", ""],
        ["words", "", "--debug"],
        ["hardmax", "simulate", "--n", "0", "--debug"],
    ):
        r = run(*args)
        assert r.returncode == 2 and "Traceback" in r.stderr, (args, r.stderr)
        assert r.stderr.strip().splitlines()[-1].startswith("error: "), r.stderr
    assert_one_line_error(run("words", ""), "the text is empty")


# ------------------------------------------------------------------ --plot-format
@pytest.mark.model
def test_plot_format_implies_plots(tmp_path):
    """``--plot-format svg`` without ``--plots`` was an error;
    it asks for figures, so it draws them."""
    out = tmp_path / "res"
    r = run(
        "analyze",
        "Quantum information theory",
        "--layer",
        "0",
        "--head",
        "0",
        "--plot-format",
        "svg",
        "--out",
        str(out),
        "--json",
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["figures"] and all(f.endswith(".svg") for f in doc["figures"])
    assert (
        sorted(p.relative_to(out).as_posix() for p in (out / "figures").iterdir()) == doc["figures"]
    )
    assert_one_line_error(
        run("analyze", "hello", "--plot-format", "svg"), "--plot-format needs --out DIR"
    )


# ------------------------------------------------------------------ compare --scale
@pytest.mark.model
def test_compare_scale_is_not_called_threshold():
    """``--threshold`` cuts the filtration in ``analyze`` but was the comparison scale in
    ``compare``; there it is ``--scale``, and ``--threshold``/``-t`` (and ``--eps``) are unknown
    options (renamed before the first release)."""
    base = (
        "compare",
        "The cat sat on the mat.",
        "A cat sat on a mat.",
        "--layer",
        "1",
        "--head",
        "2",
        "--json",
    )
    docs = {}
    for flag in ("--scale",):
        r = run(*base, flag, "0.3")
        assert r.returncode == 0, r.stderr
        docs[flag] = json.loads(r.stdout)
        assert r.stderr == ""
    for doc in docs.values():
        assert (
            doc["scale"] == 0.3 and "threshold" not in doc
        )  # the library's Comparison.given_scale
        assert [r["shared_edges"] for r in doc["summary"]] == [
            r["shared_edges"] for r in docs["--scale"]["summary"]
        ]
    assert_one_line_error(run(*base, "--scale", "-1"), "--scale must be a finite number >= 0")


def test_compare_help_names_scale_and_no_threshold():
    r = run("compare", "--help")
    assert r.returncode == 0, r.stderr
    assert "--scale" in r.stdout and "--eps" not in r.stdout and "--threshold" not in r.stdout
    for old in ("--threshold", "-t", "--eps"):
        r = run("compare", "a b", "c d", old, "0.3")
        assert r.returncode == 2 and f"No such option: {old}" in r.stderr, r.stderr


# ------------------------------------------------------------------------- -c
def test_short_c_means_context():
    """``-c`` was ``--context`` in ``phrase`` but ``--compare-model`` in ``heads``; it means
    ``--context`` only now (in heads it is an unknown option)."""
    r = run("heads", "--help")
    line = next(ln for ln in r.stdout.splitlines() if "--compare-model" in ln and "MODEL" in ln)
    assert " -c " not in line, line
    assert not any(ln.split()[1:2] == ["-c"] for ln in r.stdout.splitlines() if ln.startswith("│"))
    r = run("phrase", "--help")
    line = next(ln for ln in r.stdout.splitlines() if "--context" in ln and "TEXT" in ln)
    assert " -c " in line, line
    r = run("heads", "The cat sat.", "-c", "minilm")
    assert r.returncode == 2 and "No such option: -c" in r.stderr, r.stderr


# ------------------------------------------------------------------- JSON "summary"
@pytest.mark.model
def test_json_table_key_is_summary_everywhere():
    """The per-row table was ``summary`` in analyze but ``heads_table`` in compare (and
    ``spread_rows`` in phrase, ``slices`` in timeline); ``summary`` now, one object per row,
    and the old keys are gone."""
    heads = ("--layer", "0,1", "--head", "2")
    a = json.loads(run("analyze", "The cat sat on the mat.", *heads, "--json").stdout)
    c = json.loads(
        run("compare", "The cat sat on the mat.", "A cat sat on a mat.", *heads, "--json").stdout
    )
    p = json.loads(
        run("phrase", "cat", "-c", "The cat sat.", "-c", "A cat ran.", *heads, "--json").stdout
    )
    t = json.loads(run("timeline", "The cat sat on the mat.", "--json").stdout)
    for doc in (a, c, p):
        assert sorted((r["layer"], r["head"]) for r in doc["summary"]) == [(0, 2), (1, 2)]
    for doc, old in ((c, "heads_table"), (p, "spread_rows"), (t, "slices"), (p, "total_s")):
        assert old not in doc, old
    assert [(r["layer"], r["head"]) for r in c["summary"]] == [(0, 2), (1, 2)]  # the heads' order
    assert set(a["summary"][0]) >= {"n_bars_h1", "max_persistence_h1"}
    assert {"t", "n_bars_h0"} <= set(t["summary"][0])
    # every --json carries its diagrams (test_json_carries_the_diagrams checks analyze's numbers)
    for side in ("a", "b"):
        assert [(d["layer"], d["head"]) for d in c["diagrams"][side]] == [(0, 2), (1, 2)]
        assert [len(d["points"][0]) for d in c["diagrams"][side]] == [
            c[f"tokens_{side}"].__len__()
        ] * 2
    assert [(d["context"], d["layer"], d["head"]) for d in p["diagrams"]] == [
        (k, lay, 2) for k in (0, 1) for lay in (0, 1)
    ]
    assert all(len(d["points"][0]) == 1 for d in p["diagrams"])  # "cat" is one token: one H0 class
    assert [d["t"] for d in t["diagrams"]] == [s["t"] for s in t["summary"]]
    assert [len(d["points"][0]) for d in t["diagrams"]] == [s["n_bars_h0"] for s in t["summary"]]


# ---------------------------------------------------------------- narrow terminals
@pytest.mark.model
@pytest.mark.parametrize("columns", [80, 60])
def test_compare_maxdim_2_prints_every_number_whole(columns):
    """At 80 columns ``compare --maxdim 2`` cut its numbers to "0.1…"; a table that does not
    fit drops its padding (80 columns), and one that still does not fit is printed one
    ``name  value`` line per column (60 columns)."""
    r = run(
        "compare",
        "The cat sat on the mat.",
        "A cat sat on a mat.",
        "--maxdim",
        "2",
        "--layer",
        "1",
        "--top",
        "4",
        columns=columns,
    )
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    headers = [
        "#",
        "layer",
        "head",
        "ε",
        *[f"{n}\nH{d}" for n in ("bottl.", "W1") for d in range(3)],
        "shared\nedges",
        "shared\ntriangles",
    ]
    layout, rows = parse_table(r.stdout, headers, 4)
    assert layout == ("table" if columns == 80 else "vertical")
    for cells in rows:
        # rank, layer, head, ε, 3 bottleneck, 3 Wasserstein, shared edges and triangles
        assert len(cells) == 12, cells
        assert all(re.fullmatch(r"\d+\.\d{2,3}", x) for x in cells[3:10]), cells
        assert all(x.isdigit() for x in cells[1:3] + cells[10:]), cells
    if columns == 80:
        assert (
            max(len(ln) for ln in r.stdout.splitlines() if "─" in ln) <= 80
        )  # fits once the padding is gone


# ---------------------------------------------------------------------- report
@pytest.mark.model
def test_report_prints_the_path_only(tmp_path):
    """The help promises the path on stdout;
    a sentence came instead ("wrote report … (5.2 MB …)")."""
    out = tmp_path / "r.html"
    r = run("report", "The cat sat on the mat.", "-o", str(out), "--plot-heads", "0")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{out}\n"
    assert r.stderr == ""  # not a terminal: no progress, and nothing from transformers or torch
    assert out.is_file() and out.stat().st_size > 0


# -------------------------------------------------------------------- diagrams
@pytest.mark.model
def test_json_carries_the_diagrams(tmp_path):
    """``--json`` had no diagrams; it has every head's now (births and deaths per dimension, a
    death that never happens as null), readable by ``Diagram.from_dict``; ``--no-diagrams``
    leaves them out."""
    args = (
        "analyze",
        "Quantum information theory allows us to study attention",
        "--layer",
        "1,4",
        "--head",
        "2,11",
        "--json",
    )
    r = run(*args, "--out", str(tmp_path / "res"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    res = at.load_result(tmp_path / "res")
    assert [(d["layer"], d["head"]) for d in doc["diagrams"]] == [(1, 2), (1, 11), (4, 2), (4, 11)]
    for d, row in zip(doc["diagrams"], doc["summary"]):
        ref = res.diagram(d["layer"], d["head"])
        assert at.Diagram.from_dict(d) == ref  # the very numbers, not rounded
        assert d["threshold"] == "inf" and len(d["points"]) == 2
        assert [len(p) for p in d["points"]] == [row["n_bars_h0"], row["n_bars_h1"]]
        deaths = [death for _, death in d["points"][0]]
        assert (
            deaths.count(None) == 1 == int(np.isinf(ref[0][:, 1]).sum())
        )  # one H0 class lives forever
    r = run(*args, "--no-diagrams")
    assert r.returncode == 0, r.stderr
    doc2 = json.loads(r.stdout)
    assert "diagrams" not in doc2 and doc2["summary"] == doc["summary"]


# ----------------------------------------------------------------------- words
FRENCH = "La théorie de l'information étudie l'entropie"


@pytest.mark.model
def test_words_lists_what_align_counts():
    """``--align I:J`` takes word indices that only a Python function listed; ``attntopo words``
    prints them with each word's characters and tokens."""
    r = run("words", FRENCH, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["model"], doc["source"]) == ("minilm", "argument")
    rows = doc["words"]
    assert [w["word"] for w in rows] == [
        "La",
        "théorie",
        "de",
        "l",
        "'",
        "information",
        "étudie",
        "l",
        "'",
        "entropie",
    ]
    assert [w["index"] for w in rows] == list(range(10))
    assert all(FRENCH[w["start"] : w["end"]] == w["word"] for w in rows)
    # positions in the model's input: [CLS] is 0, so the first word's token is 1
    assert (
        rows[0]["tokens"] == [1]
        and rows[5]["tokens"] == [7]
        and rows[5]["labels"] == ["information"]
    )
    toks = [t for w in rows for t in w["tokens"]]
    assert toks == list(
        range(1, len(toks) + 1)
    )  # every content token belongs to one word, in order
    r = run("words", FRENCH)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if "information" in ln and "16–27" in ln)
    assert line.split()[:4] == ["5", "information", "16–27", "7"], line


# ---------------------------------------------------------------- --file newline
@pytest.mark.model
def test_file_drops_one_trailing_newline(tmp_path):
    """An editor ends a file with a newline, which SmolLM2 turned into a last ``Ċ`` token:
    ``--file`` drops one trailing newline (``\\n`` or ``\\r\\n``), and only one."""
    cases = {
        "one.txt": ("The cat sat.\n", "The cat sat."),
        "two.txt": ("The cat sat.\n\n", "The cat sat.\n"),
        "crlf.txt": ("The cat sat.\r\n", "The cat sat."),
        "none.txt": ("The cat sat.", "The cat sat."),
    }
    for name, (body, expected) in cases.items():
        (tmp_path / name).write_bytes(body.encode("utf-8"))
        r = run(
            "analyze",
            "-f",
            str(tmp_path / name),
            "--layer",
            "0",
            "--head",
            "0",
            "--json",
            "--no-diagrams",
        )
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["text"] == expected, name
    r = run("analyze", "-f", "-", "--layer", "0", "--head", "0", "--json", stdin="The cat sat.\n")
    assert json.loads(r.stdout)["text"] == "The cat sat."


@pytest.mark.slow
@pytest.mark.smollm2
def test_smollm2_file_has_no_newline_token_and_quiet_stderr():
    if "smollm2" not in at.packaged_aliases():
        pytest.skip("the packaged SmolLM2 is not installed")
    r = run(
        "analyze",
        "-f",
        str(ROOT / "examples" / "quantum.txt"),
        "-m",
        "smollm2",
        "--layer",
        "0",
        "--head",
        "0",
        "--json",
        "--no-diagrams",
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tokens"][-1] != "Ċ" and doc["labels"][-1] != "↵" and doc["text"].endswith(".")
    assert r.stderr == ""  # nothing from transformers, torch or the GGUF conversion


# ------------------------------------------------------------------- too long
LONG = " ".join(["word"] * 600)  # 602 MiniLM tokens with [CLS] and [SEP]


@pytest.mark.model
def test_too_long_names_the_cli_fix():
    """The error told CLI users to "truncate it" (the library's wording, meant for truncate=True);
    it names --truncate now.  With --truncate nothing but the result is printed: no line from
    transformers ("Token indices sequence length …") or torch on stderr."""
    r = run("analyze", LONG, "--layer", "0", "--head", "0")
    line = assert_one_line_error(r)
    assert (
        line
        == "error: text has 602 tokens but minilm takes at most 512: shorten it or pass --truncate"
    )
    for extra in ((), ("--json",)):
        r = run("analyze", LONG, "--layer", "0", "--head", "0", "--truncate", *extra)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
    assert json.loads(r.stdout)["n_tokens"] == 512


def test_align_out_of_range_lists_the_words():
    """A wrong ``--align`` index said only "out of range … (see attntopo.words.split_words)"; the
    line lists the text's words with their indices now, before any model is loaded."""
    r = run("compare", "Information theory studies entropy", FRENCH, "--align", "0:5,1:12")
    line = assert_one_line_error(r)
    assert line == (
        "error: --align 1:12: word 12 is out of range for TEXT_B, which has 10 words: 0 La · 1 "
        "théorie · 2 de · 3 l · 4 ' · 5 information · 6 étudie · 7 l · 8 ' · 9 entropie (attntopo "
        "words TEXT shows their tokens too)"
    )
    long_text = " ".join(f"w{i}" for i in range(50))
    line = assert_one_line_error(run("compare", long_text, "b", "--align", "50:0"))
    assert "word 50 is out of range for TEXT_A, which has 50 words: 0 w0 · 1 w1 · " in line
    assert "· 27 w27 · … · 49 w49 (attntopo words TEXT" in line


# ------------------------------------------------------------------ corpus --backend
def test_corpus_backend_is_not_called_engine(tmp_path):
    """``--engine`` is the persistence engine everywhere; corpus's local/ray choice is
    ``--backend`` (``--engine local|ray`` is one line naming it).  Checked on refusals that
    come before any model loads or any file is written."""
    store = tmp_path / "store"
    base = ("corpus", "-", "--out", str(store), "--gpus-per-actor", "1.5")
    new = run(*base, "--backend", "ray", stdin="one text\n")
    assert_one_line_error(new, "gpus_per_actor 1.5: Ray takes a fraction below 1")
    assert_one_line_error(
        run(*base, "--engine", "ray", stdin="one text\n"),
        "--engine ray: --engine is the persistence engine",
        "where the corpus runs is --backend ray",
    )
    assert_one_line_error(
        run("corpus", "-", "--out", str(store), "--engine", "fast", stdin="one text\n"),
        "unknown persistence engine 'fast'",
    )
    assert_one_line_error(
        run("corpus", "-", "--out", str(store), "--backend", "spark", stdin="one text\n"),
        "unknown corpus backend 'spark'",
    )
    assert not store.exists()
    help_text = run("corpus", "--help").stdout
    assert "--backend" in help_text and "Persistence engine" in help_text


@pytest.mark.model
def test_corpus_engine_is_the_persistence_engine(tmp_path):
    """``--engine ripser`` is the persistence engine and lands in the store's settings."""
    new = run(
        "corpus",
        "-",
        "--out",
        str(tmp_path / "b"),
        "--backend",
        "local",
        "--engine",
        "ripser",
        "--layer",
        "0",
        "--head",
        "0",
        "--json",
        stdin="one text\n",
    )
    assert new.returncode == 0 and new.stderr == "", new.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["settings"]["features"]["engine"] == "ripser"  # a feature setting
