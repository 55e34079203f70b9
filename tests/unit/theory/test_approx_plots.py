"""Figures of an Approximability (synthetic attention, no model)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from attntopo.attention import Attention
from attntopo.errors import InvalidInputError
from attntopo.plots.theory_approx import (
    approx_bundle,
    plot_approx_budgets,
    plot_approx_entropy,
    plot_approx_winners,
    plot_approximability,
)
from attntopo.theory import approximability


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(0)
    n = 14
    W = rng.dirichlet(np.full(n, 0.2), size=(2, 3, n))
    att = Attention.from_weights(W, [f"t{i}" for i in range(n)], text="synthetic")
    return approximability(
        att, families=["band_sparse", "top_k", "low_rank", "cluster_h0"], budgets=[4, 8]
    )


def test_panels_and_overview(result):
    before = dict(matplotlib.rcParams)
    for fig in (
        plot_approx_budgets(result),
        plot_approx_budgets(result, by="js"),
        plot_approx_winners(result, budget=4),
        plot_approx_entropy(result),
        plot_approximability([result, result], budget=8),
    ):
        assert isinstance(fig, Figure)
    assert dict(matplotlib.rcParams) == before
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_approx_winners(result, ax=ax) is fig
    # the winner grid shows each head's family: its image holds the family indices
    idx = np.asarray(ax.images[0].get_array())
    fams = list(result.families)
    assert [[fams[i] for i in row] for row in idx.tolist()] == result.winners(8).tolist()


def test_bundle_files(result):
    files = approx_bundle(result).files(formats=["png", "svg"])
    assert sorted(files) == ["figures/approximability.png", "figures/approximability.svg"]
    assert files["figures/approximability.png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input(result):
    with pytest.raises(InvalidInputError, match="expected an Approximability"):
        plot_approx_budgets(object())
    with pytest.raises(InvalidInputError, match="budget 16 was not measured"):
        plot_approx_winners(result, budget=16)
    with pytest.raises(InvalidInputError, match="needs the top_k and kernel"):
        plot_approx_entropy(result, other="kernel")
    with pytest.raises(InvalidInputError):
        plot_approximability([])
