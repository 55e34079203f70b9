"""SelectHeads.scores_ and plots.plot_head_importance: from a fitted pipeline to "these heads,
this much", as a layer x head figure saved as PNG, SVG and PDF."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import Rectangle
from sklearn.feature_selection import f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from _figures import STATIC_FORMATS, check_figure_file
from attntopo import plots
from attntopo.errors import InvalidInputError
from attntopo.features import column_name
from attntopo.sklearn import SelectHeads

L, H, Q = 3, 4, 3  # layers, heads, quantities per head


def _data(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 20)
    cols = [column_name(a, b, "js", f"q{k}") for a in range(L) for b in range(H) for k in range(Q)]
    X = rng.normal(size=(40, len(cols)))
    X[:, cols.index("L2H1.js.q0")] += 3.0 * y  # one head carries the label
    X[:, cols.index("L0H3.js.q2")] += 1.0 * y
    return X, y, cols


def test_select_heads_scores_every_head_as_anova_says():
    X, y, cols = _data()
    sel = SelectHeads(k=2, criterion="anova", feature_names=cols).fit(X, y)
    F, _ = f_classif(X, y)  # independent: sklearn's F per column, averaged per head by hand
    expected = {
        (a, b): float(np.mean(F[[cols.index(column_name(a, b, "js", f"q{k}")) for k in range(Q)]]))
        for a in range(L)
        for b in range(H)
    }
    assert sel.scores_.keys() == expected.keys()
    for key in expected:
        assert sel.scores_[key] == pytest.approx(expected[key], rel=1e-12)
    assert sel.heads_ == sorted(expected, key=lambda h: (-expected[h], h))[:2] == [(2, 1), (0, 3)]


def test_head_importance_figure_from_a_fitted_pipeline(tmp_path):
    X, y, cols = _data()
    pipe = Pipeline(
        [
            ("heads", SelectHeads(k=2, criterion="anova", feature_names=cols)),
            ("clf", LogisticRegression()),
        ]
    ).fit(X, y)
    fig = plots.plot_head_importance(pipe, label="ANOVA F")
    ax = fig.axes[0]
    grid = ax.images[0].get_array()
    sel = pipe.named_steps["heads"]
    assert grid.shape == (L, H)
    for (a, b), v in sel.scores_.items():
        assert grid[a, b] == v
    boxes = sorted(
        (int(p.get_y() + 0.5), int(p.get_x() + 0.5)) for p in ax.patches if isinstance(p, Rectangle)
    )
    assert boxes == sorted(sel.heads_)
    ticks = [t for t in ax.get_yticks() if -0.5 <= t <= L - 0.5]
    assert all(float(t).is_integer() for t in ticks)  # "layer 0.5" never
    for fmt in STATIC_FORMATS:
        path = plots.save_figure(fig, tmp_path / f"heads.{fmt}")
        check_figure_file(path, fmt)
    plt.close(fig)


def test_head_importance_from_a_dict_with_blanks_and_bad_input():
    fig = plots.plot_head_importance(
        {(0, 0): 0.5, (1, 2): 0.9}, chosen=[(1, 2)], n_layers=2, n_heads=4
    )
    grid = fig.axes[0].images[0].get_array()
    assert grid.shape == (2, 4) and grid[1, 2] == 0.9 and np.isnan(np.ma.filled(grid, np.nan)[0, 1])
    plt.close(fig)
    with pytest.raises(InvalidInputError, match="scores_"):
        plots.plot_head_importance(LogisticRegression())
    with pytest.raises(InvalidInputError, match="outside"):
        plots.plot_head_importance({(5, 0): 1.0}, n_layers=2, n_heads=2)
