"""The whole pipeline on the real packaged models; save/load round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree

import attntopo as at
from _tolerances import for_model
from attntopo.errors import InvalidInputError, OutOfRangeError, ResultFormatError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def result(minilm, sample_text):
    return at.analyze(sample_text, model=minilm)


def test_readme_tour(minilm, sample_text):
    att = minilm.attention(sample_text)
    n = att.n_tokens
    assert att.weights.shape == (6, 12, n, n)
    D = at.token_distances(att)
    assert D.shape == (6, 12, n, n) and D.dtype == np.float64
    assert np.all((D >= 0) & (D <= 1))
    dgm = at.persistence(D[1, 2], maxdim=1)
    assert dgm[0].shape[1] == 2 and dgm[1].shape[1] == 2
    assert np.isinf(dgm[0][:, 1]).sum() == 1


def test_analysis_contents(result, minilm, sample_text):
    att = minilm.attention(sample_text)
    n = att.n_tokens
    assert result.distances.shape == (6, 12, n, n)
    np.testing.assert_array_equal(result.attention.weights, att.weights)
    np.testing.assert_array_equal(result.distances, at.token_distances(att))
    assert len(result.diagrams) == 6 and all(len(r) == 12 for r in result.diagrams)
    # every head's H0 deaths are the MST edge lengths of its distance matrix (independent check)
    for layer in range(6):
        for head in (0, 11):
            D = result.distance_matrix(layer, head)
            mst = minimum_spanning_tree(D).toarray()
            expected = np.sort(mst[mst > 0])
            h0 = result.diagram(layer, head)[0]
            finite = np.sort(h0[np.isfinite(h0[:, 1]), 1])
            np.testing.assert_allclose(finite, expected, atol=1e-12)


def test_summary_table(result):
    s = result.summary()
    assert len(s["layer"]) == 72
    assert s["layer"].tolist() == [li for li in range(6) for _ in range(12)]
    n = result.attention.n_tokens
    assert np.all(s["n_bars_h0"] == n) and np.all(s["n_infinite_h0"] == 1)
    # recompute one row by hand
    d = result.diagram(3, 4)
    life = d[1][:, 1] - d[1][:, 0]
    row = result.summary_rows()[3 * 12 + 4]
    assert row["n_bars_h1"] == len(d[1])
    assert math.isclose(row["total_persistence_h1"], life.sum(), abs_tol=1e-12)
    if life.sum() > 0:
        p = life[life > 0] / life.sum()
        assert math.isclose(
            row["persistence_entropy_h1"], float(-(p * np.log2(p)).sum()), abs_tol=1e-9
        )


def test_save_load_roundtrip(result, tmp_path):
    out = tmp_path / "out"
    result.save(out)
    back = at.load_result(out)
    assert back == result
    assert back.diagram(1, 2) == result.diagram(1, 2)
    assert back.summary_rows() == result.summary_rows()
    meta = json.loads((out / "attntopo.json").read_text())
    assert meta["format_version"] == 2 and meta["kind"] == "analysis"
    assert meta["threshold"] == "inf"
    # saving again over an existing result replaces it atomically
    result.save(out)
    assert at.load_result(out) == result
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temp leftovers


def test_subset_and_settings(minilm, sample_text):
    r = at.analyze(
        sample_text,
        model=minilm,
        layers=[1],
        heads=[2, -1],
        metric="hellinger",
        maxdim=2,
        threshold=0.5,
        drop_special=True,
    )
    assert r.layers == (1,) and r.heads == (2, 11)
    assert r.distances.shape[:2] == (1, 2)
    assert r.attention.n_tokens == minilm.attention(sample_text).n_tokens - 2
    d = r.diagram(1, 11)
    assert d.maxdim == 2 and d.threshold == 0.5
    with pytest.raises(OutOfRangeError, match="analysed"):
        r.diagram(0, 2)


@pytest.mark.forward_compare
def test_list_of_texts(minilm):
    texts = ["Information theory.", "Attention is all you need, they said."]
    rs = at.analyze(texts, model=minilm, layers=0)
    assert len(rs) == 2
    for t, r in zip(texts, rs):
        single = at.analyze(t, model=minilm, layers=0)
        np.testing.assert_allclose(
            r.distances, single.distances, atol=for_model(minilm).distance_atol, rtol=0
        )
        assert r.attention.tokens == single.attention.tokens


def test_paper_compat_changes_numbers(minilm, sample_text):
    a = at.analyze(sample_text, model=minilm, layers=0, heads=0)
    b = at.analyze(sample_text, model=minilm, layers=0, heads=0, paper_compat="notebook")
    c = at.analyze(sample_text, model=minilm, layers=0, heads=0, paper_compat="listing")
    assert (b.paper_compat, c.paper_compat, a.paper_compat) == ("notebook", "listing", False)
    assert not np.allclose(a.distances, b.distances)
    np.testing.assert_allclose(b.distances**2, c.distances, rtol=1e-12, atol=1e-15)
    with pytest.raises(InvalidInputError, match="got True"):
        at.analyze(sample_text, model=minilm, layers=0, heads=0, paper_compat=True)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"metric": "cosine"}, InvalidInputError),
        ({"maxdim": 3}, InvalidInputError),
        ({"threshold": -1}, InvalidInputError),
        ({"layers": 6}, OutOfRangeError),
        ({"heads": [12]}, OutOfRangeError),
    ],
)
def test_bad_settings(minilm, kwargs, exc):
    with pytest.raises(exc) as e:
        at.analyze("some text", model=minilm, **kwargs)
    assert "\n" not in str(e.value)


def test_load_errors(tmp_path):
    with pytest.raises(ResultFormatError):
        at.load_result(tmp_path / "missing")
    (tmp_path / "x").mkdir()
    with pytest.raises(ResultFormatError):
        at.load_result(tmp_path / "x")
    (tmp_path / "x" / "attntopo.json").write_text('{"kind": "analysis", "format_version": 99}')
    with pytest.raises(ResultFormatError, match="version"):
        at.load_result(tmp_path / "x")


@pytest.mark.xdist_group("smollm2")
def test_smollm2_analyze(smollm2):
    r = at.analyze("The capital of France is Paris.", model=smollm2, layers=[0, 29])
    assert r.attention.causal and r.distances.shape[:2] == (2, 9)
    assert len(r.summary_rows()) == 18
