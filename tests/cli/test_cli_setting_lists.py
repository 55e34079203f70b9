"""Comma lists (``attntopo corpus --thresholds 0.1,0.2``, ``--sets``, ``approx --family``)
as a subprocess: an empty item is a slip, refused in one line as ``--layer 1,,2`` is, not dropped
(``0.1,,0.2`` made a store with thresholds ``(0.1, 0.2)``, ``js,`` one with ``js``)."""

from __future__ import annotations

import pytest

from _cli import assert_one_line_error, run


@pytest.mark.parametrize(
    "args, fragments",
    [
        (
            ["--thresholds", "0.1,,0.2"],
            ["--thresholds has an empty item in '0.1,,0.2'", "single commas", "'0.1,0.2'"],
        ),
        (["--thresholds", ","], ["--thresholds has an empty item in ','", "'0.1,0.5'"]),
        (["--scales", "0.1", "--scales", ",0.3"], ["--scales has an empty item in ',0.3'"]),
        (["--quantiles", "0.5,"], ["--quantiles has an empty item in '0.5,'", "'0.5'"]),
        (["--sets", "js,,graph"], ["--sets has an empty item in 'js,,graph'", "'js,graph'"]),
        # an option given empty keeps its own message (no list was typed)
        (["--sets", ""], ["sets is empty: name at least one of js,"]),
    ],
)
def test_an_empty_item_in_a_setting_list_is_one_line_and_makes_no_store(tmp_path, args, fragments):
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat\nthe dog ran\n", encoding="utf-8")
    store = tmp_path / "store"
    r = run("corpus", str(texts), "--out", str(store), "-m", "minilm", *args, cwd=tmp_path)
    assert_one_line_error(r, *fragments)
    assert not store.exists()


@pytest.mark.parametrize(
    "args, fragments",
    [
        (
            ["approx", "a b c", "-m", "minilm", "--family", "top_k,,kernel"],
            ["--family has an empty item in 'top_k,,kernel'", "'top_k,kernel'"],
        ),
        (
            ["hardmax", "train", "--fortunes", "food,,law"],
            ["--fortunes has an empty item in 'food,,law'", "'food,law'"],
        ),
    ],
    ids=["approx --family", "hardmax train --fortunes"],
)
def test_an_empty_item_in_other_comma_lists_is_one_line(args, fragments):
    assert_one_line_error(run(*args), *fragments)
