"""The founding paper's recipes (``paper_compat=``), each against an independent re-implementation.

Issue 15 item 10.  What the paper's code does (checked against the author's notebooks, see
docs/concepts.md §5):

* printed Listing 1: softmax applied again to the rows, ``scipy.spatial.distance.jensenshannon``
  (natural log) = the square root of the divergence;
* notebooks (``persistent_homology_of_attention``): the same, then ``np.sqrt`` again (a fourth
  root); gudhi ``RipsComplex(max_edge_length=inf)``, ``create_simplex_tree(max_dimension=2)``,
  ``persistence(min_persistence=0.01)``; two texts compared by the bottleneck distance of their
  H0 diagrams;
* heads notebook (``topology_of_attention_heads``): scipy's distance of the raw rows between two
  heads of one layer, summed over tokens, the per-layer ``H × H`` matrices summed over layers;
  models compared by the bottleneck distance of the diagrams' finite bars, H0 and H1 pooled.

The references below are written from those descriptions with numpy, scipy and gudhi only.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

import attntopo as at
from _reference import heads_notebook_matrix as _notebook_loops
from attntopo import compare_models, head_distances, head_space
from attntopo._validation import check_paper_compat
from attntopo.attention import Attention
from attntopo.distances import row_distances, token_distances
from attntopo.errors import InvalidInputError, ResultFormatError
from attntopo.topology import Diagram

gudhi = pytest.importorskip("gudhi")

#: attntopo's base-2 JS distance over the natural-log one: sqrt(JS / ln 2) / sqrt(JS).
FACTOR = 1.0 / math.sqrt(math.log(2.0))


# ------------------------------------------------------------------ references
def _softmax_rows(A: np.ndarray) -> np.ndarray:
    """The notebooks' ``np.exp(A) / np.sum(np.exp(A), axis=-1)[:, None]`` (float64 here)."""
    E = np.exp(np.asarray(A, dtype=np.float64))
    return E / E.sum(-1, keepdims=True)


def listing_matrix(A: np.ndarray) -> np.ndarray:
    """Listing 1 on one (n, n) matrix: scipy's JS distance of the softmaxed rows."""
    S = _softmax_rows(A)
    n = len(S)
    return np.array(
        [[jensenshannon(S[i], S[j]) if i != j else 0.0 for j in range(n)] for i in range(n)]
    )


def notebook_matrix(A: np.ndarray) -> np.ndarray:
    """The notebooks' ``compute_persistence`` distance: ``np.sqrt`` of Listing 1's."""
    return np.sqrt(listing_matrix(A))


def js_natural(p: np.ndarray, q: np.ndarray) -> float:
    """scipy's ``jensenshannon(p, q)`` written out in numpy: rows rescaled, natural log,
    square root of the divergence."""
    p = p / p.sum()
    q = q / q.sum()
    m = (p + q) / 2.0

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log(a[nz] / b[nz])))

    return math.sqrt(max((kl(p, m) + kl(q, m)) / 2.0, 0.0))


def heads_notebook_matrix(W: np.ndarray) -> np.ndarray:
    """The heads notebook's loops (tests/_reference.py) with scipy's distance written out."""
    return _notebook_loops(W, js_natural)


def gudhi_persistence(D: np.ndarray, min_persistence: float = 0.0) -> list:
    rips = gudhi.RipsComplex(distance_matrix=D, max_edge_length=np.inf)
    return rips.create_simplex_tree(max_dimension=2).persistence(min_persistence=min_persistence)


def gudhi_bars(pairs: list, dim: int) -> np.ndarray:
    return np.array([(b, d) for k, (b, d) in pairs if k == dim], dtype=np.float64).reshape(-1, 2)


def same_bars(dgm: Diagram, pairs: list, maxdim: int = 1) -> None:
    """attntopo's diagram has gudhi's bars in every dimension (zero-length bars left out:
    gudhi's persistence() keeps only bars longer than min_persistence)."""
    for k in range(maxdim + 1):
        ours = np.asarray(dgm[k])
        ours = ours[ours[:, 1] - ours[:, 0] > 0]
        ref = gudhi_bars(pairs, k)
        assert ours.shape == ref.shape, (k, ours, ref)
        o = ours[np.lexsort((ours[:, 1], ours[:, 0]))]
        r = ref[np.lexsort((ref[:, 1], ref[:, 0]))]
        np.testing.assert_allclose(o, r, rtol=0, atol=1e-12)


