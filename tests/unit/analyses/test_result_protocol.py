"""Every result kind follows the one protocol (attntopo.analyses._result), checked the same way.

Each kind is built from real small inputs — synthetic :class:`Attention` objects (Dirichlet
rows, words with character offsets), no model — through the public functions, and then:
save → load_result gives an equal result; changing any compared field makes it unequal (the
ignore-listed ``provenance`` does not); summary() is columns of one length; to_dict() is strict
JSON; to_pandas() has one row per summary row; the kind is in the table; and a saved result
whose arrays are of the wrong dtype or shape is refused with a one-line ResultFormatError.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

import attntopo as at
from attntopo.analyses import KINDS, Columns, Result
from attntopo.attention import Attention
from attntopo.errors import ResultFormatError
from attntopo.io import load_payload, save_payload
from attntopo.topology import Diagram

TEXTS = ["the cat sat on the mat", "a cat sat on the red mat", "the old cat sat on the mat again"]


def _attention(
    text: str,
    rng: np.random.Generator,
    *,
    causal: bool = False,
    model: str = "synthetic",
    L: int = 2,
    H: int = 2,
) -> Attention:
    """An Attention over the words of ``text`` (one token per word, offsets into the text)."""
    words = text.split()
    n = len(words)
    W = rng.dirichlet(np.full(n, 0.5), size=(L, H, n))
    if causal:
        W = np.tril(W)
        W /= W.sum(-1, keepdims=True)
    offsets, pos = [], 0
    for w in words:
        start = text.index(w, pos)
        offsets.append((start, start + len(w)))
        pos = start + len(w)
    return Attention(
        weights=W.astype(np.float32),
        tokens=words,
        offsets=offsets,
        special=np.zeros(n, dtype=bool),
        causal=causal,
        model=model,
        text=text,
    )


def _build_all() -> dict[str, Result]:
    rng = np.random.default_rng(2024)
    a, b, c = (_attention(t, rng) for t in TEXTS)
    other = [_attention(t, rng, model="other", H=3) for t in TEXTS]
    return {
        "analysis": at.analyze(a, n_jobs=1),
        "comparison": at.compare(a, b, n_jobs=1),
        "phrase_topology": at.phrase_topology("cat sat", [a, b, c], n_jobs=1),
        "head_types": at.head_types([a, c]),
        "head_space": at.head_space([a, b, c]),
        "head_space_comparison": at.compare_models(
            None,
            model_a=at.head_space([a, b, c], types=False),
            model_b=at.head_space(other, types=False),
            n_boot=3,
            n_jobs=1,
        ),
        "timeline": at.timeline(
            _attention(TEXTS[2], rng, causal=True), layers=1, heads=0, n_jobs=1
        ),
    }


def _build_upper() -> dict[str, Result]:
    """The kinds of the layers above the analyses (features, hardmax, compress, theory), each
    built without a model: from arrays, a simulation, a tiny training run or synthetic attention."""
    from attntopo import hardmax
    from attntopo.compress import Compression
    from attntopo.features import FeatureTable
    from attntopo.theory import approximability
    from unit.hardmax.test_hardmax_classifier import synthetic as classifier_texts
    from unit.theory.test_approx_math import NO_KERNEL
    from unit.theory.test_approx_math import _attention as approx_attention
    from unit.theory.test_context_result import synthetic as synthetic_context
    from unit.theory.test_depth_result import synthetic as synthetic_depth

    texts, labels = classifier_texts()
    return {
        "feature_table": FeatureTable(
            np.array([[1.0, 2.0], [3.0, 0.5]]),
            ("L0H0.js.h0.n_bars", "L0H1.js.h0.n_bars"),
            np.arange(2),
            ["a", "b"],
        ),
        "hardmax_simulation": hardmax.simulate(
            np.random.default_rng(0).normal(size=(12, 2)), alpha=1.0, steps=20
        ),
        "hardmax_classifier": hardmax.train_classifier(
            texts, labels, d=2, layers=2, epochs=3, seed=1, top_words=3
        ),
        "compression": Compression(
            model="m",
            text="a b c",
            tokens=["a", "b", "c"],
            causal=False,
            method="persistence",
            representative="barycenter",
            scale="gap",
            heads=np.array([[0, 0], [0, 1], [1, 1]]),
            n_tokens=3,
            clusters=np.array([1, 2, 3]),
            scales=np.array([0.1, 0.2, 0.3]),
            effect={"cosine": 0.99},
        ),
        "depth": synthetic_depth(),
        "approximability": approximability(approx_attention(), families=NO_KERNEL, budgets=[4, 8]),
        "context": synthetic_context(),
        "detector_evaluation": _detector_evaluation(),
    }


def _detector_evaluation():
    from attntopo.features import FeatureTable, evaluate_detectors

    rng = np.random.default_rng(7)
    n = 40
    y = np.tile([0, 1], n // 2)
    cols = ("L0H0.x.a", "L0H1.x.a", "L1H0.x.a")
    table = FeatureTable(rng.normal(size=(n, 3)) + y[:, None], cols, np.arange(n), [""] * n)
    length = rng.normal(size=n)
    return evaluate_detectors(
        {"topo": table},
        y,
        groups=np.arange(n) // 2,
        covariates={"length": length},
        strata={"half": np.arange(n) < 20},
        heads={"topo": 1},
        head_criterion="anova",
        n_boot=20,
    )


@pytest.fixture(scope="module")
def results() -> dict[str, Result]:
    return {**_build_all(), **_build_upper()}


def test_every_kind_in_the_table_is_covered(results):
    # a result class added to the table (or to the package's upper kinds) without a case here
    # fails this test
    from attntopo import _UPPER_KINDS
    from attntopo.analyses._kinds import KINDS as table

    analyses_kinds = {
        k for k, cls in table.items() if cls.__module__.startswith("attntopo.analyses.")
    }
    assert analyses_kinds | set(_UPPER_KINDS) == set(results)


KIND_NAMES = [
    "analysis",
    "comparison",
    "phrase_topology",
    "head_types",
    "head_space",
    "head_space_comparison",
    "timeline",
    "feature_table",
    "hardmax_simulation",
    "hardmax_classifier",
    "compression",
    "depth",
    "approximability",
    "context",
    "detector_evaluation",
]


# ------------------------------------------------------------------- perturbations
def _perturb(value):
    """A value of the same kind that differs from ``value`` (exactly one place changed)."""
    if value is None:
        return "changed"
    if isinstance(value, Result):
        name = value._compared_fields()[0]
        return dataclasses.replace(value, **{name: _perturb(getattr(value, name))})
    if isinstance(value, Diagram):
        pts = [np.asarray(value[d]) for d in range(value.maxdim + 1)]
        pts[0] = np.vstack([pts[0], [[0.0, 0.5]]])
        return Diagram(
            pts,
            maxdim=value.maxdim,
            threshold=value.threshold,
            engine=value.engine,
            filtration=value.filtration,
        )
    if isinstance(value, Attention):
        return dataclasses.replace(value, text=value.text + " changed")
    if dataclasses.is_dataclass(value):
        f = dataclasses.fields(value)[0].name
        return dataclasses.replace(value, **{f: _perturb(getattr(value, f))})
    if isinstance(value, np.ndarray):
        if value.size == 0:
            return np.zeros((value.shape[0] + 1,) + value.shape[1:], dtype=value.dtype)
        if value.dtype.kind in "US":  # fixed-width strings: widen before appending
            out = value.astype(object)
            out.reshape(-1)[0] = str(out.reshape(-1)[0]) + "x"
            return out.astype(str)
        out = value.copy()
        flat = out.reshape(-1)
        if out.dtype.kind == "b":
            flat[0] = not flat[0]
        elif out.dtype.kind == "f" and not np.isfinite(flat[0]):
            flat[0] = 0.25
        else:
            flat[0] = flat[0] + 1
        return out
    if isinstance(value, dict):
        if not value:
            return {"changed": 1}
        key = next(iter(value))
        return {**value, key: _perturb(value[key])}
    if isinstance(value, (list, tuple)):
        if not value:
            return type(value)(["changed"])
        return type(value)([_perturb(value[0]), *value[1:]])
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, float):
        return 0.25 if not math.isfinite(value) else value + 1.0
    if isinstance(value, int):
        return value + 1
    raise TypeError(f"no perturbation for {type(value).__name__}")


# ----------------------------------------------------------------------- protocol
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_kind_is_in_the_table(results, kind):
    r = results[kind]
    from attntopo import _result_kind
    from attntopo.analyses._kinds import load_result  # noqa: F401  (upper kinds join KINDS on first load)

    assert r.kind == kind and (KINDS.get(kind) or _result_kind(kind)) is type(r)
    assert isinstance(r, Result)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_save_and_load_round_trip_equal(results, kind, tmp_path):
    r = results[kind]
    r.save(tmp_path / kind)
    back = at.load_result(tmp_path / kind)
    assert type(back) is type(r)
    assert back == r and r == back
    assert back.provenance == json.loads(json.dumps(r.provenance))  # kept, though not compared
    # and once more: loading what was loaded and saved again changes nothing
    back.save(tmp_path / f"{kind}-again")
    assert at.load_result(tmp_path / f"{kind}-again") == r


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_a_changed_field_makes_it_unequal_except_ignored_ones(results, kind):
    r = results[kind]
    assert r == dataclasses.replace(r)  # a copy with the same fields is equal
    fields = [f.name for f in dataclasses.fields(r)]
    assert set(type(r)._eq_ignore) <= set(fields)
    for name in fields:
        value = getattr(r, name)
        try:
            changed = dataclasses.replace(r, **{name: _perturb(value)})
        except (TypeError, ValueError):
            # an empty sequence of numbers (FeatureTable.skipped): "changed" is no element of it
            assert isinstance(value, (list, tuple)) and not value, name
            changed = dataclasses.replace(r, **{name: type(value)([0])})
        if name in type(r)._eq_ignore:
            assert changed == r, f"{kind}.{name} is ignore-listed but changes equality"
        else:
            assert changed != r, f"changing {kind}.{name} leaves the result equal"
    assert "provenance" in type(r)._eq_ignore


def test_head_space_equality_compares_eigenvalues(results):
    hs = results["head_space"]
    assert dataclasses.replace(hs, eigenvalues=hs.eigenvalues * 2) != hs


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_summary_is_columns_of_one_length(results, kind):
    s = results[kind].summary()
    assert isinstance(s, Columns) and isinstance(s, dict) and s
    lengths = {k: v.shape for k, v in s.items()}
    assert all(isinstance(v, np.ndarray) and v.ndim == 1 for v in s.values()), lengths
    assert len({v.shape[0] for v in s.values()}) == 1, lengths
    assert s.n_rows > 0 and len(s.rows()) == s.n_rows


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_to_dict_is_strict_json(results, kind):
    d = results[kind].to_dict()
    assert isinstance(d, dict) and d
    text = json.dumps(d, allow_nan=False)  # no NaN/inf numbers, no numpy types
    assert json.loads(text) == d


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_to_pandas_has_one_row_per_summary_row(results, kind):
    r = results[kind]
    df = r.to_pandas()
    s = r.summary()
    if (
        df.index.name is not None
    ):  # a table indexed by one of its columns (FeatureTable: text_index)
        assert df.index.name in s
        df = df.reset_index()
    assert len(df) == s.n_rows and list(df.columns) == list(s)


# --------------------------------------------------------------- checked on load
def _resave(src, dst, change):
    meta, arrays = load_payload(src)
    meta = {k: v for k, v in meta.items() if k not in ("format_version", "storage")}
    arrays = dict(arrays)
    change(arrays)
    save_payload(dst, meta, arrays)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_load_refuses_arrays_of_the_wrong_dtype_or_shape(results, kind, tmp_path):
    results[kind].save(tmp_path / "ok")
    _, arrays = load_payload(tmp_path / "ok")
    checked = 0
    for name, arr in arrays.items():
        cases = []
        if arr.dtype.kind != "U":
            cases.append(("strings", lambda a, n=name: a.__setitem__(n, a[n].astype(str))))
        if arr.ndim >= 1 and arr.shape[0] > 0:
            cases.append(("one row short", lambda a, n=name: a.__setitem__(n, a[n][:-1])))
        for what, change in cases:
            dst = tmp_path / f"bad-{checked}"
            _resave(tmp_path / "ok", dst, change)
            with pytest.raises(ResultFormatError) as err:
                at.load_result(dst)
            msg = str(err.value)
            assert "\n" not in msg and kind in msg, f"{name} ({what}): {msg!r}"
            checked += 1
    assert checked >= len(
        arrays
    )  # every array was corrupted at least one way, and each was refused


def test_load_refuses_negative_counts_and_non_finite_distances(results, tmp_path):
    results["analysis"].save(tmp_path / "ok")

    def negative(a):
        c = a["dgm_counts_h0"].copy()
        c.flat[0] = -1
        c.flat[1] += 1
        a["dgm_counts_h0"] = c

    def nan_distance(a):
        d = a["distances"].copy()
        d.flat[1] = np.nan
        a["distances"] = d

    for i, change in enumerate((negative, nan_distance)):
        _resave(tmp_path / "ok", tmp_path / f"bad{i}", change)
        with pytest.raises(ResultFormatError, match="negative|NaN"):
            at.load_result(tmp_path / f"bad{i}")


def test_unknown_kind_is_one_line(tmp_path):
    save_payload(tmp_path / "x", {"kind": "no_such_kind"}, {"a": np.zeros(2)})
    with pytest.raises(
        ResultFormatError, match="unknown result kind 'no_such_kind'.*known: analysis"
    ):
        at.load_result(tmp_path / "x")


def test_package_versions_are_read_once_per_process(monkeypatch):
    """Every result records the versions; the packages' metadata is read from disk once per
    process (it cost each result ~3 ms, ~1 % of a 128-token analyze), and each result gets
    its own dict."""
    import importlib.metadata as md

    from attntopo.analyses import _provenance

    calls = []
    real = md.version
    monkeypatch.setattr(md, "version", lambda name: calls.append(name) or real(name))
    _provenance._versions.cache_clear()
    try:
        first = _provenance.package_versions()
        first["torch"] = "changed by a caller"
        second = _provenance.package_versions()
    finally:
        _provenance._versions.cache_clear()
    assert sorted(calls) == sorted(_provenance._PACKAGES)  # once each, not once per call
    assert second["attntopo"] == real("attntopo") and second["torch"] == real("torch")
