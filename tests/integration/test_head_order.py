"""Every value under its own head's name, whatever order the layers and heads are given in
(issue 33, item 1).

One property, fed to every API that takes layers and heads: given a permutation of some
layers and heads of MiniLM, each value an API names ``(layer, head)`` equals the value the
same API computes for that head alone.  The forward pass is the same whatever heads are
selected (the whole model runs; the selection copies heads out of it), and every feature,
distance and diagram is computed head by head, so the two are the same float64 numbers:
compared exactly.  A value placed under another head's name differs by far more.

The order of the output is the order asked (docs/api.md, "Order of layers and heads"):
checked too.  References are computed once per head and kept for the module (few heads,
short texts, few examples).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attntopo as at
from attntopo.corpus import run as corpus_run
from attntopo.features import FEATURE_SETS, features, head_scores, parse_column, select_heads
from attntopo.features.pipeline import join_pair
from attntopo.sklearn import AttentionFeatures

pytestmark = pytest.mark.slow

PROMPT, ANSWER = "The cat sat on the mat.", "It was warm there."
OTHER = "A dog lay on the rug."
TEXT = join_pair(PROMPT, ANSWER)[0]  # the text every set but prompt reads from the pair
LAYERS, HEADS = (0, 2, 5), (1, 4, 7)
# short texts for the head scores: two classes, three of each
LABELLED = [
    "I love it.",
    "What a lovely day.",
    "Great fun!",
    "I hate it.",
    "What an awful day.",
    "Dreadful mess!",
]
Y = [1, 1, 1, 0, 0, 0]
NO_PROMPT = tuple(n for n, s in FEATURE_SETS.items() if s.input == "text")  # single texts
# a per-text set (zigzag): one block of all the chosen heads together (L*H*), checked against
# sorted layers/heads
PER_HEAD = tuple(n for n, s in FEATURE_SETS.items() if not s.per_text)

N_TOKENS = 16  # TEXT's tokens, special tokens included (checked in the heads case)
N_EPS = N_TOKENS * np.finfo(np.float64).eps
APIS = (
    "attention",
    "analyze",
    "compare",
    "timeline",
    "heads",
    "features",
    "AttentionFeatures",
    "corpus",
    "select",
    "select_heads",
)


class _Alone:
    """What each API computes for one head alone, computed once per head."""

    def __init__(self, m) -> None:
        self.m, self.memo = m, {}

    def get(self, api: str, layer: int, head: int):
        key = (api, layer, head)
        if key not in self.memo:
            self.memo[key] = self._compute(api, layer, head)
        return self.memo[key]

    def _compute(self, api, layer, head):
        m, one = self.m, dict(layers=[layer], heads=[head])
        if api == "attention":
            return m.attention(TEXT, **one).weights[0, 0]
        if api == "analyze":
            return at.analyze(TEXT, m, n_jobs=1, progress=False, **one).diagram(layer, head)
        if api == "compare":
            c = at.compare(TEXT, OTHER, m, n_jobs=1, progress=False, **one)
            return c.diagrams(layer, head), c.scale(layer, head)
        if api == "timeline":
            return at.timeline(TEXT, m, layers=layer, heads=head, n_jobs=1, progress=False)
        if api == "head_types":
            t = at.head_types(m.attention(TEXT, **one))
            return {k: v[0] for k, v in t.features.items()}, t.labels[0, 0]
        if api == "features":
            t = features([(PROMPT, ANSWER)], m, sets=FEATURE_SETS, n_jobs=1, **one)
            return dict(zip(t.columns, t.values[0]))
        if api == "scores":
            t = features(LABELLED, m, sets=("graph", "template"), n_jobs=1, **one)
            return {
                c: head_scores(t, Y, criterion=c, cv=3)[(layer, head)]
                for c in ("anova", "cv_accuracy")
            }
        raise AssertionError(api)


@pytest.fixture(scope="module")
def alone(minilm):
    return _Alone(minilm)


def _orders(data) -> tuple[list[int], list[int]]:
    """Some layers and heads, in an order hypothesis chooses (often not ascending)."""
    layers = data.draw(
        st.lists(st.sampled_from(LAYERS), min_size=2, max_size=3, unique=True), label="layers"
    )
    heads = data.draw(
        st.lists(st.sampled_from(HEADS), min_size=1, max_size=3, unique=True), label="heads"
    )
    return layers, heads


def _pairs(layers, heads) -> list[tuple[int, int]]:
    return [(a, b) for a in layers for b in heads]


def _head_of(column: str) -> tuple[int, int]:
    return parse_column(column)[:2]


def _same_values(named: dict, alone, pairs, *, sets=FEATURE_SETS) -> None:
    """Every column of ``named`` (name → value) equals its head's value alone; every head
    of ``pairs`` has its columns, in ``pairs``' order within each set."""
    assert named, "no columns"
    for c, v in named.items():
        if _head_of(c) == (None, None):  # a block of all the heads (zigzag): no head alone
            continue
        ref = alone.get("features", *_head_of(c))[c]
        assert np.array_equal(v, ref, equal_nan=True), (c, v, ref)
    for s in (x for x in sets if x in PER_HEAD):
        seen = list(dict.fromkeys(_head_of(c) for c in named if f".{s}." in c))
        assert seen == pairs, (s, seen, pairs)