def _att(
    W: np.ndarray, model: str = "synthetic", tokens: list[str] | None = None, text: str = ""
) -> Attention:
    L, H, n, _ = W.shape
    tokens = tokens or [f"t{i}" for i in range(n)]
    return Attention(
        weights=W,
        tokens=tokens,
        offsets=[(0, 0)] * n,
        special=np.zeros(n, bool),
        causal=bool(np.all(np.triu(W[0, 0], 1) == 0)),
        model=model,
        text=text,
    )


def _weights(rng: np.random.Generator, L: int, H: int, n: int, causal: bool = False) -> np.ndarray:
    W = rng.dirichlet(np.full(n, 0.4), size=(L, H, n))
    if causal:
        W = np.tril(W)
        W /= W.sum(-1, keepdims=True)
    return W


# ------------------------------------------------------------------ the mode argument
def test_check_paper_compat_modes_and_aliases():
    for off in (False, None, np.False_):
        assert check_paper_compat(off) is None
    assert check_paper_compat("notebook") == "notebook"
    assert check_paper_compat("listing") == "listing"
    # True does not say which of the paper's two recipes: refused, as any other value
    for bad in ("Notebook", "fourth_root", 1, 0, "", ["notebook"], True, np.True_):
        with pytest.raises(InvalidInputError, match="'notebook' or 'listing'"):
            check_paper_compat(bad)
    with pytest.raises(InvalidInputError, match="got True"):
        token_distances(_weights(np.random.default_rng(0), 1, 1, 5)[0, 0], paper_compat=True)
    # the head-space functions know only the heads notebook
    with pytest.raises(InvalidInputError, match="Listing 1 defines token distances only"):
        check_paper_compat(
            "listing", modes=("notebook",), hint="Listing 1 defines token distances only"
        )
    with pytest.raises(InvalidInputError, match="got True"):
        check_paper_compat(True, modes=("notebook",))


def test_a_result_saved_with_paper_compat_true_is_refused_in_one_line(tmp_path):
    """``True`` was written before the paper had two recipes; such a file names the rewrite."""
    import json

    att = _att(_weights(np.random.default_rng(0), 1, 2, 5))
    at.analyze(att, paper_compat="notebook").save(tmp_path / "a")
    meta_file = tmp_path / "a" / "attntopo.json"
    doc = json.loads(meta_file.read_text())
    assert doc["paper_compat"] == "notebook"
    doc["paper_compat"] = True
    meta_file.write_text(json.dumps(doc))
    with pytest.raises(ResultFormatError, match=r"paper_compat=True in a saved result.*'notebook'"):
        at.load_result(tmp_path / "a")


# ------------------------------------------------------------------ token distances and diagrams
@pytest.mark.parametrize(
    "mode, reference", [("listing", listing_matrix), ("notebook", notebook_matrix)]
)
@pytest.mark.parametrize("causal", [False, True])
def test_token_distances_and_diagrams_match_scipy_and_gudhi(mode, reference, causal):
    rng = np.random.default_rng(11 + causal)
    W = _weights(rng, 2, 2, 9, causal=causal)
    att = _att(W)
    an = at.analyze(att, paper_compat=mode)
    assert an.paper_compat == mode
    for i in range(2):
        for j in range(2):
            ref = reference(att.weights[i, j])  # the float32 rows the notebooks would see
            np.testing.assert_allclose(an.distances[i, j], ref, rtol=0, atol=1e-12)
            same_bars(an.diagrams[i][j], gudhi_persistence(ref))


def test_listing_is_the_square_root_and_notebook_the_fourth_root_of_the_divergence():
    A = _weights(np.random.default_rng(2), 1, 1, 7)[0, 0]
    S = _softmax_rows(A)
    div = np.array([[jensenshannon(S[i], S[j]) ** 2 for j in range(7)] for i in range(7)])
    np.testing.assert_allclose(
        token_distances(A, paper_compat="listing"), np.sqrt(div), rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        token_distances(A, paper_compat="notebook"), div**0.25, rtol=0, atol=1e-12
    )


