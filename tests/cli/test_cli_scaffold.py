"""The command scaffold of ``cli/_options.py`` in-process (no model): ``@command`` declares a shared
option from its parameter name, words it with ``helps=``, types a static ``--plot-format`` with
``static_figures=``, and refuses a parameter it cannot declare."""

from __future__ import annotations

import re
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from attntopo.cli._options import command


def _app(**options):
    group = typer.Typer()
    seen: dict = {}

    @command("run", group=group, **options)
    def run_cmd(
        out=None,
        plots=False,
        plot_format=None,
        json_out=False,
        k: Annotated[int, typer.Option("--k")] = 3,
    ) -> None:
        seen.update(out=out, plots=plots, plot_format=plot_format, json_out=json_out, k=k)

    @group.callback()
    def _root() -> None:
        pass

    return group, seen, run_cmd


def test_shared_options_by_name_in_their_place_with_their_help():
    group, seen, _ = _app(helps={"out": "Where this command saves."})
    r = CliRunner().invoke(group, ["run", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    lines = [ln for ln in r.output.splitlines() if "--" in ln]
    order = [
        next(o for o in ("--out", "--plots", "--plot-format", "--json", "--k") if f"{o} " in ln)
        for ln in lines
        if any(f"{o} " in ln for o in ("--out", "--plots", "--plot-format", "--json", "--k"))
    ]
    assert order == ["--out", "--plots", "--plot-format", "--json", "--k"]
    assert "Where this command saves." in r.output and "Print machine-readable JSON" in r.output
    r = CliRunner().invoke(group, ["run", "-o", "x", "--json", "--plot-format", "html", "--k", "5"])
    assert r.exit_code == 0, r.output
    assert seen["out"].name == "x" and seen["json_out"] and seen["k"] == 5
    assert [getattr(f, "value", f) for f in seen["plot_format"]] == ["html"]


def test_static_figures_refuse_html_while_parsing():
    group, seen, _ = _app(static_figures="the test figure is")
    r = CliRunner().invoke(group, ["run", "--plot-format", "SVG", "--plot-format", "pdf"])
    assert r.exit_code == 0, r.output
    assert seen["plot_format"] == ["svg", "pdf"]
    for bad, words in (
        ("html", "the test figure is static; use png, svg or pdf"),
        ("gif", "not one of png, svg, pdf"),
    ):
        r = CliRunner().invoke(group, ["run", "--plot-format", bad])
        flat = " ".join(re.sub("[│╭╮╰╯─]", " ", r.output).split())  # rich's error box, unwrapped
        assert r.exit_code == 2 and words in flat, r.output


def test_a_parameter_it_cannot_declare_is_refused():
    group = typer.Typer()
    with pytest.raises(TypeError, match="'width' has no annotation"):

        @command("bad", group=group)
        def bad(width=3) -> None:  # pragma: no cover - never registered
            pass

    with pytest.raises(TypeError, match=r"helps for \['top'\]"):

        @command("bad2", group=group, helps={"top": "…"})
        def bad2(out=None) -> None:  # pragma: no cover - never registered
            pass


def test_the_decorated_function_is_the_one_written():
    _, _, fn = _app()
    assert fn.__name__ == "run_cmd" and "debug" not in fn.__code__.co_varnames
