"""HTML reports and notebook fragments (:mod:`attntopo.report`) of synthetic attention (no model).

``attntopo report`` on the real model: tests/cli/test_cli_report.py; the page in a browser:
tests/web/test_report_slider.py and test_report_size.py.
"""

from __future__ import annotations

import pytest

import attntopo as at
from _pages import check_self_contained, parse
from _synthetic import text_attention
from attntopo.errors import InvalidInputError, OutOfRangeError

pytest.importorskip("plotly")


@pytest.fixture(scope="module")
def results():
    """A 2-layer × 3-head comparison of two texts with HTML's special characters in them."""
    c = at.compare(
        text_attention("Information <b>theory</b> & entropy", seed=1),
        text_attention("Quantum information <b>theory</b>", seed=2),
        n_jobs=1,
    )
    return c.a, c


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


def test_report_html_library(results, tmp_path):
    from attntopo.report import default_heads, report_html, write_report

    a, c = results
    heads = default_heads(a, n=2)
    assert len(heads) == 2
    html = report_html(a, comparison=c, heads=[(0, 1), (-1, -1)], title="A <title>")
    p = check_self_contained(html)
    assert {"L0H1", "L1H2", "cmp-L0H1", "cmp-L1H2"} <= p.ids  # (-1, -1): the last layer and head
    assert "A &lt;title&gt;" in html
    path = write_report(tmp_path / "r.html", html)
    assert path.read_text(encoding="utf-8") == html
    with pytest.raises(InvalidInputError):
        write_report(tmp_path, html)
    with pytest.raises(OutOfRangeError):
        report_html(a, heads=[(9, 0)])
    with pytest.raises(InvalidInputError):
        report_html(c)
