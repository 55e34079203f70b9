"""The threshold graph's ε slider, computed in the page (issue 15 item 1).

The figure carries, per token pair, the first slider step whose ε reaches the pair's
distance; ``plots/assets/threshold_graph.js`` turns that into edges and triangles.  These
tests check the data against :func:`attntopo.complex_at` in Python, then the page itself in
Debian's Chromium (Playwright): every slider position shows and draws exactly complex_at's
edge and triangle counts, ties at the slider's values included.  The reports themselves
(size, the suggested ε) are in ``test_report_size.py``.
"""

from __future__ import annotations

import base64
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attntopo as at
from attntopo.errors import InvalidInputError

pytest.importorskip("plotly")

from _live import chromium_missing_reason  # noqa: E402
from attntopo import plots  # noqa: E402
from attntopo.plots.interactive import (  # noqa: E402
    MAX_DRAWN_EDGES,
    MAX_DRAWN_TRIANGLES,
    threshold_graph_eps,
    threshold_graph_script,
)
from report_page import open_page, slider_state, step_to  # noqa: E402

_MISSING = chromium_missing_reason()
if _MISSING:
    warnings.warn(f"BROWSER TESTS SKIPPED: {_MISSING}", stacklevel=1)
needs_browser = pytest.mark.skipif(
    _MISSING is not None, reason=f"BROWSER TESTS SKIPPED: {_MISSING}"
)

GRID = 8  # tie matrices take their distances from {1/8, 2/8, …, 1}: exact in binary


def tie_matrix(n: int, seed: int) -> np.ndarray:
    """A symmetric matrix whose distances all sit on the slider's values (ties everywhere)."""
    rng = np.random.default_rng(seed)
    D = rng.integers(1, GRID + 1, size=(n, n)) / GRID
    D = np.triu(D, 1)
    return D + D.T


def decoded_steps(fig) -> tuple[np.ndarray, np.ndarray, int]:
    """(scales, (n, n) matrix of each pair's first step, opening step) from a figure's data."""
    m = fig.layout.meta["attntopo"]
    raw = base64.b64decode(m["steps"])
    codes = np.frombuffer(raw, dtype=np.uint8 if m["dtype"] == "u1" else "<u2")
    n = m["n"]
    S = np.full((n, n), -1, dtype=np.int64)
    S[np.triu_indices(n, 1)] = codes
    return np.asarray(m["scales"]), S, m["start"]


def simplices_at_step(S: np.ndarray, k: int) -> tuple[set, set]:
    """Edges and triangles of the page's rule: a pair is an edge at step k iff its step <= k."""
    n = S.shape[0]
    E = {(i, j) for i in range(n) for j in range(i + 1, n) if S[i, j] <= k}
    T = {(i, j, m) for (i, j) in E for m in range(j + 1, n) if (i, m) in E and (j, m) in E}
    return E, T


def complex_sets(D: np.ndarray, eps: float) -> tuple[set, set]:
    cx = at.complex_at(D, eps)
    return {tuple(e) for e in cx.simplices(1).tolist()}, {
        tuple(t) for t in cx.simplices(2).tolist()
    }


# ------------------------------------------------------------------ the data, in Python
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 9),
    seed=st.integers(0, 2**32 - 1),
    picks=st.lists(st.integers(1, GRID), min_size=1, max_size=GRID, unique=True),
)
def test_step_codes_give_complex_at_at_every_step(n, seed, picks):
    """Ties at the slider's values: the page's rule (step <= k) is complex_at's (D <= ε)."""
    D = tie_matrix(n, seed)
    scales = sorted(p / GRID for p in picks)
    fig = plots.iplot_threshold_graph(D, scales=scales)
    got_scales, S, _ = decoded_steps(fig)
    assert got_scales.tolist() == scales
    for k, eps in enumerate(scales):
        assert simplices_at_step(S, k) == complex_sets(D, eps)


def test_step_codes_of_an_asymmetric_matrix_follow_complex_at():
    """complex_at uses the mean of D and D.T;
    so does the slider (within the validator's tolerance)."""
    D = tie_matrix(7, 3)
    D[0, 1] = 0.5 * (1 + 1e-12)  # D[1, 0] stays what it was
    D[1, 0] = 0.5
    fig = plots.iplot_threshold_graph(D, scales=[0.5])
    _, S, _ = decoded_steps(fig)
    assert simplices_at_step(S, 0) == complex_sets(D, 0.5)


def test_slider_holds_the_opening_eps_exactly():
    rng = np.random.default_rng(1)
    X = rng.random((30, 4))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    eps = 0.4287654321012345  # between two quantiles: added to the slider
    fig = plots.iplot_threshold_graph(D, scale=eps, title="t")
    scales, _, start = decoded_steps(fig)
    assert scales[start] == eps and threshold_graph_eps(fig) == eps
    assert np.all(np.diff(scales) > 0)
    n_e = len(at.complex_at(D, eps).simplices(1))
    n_t = len(at.complex_at(D, eps).simplices(2))
    assert (
        fig.layout.title.text
        == f"t · threshold graph at ε = {eps:.3g} · {n_e} edges · {n_t} triangles"
    )
    # an eps that is already a slider value is not added twice
    again = plots.iplot_threshold_graph(D, scales=scales.tolist(), scale=float(scales[3]))
    assert decoded_steps(again)[0].tolist() == scales.tolist() and decoded_steps(again)[2] == 3


