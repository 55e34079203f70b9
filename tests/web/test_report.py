"""Self-contained HTML reports (``attntopo report``, :mod:`attntopo.report`)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from attntopo.cli import main
from attntopo.errors import InvalidInputError, OutOfRangeError

from web_helpers import TEXT_A, TEXT_B

pytest.importorskip("plotly")


class _Collect(HTMLParser):
    """Tags, ids and script bodies of a page; fails on tags left open at the end."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "source", "area", "base", "col", "embed", "wbr", "path",
            "rect", "circle", "line", "polygon"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.ids: set[str] = set()
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None
        self._buf: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "script":
            self._in_script, self._buf = a, []
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._buf)))
            self._in_script = None
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data):
        if self._in_script is not None:
            self._buf.append(data)


def parse(html: str) -> _Collect:
    p = _Collect()
    p.feed(html)
    p.close()
    assert p.stack == [], f"unclosed tags: {p.stack}"
    return p


def check_self_contained(html: str) -> _Collect:
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=", html, flags=re.I), "a script is loaded, not inlined"
    assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?https?:", html, flags=re.I)
    assert not re.search(r"<script src=[\"']?http", html, flags=re.I)
    p = parse(html)
    bodies = [body for _, body in p.scripts]
    plotly_js = [b for b in bodies if len(b) > 1_000_000 and "plotly" in b[:5000].lower()]
    assert len(plotly_js) == 1, "plotly.js must be inlined exactly once"
    # every figure is drawn into a div of the page
    drawn = re.findall(r'Plotly\.newPlot\(\s*"([^"]+)"', html)
    assert drawn and all(d in p.ids for d in drawn)
    return p


@pytest.mark.model
@pytest.mark.slow
def test_cli_report_one_text(tmp_path):
    out = tmp_path / "sub" / "report.html"
    rc = main(["report", TEXT_A, "-o", str(out), "--layer", "1", "--head", "2", "--layer", "4", "--head", "11"])
    assert rc == 0
    html = out.read_text(encoding="utf-8")
    p = check_self_contained(html)
    assert {"summary", "heads", "L1H2", "L4H11"} <= p.ids
    assert "Quantum information theory" in html
    assert not list(out.parent.glob(".report.html.*")), "no temporary file left behind"


@pytest.mark.model
@pytest.mark.slow
def test_cli_report_with_comparison(tmp_path, capsys):
    out = tmp_path / "cmp.html"
    rc = main(["report", TEXT_A, "--compare", TEXT_B, "-o", str(out), "--plot-heads", "1"])
    assert rc == 0
    assert capsys.readouterr().out == f"{out}\n"  # the path written, only
    html = out.read_text(encoding="utf-8")
    p = check_self_contained(html)
    assert {"summary", "heads", "comparison", "comparison-heads"} <= p.ids
    assert any(i.startswith("cmp-L") for i in p.ids)
    assert "Classical information theory" in html and "shared tokens (" in html


@pytest.mark.parametrize(
    "args, words",
    [
        (["report", "hello"], ["--out"]),
        (["report", "hello", "-o", "x.txt"], [".html"]),
        (["report", "   ", "-o", "x.html"], ["empty"]),
        (["report", "hello", "--compare", " ", "-o", "x.html"], ["--compare", "empty"]),
        (["report", "hello", "-o", "x.html", "--layer", "1"], ["--layer and --head"]),
        (["report", "hello", "-o", "x.html", "--layer", "1,2", "--head", "1,2,3"], ["pair up"]),
        (["report", "hello", "-o", "x.html", "--maxdim", "5"], ["--maxdim"]),
    ],
)
def test_cli_report_bad_input(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    for w in words:
        assert w in err
    assert not list(tmp_path.iterdir()), "nothing is written on bad input"


def test_cli_report_out_is_a_folder(tmp_path, capsys):
    assert main(["report", "hello", "-o", str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err


@pytest.fixture(scope="module")
def results(minilm):
    import attntopo as at

    c = at.compare("Information <b>theory</b> & entropy", "Quantum information <b>theory</b>", minilm)
    return c.a, c


@pytest.mark.slow
def test_html_fragments_for_notebooks(results):
    from attntopo.report import analysis_html, comparison_html

    a, c = results
    for frag in (analysis_html(a), comparison_html(c)):
        assert "<script" not in frag and "<table" in frag
        assert "<b>theory" not in frag and "&lt;" in frag and "&amp;" in frag  # tokens escaped
        parse(f"<div>{frag}</div>")
    assert "most similar" in comparison_html(c)
    assert "max persistence h1" in analysis_html(a)
    with pytest.raises(InvalidInputError):
        analysis_html(c)
    with pytest.raises(InvalidInputError):
        comparison_html(a)
    with pytest.raises(InvalidInputError, match="statistic"):
        analysis_html(a, stat="nope")


@pytest.mark.slow
def test_report_html_library(results, tmp_path):
    from attntopo.report import default_heads, report_html, write_report

    a, c = results
    heads = default_heads(a, 2)
    assert len(heads) == 2
    html = report_html(a, c, heads=[(0, 1), (-1, -1)], title="A <title>")
    p = check_self_contained(html)
    assert {"L0H1", "L5H11", "cmp-L0H1", "cmp-L5H11"} <= p.ids
    assert "A &lt;title&gt;" in html
    path = write_report(tmp_path / "r.html", html)
    assert path.read_text(encoding="utf-8") == html
    with pytest.raises(InvalidInputError):
        write_report(tmp_path, html)
    with pytest.raises(OutOfRangeError):
        report_html(a, heads=[(9, 0)])
    with pytest.raises(InvalidInputError):
        report_html(c)
