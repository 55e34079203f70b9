"""HardmaxSimulation under the result protocol: tables, JSON, save/load, equality, H0 per step."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

import attntopo as at
from attntopo.analyses import Result
from attntopo.errors import ResultFormatError
from attntopo.hardmax import HardmaxSimulation, simulate
from attntopo.io import load_payload, save_payload


@pytest.fixture(scope="module")
def sim():
    rng = np.random.default_rng(7)
    return simulate(
        rng.normal(size=(16, 3)),
        A=np.diag([1.0, 2.0, 0.5]),
        alpha=0.9,
        steps=60,
        tokens=[f"t{i}" for i in range(16)],
    )


def test_kind_and_protocol(sim):
    assert isinstance(sim, Result) and sim.kind == "hardmax_simulation"
    assert sim.steps == 60 and sim.n_tokens == 16 and sim.dim == 3
    assert sim.leaders.shape == (61, 16) and sim.leaders.dtype == bool
    assert sim.n_clusters.shape == (61,) and sim.n_clusters[0] == 16
    assert sim.limit_points.shape == (int(sim.n_clusters[-1]), 3)


def test_summary_columns_have_one_length(sim):
    cols = sim.summary()
    assert list(cols) == ["step", "n_leaders", "n_clusters", "movement", "diameter"]
    assert {v.shape for v in cols.values()} == {(61,)}
    assert np.isnan(cols["movement"][0]) and np.all(cols["movement"][1:] >= 0)
    assert np.all(np.diff(cols["diameter"]) <= 1e-12)  # the hull only shrinks
    tt = sim.token_table()
    assert {v.shape for v in tt.values()} == {(16,)}
    assert list(tt["label"][:2]) == ["t0", "t1"]
    df = sim.to_pandas()
    assert list(df.columns) == list(cols) and len(df) == 61


def test_to_dict_is_json(sim):
    doc = json.loads(json.dumps(sim.to_dict()))
    assert doc["kind"] == "hardmax_simulation" and doc["steps"] == 60
    assert len(doc["per_step"]) == 61
    members = sorted(i for c in doc["clusters"] for i in c["members"])
    assert members == list(range(16))
    assert doc["leaders"] == sim.leader_indices.tolist()
    assert all(set(c["leaders"]) <= set(c["members"]) for c in doc["clusters"])


def test_save_load_round_trip(sim, tmp_path):
    sim.save(tmp_path / "s")
    back = at.load_result(tmp_path / "s")
    assert type(back) is HardmaxSimulation and back == sim
    assert np.array_equal(back.cluster_labels, sim.cluster_labels)
    assert back.provenance == json.loads(json.dumps(sim.provenance))


def test_load_result_finds_the_kind_in_a_fresh_process(sim, tmp_path):
    sim.save(tmp_path / "s")
    code = (
        "import attntopo as at, sys; r = at.load_result(sys.argv[1]); "
        "print(type(r).__name__, r.n_tokens, int(r.n_clusters[-1]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == ["HardmaxSimulation", "16", str(int(sim.n_clusters[-1]))]


@pytest.mark.parametrize(
    "field", ["trajectories", "leaders", "A", "alpha", "rtol", "cluster_tol", "tokens", "source"]
)
def test_a_changed_field_is_unequal(sim, field):
    v = getattr(sim, field)
    if isinstance(v, np.ndarray):
        w = v.copy()
        w.flat[0] = (not w.flat[0]) if w.dtype == bool else w.flat[0] + 1.0
    elif isinstance(v, list):
        w = ["x"] + v[1:]
    elif isinstance(v, dict):
        w = {**v, "extra": 1}
    else:
        w = v * 2
    assert dataclasses.replace(sim, **{field: w}) != sim
    assert dataclasses.replace(sim, provenance={}) == sim  # provenance is not compared


def test_corrupt_saved_results_are_one_line_errors(sim, tmp_path):
    meta, arrays = sim._payload()
    cases = {
        "leaders": {**arrays, "leaders": arrays["leaders"][:, :3]},
        "A": {**arrays, "A": np.ones((2, 2))},
        "trajectories": {**arrays, "trajectories": np.ones((3, 4))},
    }
    for name, arr in cases.items():
        save_payload(tmp_path / name, {"kind": sim.kind, **meta}, arr)
        with pytest.raises(ResultFormatError) as e:
            at.load_result(tmp_path / name)
        assert name in str(e.value) and "\n" not in str(e.value)
    save_payload(tmp_path / "alpha", {"kind": sim.kind, **meta, "alpha": "x"}, arrays)
    with pytest.raises(ResultFormatError, match="'alpha' must be a finite number"):
        at.load_result(tmp_path / "alpha")
    save_payload(tmp_path / "tokens", {"kind": sim.kind, **meta, "tokens": ["a"]}, arrays)
    with pytest.raises(ResultFormatError, match="'tokens' must be null or a list of 16 strings"):
        at.load_result(tmp_path / "tokens")
    m, a = load_payload(tmp_path / "alpha")
    assert m["alpha"] == "x" and set(a) == set(arrays)


def test_h0_per_step_counts_the_clusters_and_matches_a_minimum_spanning_tree(sim):
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import cdist

    dgms = sim.diagrams()
    assert len(dgms) == 61
    for k in (0, 5, 10):  # steps where all tokens are still apart (scipy drops zero edges)
        Z = sim.trajectories[k]
        D = cdist(Z, Z)
        assert D[~np.eye(16, dtype=bool)].min() > 0
        mst = np.sort(minimum_spanning_tree(D).data)  # zero-length edges are not stored
        h0 = np.asarray(dgms[k][0])
        np.testing.assert_allclose(np.sort(h0[np.isfinite(h0[:, 1]), 1]), mst, rtol=1e-12, atol=0)
        assert np.sum(np.isinf(h0[:, 1])) == 1
    # at the end, the bars longer than the coincidence scale are the clusters (one infinite)
    h0 = np.asarray(dgms[-1][0])
    assert np.sum(h0[:, 1] > sim.same_point) == sim.n_clusters[-1]


def test_clusters_list_names_members_and_leaders(sim):
    cl = sim.clusters()
    assert len(cl) == sim.n_clusters[-1]
    for c in cl:
        assert c["labels"] == [f"t{i}" for i in c["members"]]
        np.testing.assert_allclose(
            sim.final[c["members"]],
            np.asarray(c["point"])[None].repeat(len(c["members"]), 0),
            atol=sim.same_point,
        )


def test_repr_is_one_line(sim):
    s = repr(sim)
    assert s.startswith("HardmaxSimulation(n=16, d=3, steps=60") and "\n" not in s


def test_followed_leaders_name_the_limit_of_each_token():
    # in general position, the leader a token follows at the last step is the point it ends at,
    # and the groups by followed leader are the final clusters
    rng = np.random.default_rng(12)
    r = simulate(
        rng.normal(size=(30, 2)), A=np.array([[1.5, 0.3], [0.3, 0.8]]), alpha=0.8, steps=80
    )
    assert r.converged
    fl = r.followed_leaders()
    assert all(len(f) == 1 for f in fl)
    for i, (j,) in enumerate(fl):
        assert r.labels[i] == r.labels[j] and r.leaders[-1, j]
    groups = r.attention_clusters()
    assert sorted(len(g["members"]) for g in groups) == sorted(np.bincount(r.labels).tolist())
    # a tie: the token between two leaders follows both
    t = simulate(np.array([[1.0, 0.0], [0.0, 1.0], [0.3, 0.3]]), A=None, alpha=1.0, steps=3)
    assert t.followed_leaders() == [(0,), (1,), (0, 1)]
