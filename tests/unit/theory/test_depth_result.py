"""attntopo.theory.Depth without a model: tables, storage round trip, equality, the figure."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attntopo.errors import InvalidInputError, ResultFormatError
from attntopo.io import load_payload
from attntopo.theory._depth import Depth


def synthetic(T=3, L=4, H=2, seed=0, model="toy") -> Depth:
    rng = np.random.default_rng(seed)
    u = lambda *shape: rng.uniform(0.05, 1.0, size=shape)  # noqa: E731
    idt = u(T, L + 1) * 8
    idt[0, 1] = np.nan  # a text too short for TwoNN at one depth
    return Depth(
        model=model,
        causal=False,
        n_layers=L,
        n_heads=H,
        texts=[f"text {i}" for i in range(T)],
        k=5,
        n_tokens=rng.integers(10, 40, size=T),
        k_used=np.full(T, 5),
        res_hidden=u(T, L + 1),
        res_path_head=u(T, L, H),
        res_path_mean=u(T, L),
        js_mean=u(T, L, H),
        js_diameter=u(T, L, H),
        h0_total=u(T, L, H) * 9,
        entropy=u(T, L, H) * 4,
        fisher_rao=u(T, L - 1, H) * 3,
        knn_overlap=u(T, L),
        intrinsic_dim=u(L + 1) * 10,
        id_points=np.full(L + 1, 60),
        intrinsic_dim_text=idt,
        provenance={"created": "now"},
    )


def test_summary_rows_per_depth():
    d = synthetic()
    cols = d.summary()
    assert (
        cols.n_rows == 5
        and cols["depth"].tolist() == [0, 1, 2, 3, 4]
        and cols["layer"].tolist() == [-1, 0, 1, 2, 3]
    )
    # hidden-state measures from depth 0; attention measures from depth 1; movement from depth 2
    np.testing.assert_allclose(cols["res_hidden"], d.res_hidden.mean(0), rtol=1e-14)
    np.testing.assert_allclose(cols["res_hidden_std"], d.res_hidden.std(0, ddof=1), rtol=1e-12)
    assert np.isnan(cols["js_mean"][0]) and np.isnan(cols["knn_overlap"][0])
    np.testing.assert_allclose(cols["js_mean"][1:], d.js_mean.mean(2).mean(0), rtol=1e-14)
    np.testing.assert_allclose(cols["knn_overlap"][1:], d.knn_overlap.mean(0), rtol=1e-14)
    assert np.isnan(cols["fisher_rao"][:2]).all()
    np.testing.assert_allclose(cols["fisher_rao"][2:], d.fisher_rao.mean(2).mean(0), rtol=1e-14)
    # NaN (too few tokens) is left out of the mean, not propagated
    assert cols["intrinsic_dim_text"][1] == pytest.approx(
        np.nanmean(d.intrinsic_dim_text[:, 1]), rel=1e-14
    )
    heads = d.head_table()
    assert heads.n_rows == 8 and heads["layer"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert np.isnan(heads["fisher_rao"][:2]).all()
    np.testing.assert_allclose(heads["entropy"], d.entropy.mean(0).reshape(-1), rtol=1e-14)


def test_one_text_has_no_spread():
    cols = synthetic(T=1).summary()
    assert np.isnan(cols["res_hidden_std"]).all() and np.isfinite(cols["res_hidden"]).all()


def test_save_load_round_trip_and_equality(tmp_path):
    d = synthetic()
    d.save(tmp_path / "d")
    meta, arrays = load_payload(tmp_path / "d")
    assert meta["kind"] == "depth"
    back = Depth._from_payload(meta, arrays)
    assert back == d and back.texts == d.texts
    assert back.summary().keys() == d.summary().keys()
    other = synthetic()
    other.provenance = {"created": "later"}
    assert other == d  # provenance is not compared
    changed = synthetic()
    changed.fisher_rao[0, 0, 0] += 1e-12
    assert changed != d
    assert synthetic(seed=1) != d


def test_to_dict_is_json():
    d = synthetic()
    doc = json.loads(json.dumps(d.to_dict()))
    assert doc["kind"] == "depth" and len(doc["summary"]) == 5 and len(doc["heads"]) == 8
    assert doc["summary"][0]["js_mean"] == "nan"
    assert "Depth('toy', 3 texts, 4 layers × 2 heads" in repr(d)


def test_from_payload_refuses_wrong_shapes(tmp_path):
    d = synthetic()
    meta, arrays = d._payload()
    bad = dict(arrays, fisher_rao=arrays["fisher_rao"][:, :1])
    with pytest.raises(ResultFormatError, match="'fisher_rao' must have shape"):
        Depth._from_payload(meta, bad)
    with pytest.raises(ResultFormatError, match="metadata"):
        Depth._from_payload({k: v for k, v in meta.items() if k != "n_layers"}, arrays)


def test_figure_one_and_two_results():
    from matplotlib.figure import Figure

    from attntopo.plots.theory_depth import DEPTH_PANELS, depth_bundle, plot_depth

    a, b = synthetic(), synthetic(L=7, H=3, seed=2, model="other")
    fig = plot_depth(a)
    assert isinstance(fig, Figure) and len(fig.axes) == len(DEPTH_PANELS) == 8
    assert fig.axes[0].get_xlabel() == "depth (0 = embeddings)"
    two = plot_depth(a, b)
    assert two.axes[0].get_xlabel() == "relative depth (depth / L)"
    labels = two.axes[1].get_legend_handles_labels()[1]
    assert labels == [
        "toy, layer-mean product",
        "toy, same-head paths",
        "other, layer-mean product",
        "other, same-head paths",
    ]
    x, _ = two.axes[0].lines[1].get_data()  # the other model's res(X), depth / 7
    np.testing.assert_allclose(x, np.arange(8) / 7)
    files = depth_bundle(a, b).files(
        formats=["svg"]
    )  # one rendering: each costs seconds on a loaded machine
    assert list(files) == ["figures/depth.svg"] and files["figures/depth.svg"].startswith(b"<?xml")
    with pytest.raises(InvalidInputError, match="Depth"):
        plot_depth(object())
    with pytest.raises(InvalidInputError, match="at least one"):
        plot_depth()