def test_opening_arguments_are_checked():
    D = tie_matrix(5, 0)
    with pytest.raises(InvalidInputError, match="not both"):
        plots.iplot_threshold_graph(D, scale=0.5, start=1)
    with pytest.raises(InvalidInputError, match="^scale must be"):
        plots.iplot_threshold_graph(D, scale=-1)
    with pytest.raises(InvalidInputError, match="start"):
        plots.iplot_threshold_graph(D, scales=[0.5], start=3)
    with pytest.raises(InvalidInputError, match="at most 65535"):
        plots.iplot_threshold_graph(D, scales=np.arange(1, 65538) / 65537)
    with pytest.raises(InvalidInputError, match="iplot_threshold_graph"):
        threshold_graph_eps(plots.iplot_distance_matrix(D))
    assert threshold_graph_script(plots.iplot_distance_matrix(D)) is None


def test_size_does_not_grow_with_the_slider_steps():
    """O(n²) per graph: the same bytes (one per pair) for 16 or 250 steps; two bytes beyond 255."""
    rng = np.random.default_rng(2)
    X = rng.random((60, 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    pairs = 60 * 59 // 2
    sizes = {}
    for k in (16, 250, 400):
        fig = plots.iplot_threshold_graph(D, n_scales=k, scale=0.3)
        m = fig.layout.meta["attntopo"]
        assert len(base64.b64decode(m["steps"])) == pairs * (1 if len(m["scales"]) <= 255 else 2)
        # what is left besides the pairs' steps and the slider's values holds nothing per step
        sizes[k] = (
            len(fig.to_json())
            - len(m["steps"])
            - len(json.dumps(m["scales"], separators=(",", ":")))
        )
    # 384 more steps change the rest by digits only (counts in the title, JSON number formats):
    # under 1.5 bytes a step, where one edge drawn per step would take more than 20
    assert max(sizes.values()) - min(sizes.values()) < 1.5 * (400 - 16), sizes


# ----------------------------------------------------------------------- in the page
@pytest.fixture(scope="module")
def browser():
    from _live import chromium_browser

    with chromium_browser() as b:
        yield b


def _drawn(page, k: int) -> tuple[int, int]:
    """Segments and outlines drawn in graph k (each ends in a gap)."""
    return tuple(
        page.evaluate(
            """(k) => { const gd = document.querySelectorAll('.plotly-graph-div')[k];
                    const gaps = (a) => Array.from(a || [])
                        .filter((v) => v === null || Number.isNaN(v)).length;
                    return [gaps(gd.data[1].x), gaps(gd.data[0].x)]; }""",
            k,
        )
    )


@pytest.mark.slow
@needs_browser
def test_page_counts_match_complex_at_at_every_step_with_ties(browser, tmp_path):
    D = tie_matrix(12, 7)
    scales = [k / GRID for k in range(1, GRID + 1)]
    path = plots.save_figure(
        plots.iplot_threshold_graph(D, scales=scales, scale=0.5), tmp_path / "g.html"
    )
    with open_page(browser, path) as page:
        state = slider_state(page, 0)
        assert float(state["eps"]) == 0.5 and int(state["step"]) == scales.index(
            0.5
        )  # opens at eps
        seen = []
        for k in [0, 1, 2, 3, 4, 5, 6, 7, 3, 0]:  # up with the arrow key, then jumps back
            state = step_to(page, 0, k)
            eps = float(state["eps"])
            assert eps == scales[k]
            E, T = complex_sets(D, eps)
            assert (int(state["edges"]), int(state["triangles"])) == (len(E), len(T)), eps
            assert _drawn(page, 0) == (len(E), len(T))  # small: everything is drawn
            assert state["label"] == (
                f"ε = {eps:.3g} · {len(E)} edge{'' if len(E) == 1 else 's'} · "
                f"{len(T)} triangle{'' if len(T) == 1 else 's'}"
            )
            seen.append(len(E))
        assert len(set(seen)) > 4, "the slider changes what is drawn"


@pytest.mark.slow
@needs_browser
def test_page_caps_the_drawing_but_not_the_counts(browser, tmp_path):
    """Beyond MAX_DRAWN_EDGES / MAX_DRAWN_TRIANGLES the page draws the edges (triangles) of an
    earlier step within the cap, says so, and the counts stay exact."""
    n = 215  # 23005 pairs: the last steps exceed both caps
    rng = np.random.default_rng(4)
    X = rng.random((n, 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    fig = plots.iplot_threshold_graph(D, n_scales=20, start=0)
    scales = fig.layout.meta["attntopo"]["scales"]
    path = plots.save_figure(fig, tmp_path / "big.html")
    with open_page(browser, path) as page:
        assert (
            page.locator(".attntopo-eps-note").inner_text() == ""
        )  # the first step is drawn in full
        top = len(scales) - 1
        state = step_to(page, 0, top)
        E, T = complex_sets(D, scales[top])
        assert len(E) == n * (n - 1) // 2 > MAX_DRAWN_EDGES and len(T) > MAX_DRAWN_TRIANGLES
        assert (int(state["edges"]), int(state["triangles"])) == (len(E), len(T))
        d_e, d_t = int(state["drawnEdges"]), int(state["drawnTriangles"])
        assert 0 <= d_t <= d_e < top
        n_e = len(at.complex_at(D, scales[d_e], max_simplex_dim=1).simplices(1))
        n_t = len(at.complex_at(D, scales[d_t]).simplices(2))
        assert (
            n_e
            <= MAX_DRAWN_EDGES
            < len(at.complex_at(D, scales[d_e + 1], max_simplex_dim=1).simplices(1))
        )
        assert n_t <= MAX_DRAWN_TRIANGLES
        assert _drawn(page, 0) == (n_e, n_t)
        note = page.locator(".attntopo-eps-note").inner_text()
        assert f"{n_e} edges present at ε = {scales[d_e]:.3g}" in note
        assert f"{n_t} triangles present at ε = {scales[d_t]:.3g}" in note