def test_analysis_keeps_its_mode_through_save_and_load(tmp_path):
    att = _att(_weights(np.random.default_rng(3), 1, 2, 6))
    for mode in ("listing", "notebook"):
        an = at.analyze(att, paper_compat=mode)
        an.save(tmp_path / mode)
        back = at.load_result(tmp_path / mode)
        assert back == an and back.paper_compat == mode
        assert back.provenance["settings"]["paper_compat"] == mode
        assert an.to_dict()["settings"]["paper_compat"] == mode
    assert at.analyze(att).paper_compat is False


# ------------------------------------------------------------------ the natural log's factor
def test_attntopo_head_distances_are_the_notebooks_times_1_2011():
    """docs/heads.md: the paper used the natural log; log base 2 divides the divergence by
    ln 2, so every distance (and every sum of them) grows by 1 / sqrt(ln 2) = 1.2011."""
    assert FACTOR == pytest.approx(1.2011, abs=1e-4)
    rng = np.random.default_rng(4)
    L, H = 3, 4
    W = _weights(rng, L, H, 10, causal=True)
    ours = head_distances(W)  # (L·H, L·H), base 2, every pair of heads
    within = sum(ours[li * H : (li + 1) * H, li * H : (li + 1) * H] for li in range(L))
    paper = head_distances(W, paper_compat="notebook")
    off = ~np.eye(H, dtype=bool)
    np.testing.assert_allclose(within[off] / paper[off], FACTOR, rtol=1e-12)
    p, q = W[0, 0, 5], W[0, 1, 5]
    assert jensenshannon(p, q, base=2) / jensenshannon(p, q) == pytest.approx(FACTOR, rel=1e-12)


# ------------------------------------------------------------------ the heads notebook
@pytest.mark.parametrize("causal", [False, True])
def test_head_distances_notebook_matches_the_notebooks_loops(causal):
    rng = np.random.default_rng(5 + causal)
    W = _weights(rng, 3, 4, 11, causal=causal)
    att = _att(W)
    ref = heads_notebook_matrix(att.weights.astype(np.float64))
    D = head_distances(att, paper_compat="notebook")
    assert D.shape == (4, 4)
    np.testing.assert_allclose(D, ref, rtol=0, atol=1e-12)
    # several texts: per text, then reduced
    W2 = _weights(rng, 3, 4, 6, causal=causal)
    stack = head_distances([att, _att(W2)], paper_compat="notebook", reduce="none")
    np.testing.assert_allclose(
        stack[1], heads_notebook_matrix(_att(W2).weights.astype(np.float64)), atol=1e-12
    )


def test_head_space_notebook_is_the_summed_space_with_gudhis_diagram(tmp_path):
    rng = np.random.default_rng(6)
    att = _att(_weights(rng, 3, 5, 8), text="one text")
    ref = heads_notebook_matrix(att.weights.astype(np.float64))
    hs = head_space(att, paper_compat="notebook")
    np.testing.assert_allclose(hs.distances, ref, rtol=0, atol=1e-12)
    same_bars(hs.diagram, gudhi_persistence(ref))  # the notebook: persistence() of that matrix
    assert hs.layers_summed and not hs.normalize and hs.types is None
    assert hs.n_points == 5 and hs.labels == [f"H{h}" for h in range(5)]
    assert hs.index(2, 3) == hs.index(0, 3) == 3
    assert list(hs.layer_of) == [-1] * 5 and list(hs.head_of) == list(range(5))
    assert hs.redundancy(scale=np.inf)[0]["layers"] == [0, 1, 2]
    assert hs.overview()["paper_compat"] == "notebook"
    assert hs.provenance["settings"]["paper_compat"] == "notebook"
    with pytest.raises(InvalidInputError, match="sums the layers"):
        hs.layer_distances()
    hs.save(tmp_path / "hs")
    back = at.load_result(tmp_path / "hs")
    assert back == hs and back.paper_compat == "notebook" and back.labels == hs.labels
    # attntopo's own space is untouched by the option's existence
    own = head_space(att)
    assert own.paper_compat is False and own.n_points == 15 and own.normalize