@pytest.mark.parametrize("api", APIS)
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_every_value_is_named_after_the_head_it_was_computed_for(
    api, data, minilm, alone, tmp_path_factory
):
    m = minilm
    layers, heads = _orders(data)
    pairs = _pairs(layers, heads)
    kw = dict(layers=layers, heads=heads)
    if api == "attention":
        att = m.attention(TEXT, **kw)
        assert (list(att.layers), list(att.heads)) == (layers, heads)
        for i, a in enumerate(att.layers):
            for j, b in enumerate(att.heads):
                assert np.array_equal(att.weights[i, j], alone.get(api, a, b)), (a, b)
    elif api == "analyze":
        res = at.analyze(TEXT, m, n_jobs=1, progress=False, **kw)
        assert (list(res.layers), list(res.heads)) == (layers, heads)
        for a, b in pairs:
            assert res.diagram(a, b) == alone.get(api, a, b), (a, b)
        assert [(r["layer"], r["head"]) for r in res.summary_rows()] == pairs
    elif api == "compare":
        c = at.compare(TEXT, OTHER, m, n_jobs=1, progress=False, **kw)
        for a, b in pairs:
            dg, scale = alone.get(api, a, b)
            assert c.diagrams(a, b) == dg and c.scale(a, b) == scale, (a, b)
    elif api == "timeline":
        tls = at.timeline(TEXT, m, n_jobs=1, progress=False, **kw)
        assert [(t.layer, t.head) for t in tls] == pairs
        for t in tls:
            ref = alone.get(api, t.layer, t.head)
            assert [s.diagram for s in t.slices] == [s.diagram for s in ref.slices]
            assert np.array_equal(t.bottleneck, ref.bottleneck)
    elif api == "heads":
        att = m.attention(TEXT, **kw)
        assert att.n_tokens <= N_TOKENS
        hs = at.head_space(att, n_jobs=1, progress=False)
        assert hs.labels == [f"L{a}H{b}" for a, b in pairs]
        for p, (a, b) in enumerate(pairs):  # each distance: those two heads' own matrices
            for q, (c, d) in enumerate(pairs):
                two = np.stack([alone.get("attention", a, b), alone.get("attention", c, d)])
                ref = at.head_distances(two[None], normalize=hs.normalize)[0, 1]
                assert hs.distances[p, q] == pytest.approx(ref, rel=1e-12, abs=0), (a, b, c, d)
        ft = hs.types.features
        for r, (a, b) in enumerate(pairs):
            ref, label = alone.get("head_types", a, b)
            assert (ft["layer"][r], ft["head"][r]) == (a, b)
            for k, v in ref.items():  # reductions over (heads, n) arrays: summed in another
                # order, n float64 terms differ by at most n·eps of their magnitude
                np.testing.assert_allclose(
                    ft[k][r], v, rtol=N_EPS, atol=N_EPS, err_msg=f"{a, b, k}"
                )
            assert hs.types.labels[layers.index(a), heads.index(b)] == label
    elif api == "features":
        t = features([(PROMPT, ANSWER)], m, sets=FEATURE_SETS, n_jobs=1, **kw)
        assert t.settings["layers"] == layers and t.settings["heads"] == heads
        _same_values(dict(zip(t.columns, t.values[0])), alone, pairs)
        # the zigzag goes through the layers in model order, the heads' mean in id order
        ref = features(
            [(PROMPT, ANSWER)],
            m,
            sets=("zigzag",),
            n_jobs=1,
            layers=sorted(layers),
            heads=sorted(heads),
        )
        assert np.array_equal(t.select(sets="zigzag").values, ref.values)
    elif api == "AttentionFeatures":
        est = AttentionFeatures(
            model=m.name,
            sets=NO_PROMPT,
            n_jobs=1,
            memory=str(tmp_path_factory.mktemp("cache")),
            **kw,
        )
        for _ in range(2):  # computed, then read from the cache
            X = est.fit_transform([TEXT])
            _same_values(dict(zip(est.get_feature_names_out(), X[0])), alone, pairs, sets=NO_PROMPT)
    elif api == "corpus":
        df = pd.DataFrame({"text": [PROMPT], "answer": [ANSWER]})
        store = corpus_run(
            df,
            tmp_path_factory.mktemp("store") / "s",
            model=m,
            answer_column="answer",
            sets=FEATURE_SETS,
            keep_diagrams=True,
            n_jobs=1,
            progress=False,
            **kw,
        )
        row = store.to_pandas().iloc[0]
        cols = [c for c in row.index if c.count(".") >= 2 and c.startswith("L")]
        _same_values({c: float(row[c]) for c in cols}, alone, pairs)
        dgms = store.diagrams(str(row["id"]))
        assert list(dgms) == pairs
        for (a, b), g in dgms.items():
            ref = alone.get("analyze", a, b)
            assert g.allclose(ref, atol=0), (a, b)
    elif api == "select":
        t = features([(PROMPT, ANSWER)], m, sets=("graph", "template"), n_jobs=1, **kw)
        asked = data.draw(st.permutations(pairs), label="asked")
        sub = t.select(heads=[list(p) for p in asked])  # lists, as json.load gives them
        _same_values(
            dict(zip(sub.columns, sub.values[0])), alone, asked, sets=("graph", "template")
        )
        by_set = t.select(heads=asked, sets=["template", "graph"])
        assert by_set.columns[0].split(".")[1] == "template"
    elif api == "select_heads":
        t = features(LABELLED, m, sets=("graph", "template"), n_jobs=1, **kw)
        scores = head_scores(t, Y, criterion="anova")
        assert scores == {p: alone.get("scores", *p)["anova"] for p in pairs}
        for criterion in ("anova", "cv_accuracy"):  # each head's score is its own alone
            ref = {p: alone.get("scores", *p)[criterion] for p in pairs}
            chosen = select_heads(t, Y, len(pairs), criterion=criterion, cv=3)
            assert chosen == sorted(pairs, key=lambda p: (-ref[p], p))
    else:  # pragma: no cover
        raise AssertionError(api)
