"""attntopo.plots.hardmax: figures of a simulation
(Figure objects, ax=, no show, no global style)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from attntopo.errors import InvalidInputError
from attntopo.hardmax import simulate
from attntopo.plots import hardmax as ph


@pytest.fixture(scope="module")
def sims():
    rng = np.random.default_rng(2)
    return {
        d: simulate(
            rng.normal(size=(24, d)),
            A=None,
            alpha=1.0,
            steps=45,
            tokens=[f"w{i}" for i in range(24)],
        )
        for d in (1, 2, 5)
    }


def test_figures_are_returned_and_rcparams_untouched(sims, monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("show() called"))
    before = dict(matplotlib.rcParams)
    for r in sims.values():
        for fn in (
            ph.plot_trajectories,
            ph.plot_cluster_counts,
            ph.plot_h0_by_step,
            ph.plot_hardmax_overview,
        ):
            fig = fn(r)
            assert isinstance(fig, Figure)
            fig.canvas.draw()
    assert dict(matplotlib.rcParams) == before


def test_ax_is_used(sims):
    fig = Figure()
    axes = fig.subplots(1, 3)
    assert ph.plot_trajectories(sims[2], ax=axes[0]) is fig
    assert ph.plot_cluster_counts(sims[2], ax=axes[1]) is fig
    assert ph.plot_h0_by_step(sims[2], ax=axes[2]) is fig
    assert axes[2].get_yscale() == "log"
    with pytest.raises(InvalidInputError):
        ph.plot_trajectories(sims[2], ax="not an axes")


def test_trajectories_show_paths_hull_and_leaders(sims):
    r = sims[2]
    fig = ph.plot_trajectories(r)
    ax = fig.axes[0]
    labels = [t.get_label() for t in ax.get_lines() + ax.collections]
    assert "polytope of the leaders" in labels
    assert f"leaders ({int(r.leaders[-1].sum())})" in labels
    # one path per token, through every step
    paths = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == r.steps + 1]
    assert len(paths) == r.n_tokens
    # the hull passes through the leaders' final positions
    hull = [ln for ln in ax.get_lines() if ln.get_label() == "polytope of the leaders"][0]
    xy = np.c_[hull.get_xdata(), hull.get_ydata()]
    lead = r.final[r.leaders[-1]]
    assert set(map(tuple, np.round(xy, 9))) <= set(map(tuple, np.round(lead, 9)))
    assert len(ax.texts) == r.n_tokens  # labels of at most 40 tokens are written


def test_projection_of_higher_dimensions(sims):
    r = sims[5]
    P, xl, yl = ph.projection_2d(r)
    assert P.shape == (r.steps + 1, r.n_tokens, 2) and "principal axis 1" in xl
    Q, _, _ = ph.projection_2d(r, dims=(3, 1))
    assert np.array_equal(Q, r.trajectories[:, :, [3, 1]])
    for bad in [(0,), (1, 1), (0, 9)]:
        with pytest.raises(InvalidInputError):
            ph.projection_2d(r, dims=bad)
    P1, xl1, yl1 = ph.projection_2d(sims[1])
    assert yl1 == "step" and np.array_equal(P1[:, :, 0], sims[1].trajectories[:, :, 0])


def test_h0_dots_are_the_finite_deaths(sims):
    r = sims[2]
    dgms = r.diagrams()
    fig = ph.plot_h0_by_step(r, diagrams=dgms, log=False)
    offs = fig.axes[0].collections[0].get_offsets()
    expected = sum(int(np.isfinite(np.asarray(d[0])[:, 1]).sum()) for d in dgms)
    assert len(offs) == expected
    with pytest.raises(InvalidInputError, match="one diagram per step"):
        ph.plot_h0_by_step(r, diagrams=dgms[:3])


def test_bundle_files(sims):
    files = ph.hardmax_bundle(sims[2]).files(formats=["png", "svg"])
    assert sorted(files) == [
        "figures/clusters.png",
        "figures/clusters.svg",
        "figures/h0.png",
        "figures/h0.svg",
        "figures/trajectories.png",
        "figures/trajectories.svg",
    ]
    assert files["figures/h0.png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_wrong_result_type():
    with pytest.raises(InvalidInputError, match="expected a HardmaxSimulation"):
        ph.plot_cluster_counts(object())


def test_colour_by_leader_or_cluster():
    # after 3 steps nobody has reached a leader: 3 points per group, but 2 groups by leader
    r = simulate(
        np.array([[1.0, 0.0], [0.0, 1.0], [0.8, 0.1], [0.1, 0.7]]), A=None, alpha=1.0, steps=3
    )
    by_leader = ph.plot_trajectories(r).axes[0].collections
    by_point = ph.plot_trajectories(r, color_by="cluster").axes[0].collections

    def n_colours(cols):
        start = [c for c in cols if c.get_label() == "tokens at step 0"][0]
        return len({tuple(np.round(e, 6)) for e in start.get_edgecolors()})

    assert n_colours(by_leader) == 2 and n_colours(by_point) == 4
    with pytest.raises(InvalidInputError, match="color_by"):
        ph.plot_trajectories(r, color_by="nope")