def test_head_space_notebook_figures_draw():
    import matplotlib

    matplotlib.use("Agg")
    from attntopo.plots.heads import iplot_head_mds, plot_head_distances, plot_head_mds

    hs = head_space(_att(_weights(np.random.default_rng(7), 2, 4, 7)), paper_compat="notebook")
    fig = plot_head_distances(hs)
    # the colour bar's label (an axes of the figure, or an inset of the heatmap's axes)
    labels = [a.get_ylabel() for ax in fig.axes for a in (ax, *ax.child_axes)]
    assert any("summed over tokens and layers" in label for label in labels), labels
    plot_head_mds(hs, annotate=True)
    fig = iplot_head_mds(hs)
    assert len(fig.data) == 1 and fig.data[0].name == "layer all" and len(fig.data[0].x) == 4


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"paper_compat": "listing"}, "Listing 1 defines token distances only"),
        ({"paper_compat": True}, "got True"),
        ({"paper_compat": "notebook", "normalize": True}, "normalize=False"),
        ({"paper_compat": "notebook", "metric": "hellinger"}, "metric='jensen_shannon'"),
    ],
)
def test_head_space_paper_mode_errors(kwargs, match):
    att = _att(_weights(np.random.default_rng(8), 1, 2, 5))
    with pytest.raises(InvalidInputError, match=match):
        head_space(att, **kwargs)
    with pytest.raises(InvalidInputError, match=match):
        head_distances(att, **kwargs)


# ------------------------------------------------------------- models compared as the notebook does
def test_compare_models_notebook_bottleneck_is_gudhis_on_the_pooled_finite_bars(tmp_path):
    rng = np.random.default_rng(9)
    text = "the same text"
    a = _att(_weights(rng, 3, 6, 9), model="model-a", text=text)
    b = _att(_weights(rng, 2, 6, 9, causal=True), model="model-b", text=text)
    # the notebook's plot_barcode_and_bottleneck on its own diagrams of its own matrices
    pa = gudhi_persistence(heads_notebook_matrix(a.weights.astype(np.float64)))
    pb = gudhi_persistence(heads_notebook_matrix(b.weights.astype(np.float64)))

    def finite(pairs):  # its convert_diagram_to_numpy_array: every dimension, no infinite bar
        return np.array([[bd[0], bd[1]] for _, bd in pairs if bd[1] != float("inf")])

    expected = gudhi.bottleneck_distance(finite(pa), finite(pb))
    A = head_space(a, paper_compat="notebook")
    B = head_space(b, paper_compat="notebook")
    mc = compare_models(None, model_a=A, model_b=B, n_boot=0, paper_compat="notebook")
    assert mc.paper_bottleneck == pytest.approx(expected, abs=1e-12)
    assert mc.paper_compat == "notebook" and mc.to_dict()["paper_bottleneck"] == mc.paper_bottleneck
    mc.save(tmp_path / "mc")
    back = at.load_result(tmp_path / "mc")
    assert back == mc and back.paper_bottleneck == mc.paper_bottleneck
    # attntopo's own comparison has no such number
    own = compare_models(None, model_a=head_space(a), model_b=head_space(b), n_boot=0)
    assert own.paper_bottleneck is None and "paper_bottleneck" not in own.to_dict()


def test_compare_models_refuses_mixed_recipes():
    rng = np.random.default_rng(10)
    a = _att(_weights(rng, 1, 3, 6), model="a", text="t")
    b = _att(_weights(rng, 1, 3, 6), model="b", text="t")
    paper = head_space(a, paper_compat="notebook")
    own = head_space(b)
    with pytest.raises(InvalidInputError, match="pass paper_compat='notebook'"):
        compare_models(None, model_a=paper, model_b=head_space(a), n_boot=0)
    with pytest.raises(InvalidInputError, match="paper_compat='notebook' and reduce='mean'"):
        compare_models(None, model_a=paper, model_b=own, n_boot=0, paper_compat="notebook")
    with pytest.raises(InvalidInputError, match="Listing 1"):
        compare_models(None, model_a=paper, model_b=own, n_boot=0, paper_compat="listing")


# ------------------------------------------------------------------ float32 (docs/concepts.md §5)
def test_float32_rows_give_the_notebooks_nan_and_gudhi_drops_the_edge():
    """Why the paper's numbers differ from a float64 recomputation: in float32, scipy's
    divergence of two nearly identical rows can come out negative and its square root NaN;
    gudhi's Rips complex then silently leaves that edge out.  attntopo computes in float64."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(20)).astype(np.float32)
    nan_pairs = 0
    for _ in range(50):
        q = (p * (1 + rng.normal(0, 1e-4, 20))).astype(np.float32)
        q /= q.sum()
        with np.errstate(invalid="ignore"):
            d32 = jensenshannon(p, q)
        if np.isnan(d32):
            nan_pairs += 1
            ours = row_distances(np.stack([p, q]), base=math.e)[0, 1]
            assert np.isfinite(ours) and ours == pytest.approx(
                jensenshannon(p.astype(float), q.astype(float)), rel=1e-6
            )
    assert nan_pairs > 0
    # a NaN distance is a missing edge for gudhi: here it leaves a loop that a float64 run fills
    D = np.array([[0, 1, 2, 2.5], [1, 0, np.nan, 2], [2, np.nan, 0, 1.5], [2.5, 2, 1.5, 0]])
    assert len(gudhi_bars(gudhi_persistence(D), 1)) == 1
    assert len(gudhi_bars(gudhi_persistence(np.nan_to_num(D, nan=1e-3)), 1)) == 0


# ---------------------------------------------------------- two texts compared as the notebook does
def _two_texts(rng: np.random.Generator, causal: bool = False) -> tuple[Attention, Attention]:
    ta = "the cat sat on the red mat".split()
    tb = "a cat sat on the mat and the dog".split()
    return (
        _att(_weights(rng, 2, 2, len(ta), causal), tokens=ta, text=" ".join(ta)),
        _att(_weights(rng, 2, 2, len(tb), causal), tokens=tb, text=" ".join(tb)),
    )


@pytest.mark.parametrize("causal", [False, True])
def test_compare_notebook_prints_the_notebooks_h0_bottleneck(causal, tmp_path):
    """The notebook's update_plot for one head: compute_persistence of each text (fourth-root
    distances, gudhi, min_persistence=0.01), then compute_bottleneck_distance (H0 only)."""
    A, B = _two_texts(np.random.default_rng(12 + causal), causal)
    c = at.compare(A, B, paper_compat="notebook")
    assert c.paper_compat == "notebook" and c.provenance["settings"]["paper_compat"] == "notebook"
    for i in range(2):
        for j in range(2):
            Da, Db = notebook_matrix(A.weights[i, j]), notebook_matrix(B.weights[i, j])
            np.testing.assert_allclose(c.a.distances[i, j], Da, rtol=0, atol=1e-12)
            pa, pb = gudhi_persistence(Da, 0.01), gudhi_persistence(Db, 0.01)
            expected = gudhi.bottleneck_distance(gudhi_bars(pa, 0), gudhi_bars(pb, 0))
            assert c.grid(name="bottleneck", dim=0)[i, j] == pytest.approx(expected, abs=1e-12)
            h1 = gudhi.bottleneck_distance(gudhi_bars(pa, 1), gudhi_bars(pb, 1))
            assert c.grid(name="bottleneck", dim=1)[i, j] == pytest.approx(h1, abs=1e-12)
            same_bars(c.a.diagrams[i][j], gudhi_persistence(Da))  # the full diagrams are kept
    c.save(tmp_path / "c")
    back = at.load_result(tmp_path / "c")
    assert back == c and back.paper_compat == "notebook"


def test_compare_listing_changes_only_the_distance():
    A, B = _two_texts(np.random.default_rng(14))
    c = at.compare(A, B, paper_compat="listing")
    own = at.compare(A, B)
    assert c.paper_compat == "listing" and own.paper_compat is False
    for i in range(2):
        for j in range(2):
            D = listing_matrix(B.weights[i, j])
            np.testing.assert_allclose(c.b.distances[i, j], D, rtol=0, atol=1e-12)
            same_bars(c.b.diagrams[i][j], gudhi_persistence(D))
    # no bar is dropped in listing mode: the distances are attntopo's on those diagrams
    dgm_a, dgm_b = c.diagrams(0, 1)
    np.testing.assert_allclose(
        c.diagram_distances["bottleneck"][0, 1], at.topology.bottleneck(dgm_a, dgm_b)
    )
    with pytest.raises(InvalidInputError, match="'notebook' or 'listing'"):
        at.compare(A, B, paper_compat=True)
