"""The glossary (docs/api.md, Names): one name per concept in every public signature.

Every public function, class and method of the package's public modules is inspected; a
parameter spelled as a retired synonym fails the test unless it is listed in ``PENDING`` (renames
not done yet: the list may only shrink, and each entry must still exist, so it stays current).
Before the first release a rename keeps no shim: the old keyword is Python's TypeError.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from typing import Sequence

import numpy as np
import pytest

from _public import public_callables, public_modules

#: retired spelling -> the glossary's name (docs/api.md, Names)
RETIRED = {
    "n_threads": "n_jobs",
    "layer_ids": "layers",
    "head_ids": "heads",
    "persistence_engine": "engine",
    "max_dim": "maxdim",
    "min_pers": "min_persistence",
    "show_progress": "progress",
    "cache_dir": "memory",
    "torch_dtype": "dtype",
    "use_cuda": "device",
    "gpu": "device",
    "texts_or_atts": "texts",
    "text_or_path": "text",
    "texts_or_path": "texts",
    "eps": "scale",
}

#: ``layer``/``head`` name one index (``result.diagram(layer, head)``); spelled for a selection
#: (a parameter that takes several) or with a default head (``layer=0, head=0``) they are
#: retired for ``layers``/``heads`` (docs/api.md, Names).  On the command line ``--layer`` and
#: ``--head`` take a selection by design (``--layer 4,1``, docs/cli.md): checked here in
#: signatures and web fields.
RETIRED_AS_SELECTION = {"layer": "layers", "head": "heads"}


def _retired_as_selection(name: str, annotation, default) -> bool:
    if name not in RETIRED_AS_SELECTION:
        return False
    takes_several = any(w in str(annotation) for w in ("Sequence", "list", "tuple", "Iterable"))
    default_head = isinstance(default, int) and not isinstance(default, bool)
    return takes_several or default_head


#: (qualified name, parameter) still spelled the retired way: renames in progress (issue 29).
#: Empty: every rename is done (test_no_renames_pending keeps it so).
PENDING: set[tuple[str, str]] = set()


def _public_callables():
    """Every public function, class and method of every public module (tests/_public.py)."""
    for qual, obj, _ in public_callables():
        yield qual, obj


def _parameters(obj):
    try:
        return list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return []


def _signatures():
    """``(qualified name, its parameters by name)`` of every public signature."""
    for qual, obj in _public_callables():
        try:
            yield qual, inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue


def _all_parameters():
    """``(qualified name, inspect.Parameter)`` of every public signature."""
    for qual, params in _signatures():
        yield from ((qual, p) for p in params.values())


def test_no_retired_names_in_public_signatures():
    found = set()
    for qual, params in _signatures():
        for p in params.values():
            if p.name in RETIRED or _retired_as_selection(p.name, p.annotation, p.default):
                found.add((qual, p.name))
    # a class re-exported under several modules counts once, under its top-level name
    new = {
        f
        for f in found
        if f not in PENDING
        and not any(f[1] == p and f[0].endswith("." + q.split(".")[-1]) for q, p in PENDING)
    }
    glossary = {**RETIRED, **RETIRED_AS_SELECTION}
    assert not new, "retired names in public signatures (docs/api.md, Names): " + ", ".join(
        f"{q}({p}=) -> {glossary[p]}" for q, p in sorted(new)
    )
    stale = {
        e
        for e in PENDING
        if not any(
            e[1] == p and (q == e[0] or q.endswith("." + e[0].split(".")[-1])) for q, p in found
        )
    }
    assert not stale, f"done renames still listed as PENDING (remove them): {sorted(stale)}"


def test_the_name_checks_walk_every_public_module():
    """The walk reaches the subpackages' public modules (topology.multiparameter, datasets,
    plots, words), not only the package's top level: a walk that missed them would pass."""
    mods = set(public_modules())
    for must in (
        "attntopo",
        "attntopo.topology.multiparameter",
        "attntopo.datasets",
        "attntopo.plots",
        "attntopo.words",
        "attntopo.features.pipeline",
        "attntopo.hardmax",
        "attntopo.sklearn",
    ):
        assert must in mods, must
    assert not any(m.split(".")[1:2] in (["cli"], ["web"]) for m in mods)
    quals = {q for q, _ in _public_callables()}
    assert "attntopo.topology.multiparameter.hilbert_function" in quals
    assert "attntopo.Comparison.diagrams" in quals and "attntopo.datasets.hallucination_qa" in quals


def test_the_retired_names_are_caught(monkeypatch):
    """Each retired spelling is caught where it can appear: a signature, a selection spelled
    ``layer``/``head``, a default head."""
    import inspect as _inspect

    def f(
        text, *, texts_or_atts=None, text_or_path=None, eps=0.1, layer: Sequence[int] = (0,), head=0
    ):
        return text

    params = _inspect.signature(f).parameters
    caught = {
        n
        for n, p in params.items()
        if n in RETIRED or _retired_as_selection(n, p.annotation, p.default)
    }
    assert caught == {"texts_or_atts", "text_or_path", "eps", "layer", "head"}

    def g(layer: int, head: int | None = None):
        return layer, head

    params = _inspect.signature(g).parameters
    assert not any(_retired_as_selection(n, p.annotation, p.default) for n, p in params.items())


def test_the_glossary_lists_every_retired_spelling():
    """docs/api.md's Names table says what the test retires: each retired spelling is in its
    right-hand column (a rename added here is written there too)."""
    import re
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    table = page.split("## Names", 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
    retired_column = " ".join(row.rsplit("|", 2)[-2] for row in table.splitlines()[2:])
    listed = {m.rstrip("=") for m in re.findall(r"`([a-z_]+=?)", retired_column)}
    assert set(RETIRED) <= listed, f"retired but not in docs/api.md: {set(RETIRED) - listed}"
    assert {"layer", "head"} <= {w for w in re.findall(r"[a-z_]+", retired_column)}


def test_no_renames_pending():
    assert PENDING == set(), f"renames left pending: {sorted(PENDING)}"


def test_layer_and_head_name_one_index_layers_and_heads_a_selection():
    """``layer``/``head`` name one index (``result.diagram(layer, head)``); a parameter that takes
    several (an int, a list or None for all) is ``layers``/``heads``, as in every analysis."""
    selecting = {
        qual: p.name
        for qual, p in _all_parameters()
        if p.name in ("layer", "head") and "Sequence" in str(p.annotation)
    }
    assert not selecting, f"selections spelled layer/head (write layers=/heads=): {selecting}"
    import attntopo as at

    assert {"layers", "heads"} <= set(inspect.signature(at.phrase_topology).parameters)


def test_retired_names_in_no_cli_option_or_web_field():
    """The command line's options and the web API's fields use the glossary's names too."""
    import typer

    from attntopo.cli import app

    def commands(cmd, path=()):
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from commands(sub, path + (name,))
        if not getattr(cmd, "commands", None):
            yield path, cmd

    retired_flags = {"--" + old.replace("_", "-") for old in RETIRED}
    found = {
        (" ".join(path), opt)
        for path, cmd in commands(typer.main.get_command(app))
        for p in cmd.params
        for opt in (*p.opts, *p.secondary_opts)
        if opt in retired_flags
    }
    found |= {
        (" ".join(path), p.name)
        for path, cmd in commands(typer.main.get_command(app))
        for p in cmd.params
        if p.name in RETIRED
    }
    assert not found, f"retired names on the command line: {sorted(found)}"
    n_options = sum(len(cmd.params) for _, cmd in commands(typer.main.get_command(app)))
    assert n_options > 100  # the walk sees every command's options
    pytest.importorskip("fastapi")
    from attntopo.web import Settings
    from attntopo.web.api import _request_models

    models = _request_models(Settings())
    assert models and all(m.model_fields for m in models)  # the walk sees the web's fields
    fields = {
        (m.__name__, f)
        for m in models
        for f, info in m.model_fields.items()
        if f in RETIRED or _retired_as_selection(f, info.annotation, info.default)
    }
    assert not fields, f"retired names in the web API: {sorted(fields)}"


def test_progress_defaults_to_a_bar_where_a_model_runs():
    """``progress=None`` (a bar on a terminal or in a notebook) where the call runs a model (it
    takes ``model``, or loads one); ``False`` in the building blocks below (distances,
    persistence, head selection), which a caller with its own bar calls many times."""
    wrong = {}
    for qual, params in _signatures():
        p = params.get("progress")
        if p is None or "Callable[[dict]" in str(p.annotation):  # hardmax's training callback
            continue
        runs_model = bool({"model", "model_a", "spec"} & set(params))
        if p.default is not (None if runs_model else False):
            wrong[qual] = p.default
    assert not wrong, f"progress defaults against the rule: {wrong}"


@pytest.mark.parametrize("call", ["compare", "phrase_topology"])
def test_selection_and_options_after_the_data_are_keywords(call):
    """``compare(a, b, model, layers=..., heads=...)``: options after the data are keyword-only."""
    import attntopo as at

    params = inspect.signature(getattr(at, call)).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional[-1] == "model" and params["layers"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize(
    "fn_name", ["token_distances", "persistence", "head_distances", "head_space"]
)
def test_n_threads_is_n_jobs_everywhere(fn_name):
    """Renamed before the first release, without a shim: ``n_threads=`` is Python's TypeError."""
    import attntopo as at

    fn = getattr(at, fn_name)
    params = inspect.signature(fn).parameters
    assert "n_jobs" in params and "n_threads" not in params
    assert not hasattr(fn, "__renamed_arguments__")
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(6), size=(1, 2, 6))
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_threads'"):
        fn(P, n_threads=1)  # refused when the arguments are bound, before any work


def test_compare_takes_scale_layers_and_heads_only(fake_pair_for_names):
    """Renamed before the first release, without a shim: the old keywords are a TypeError."""
    import attntopo as at

    A, B = fake_pair_for_names
    c = at.compare(A, B, scale=0.4)
    assert c.given_scale == 0.4 and np.all(c.scales == 0.4) and c.scale(0, 1) == 0.4
    for old in ({"threshold": 0.4}, {"layer": 0}, {"head": 1}):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{next(iter(old))}'"):
            at.compare(A, B, **old)
    one = at.compare(A, B, layers=0, heads=[1], scale=0.4)
    assert (one.layers, one.heads) == ((0,), (1,))
    assert not hasattr(c, "threshold")
    doc = c.to_dict()
    assert doc["scale"] == 0.4 and "threshold" not in doc


@pytest.fixture
def fake_pair_for_names():
    from _synthetic import text_attention

    return (
        text_attention("the cat sat on the mat", 2, 3, seed=1),
        text_attention("the dog sat on the rug", 2, 3, seed=2),
    )


def test_result_classes_read_layers_and_heads():
    """HeadSpace, HeadTypes and Approximability hold ``layers``/``heads`` like every result."""
    import attntopo as at
    from _synthetic import text_attention

    atts = [text_attention("the cat sat on the mat", 2, 3, seed=s) for s in (1, 2)]
    hs = at.head_space(atts)
    ht = at.head_types(atts)
    for r in (hs, ht):
        assert (tuple(r.layers), tuple(r.heads)) == ((0, 1), (0, 1, 2))
        assert not hasattr(r, "layer_ids") and not hasattr(r, "head_ids")


def test_timeline_defaults_to_all_heads_like_every_analysis():
    import attntopo as at
    from _synthetic import text_attention

    att = text_attention("the cat sat on the mat", 2, 2, seed=3, causal=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        every = at.timeline(att, n_jobs=1)
    assert [(t.layer, t.head) for t in every] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    one = at.timeline(att, layers=1, heads=1, n_jobs=1)
    assert (one.layer, one.head) == (1, 1)
    assert one.slices[-1].diagram == every[3].slices[-1].diagram
    assert [(t.layer, t.head) for t in at.timeline(att, layers=1, n_jobs=1)] == [(1, 0), (1, 1)]
    for old in ("layer", "head"):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{old}'"):
            at.timeline(att, **{old: 1})


def _weights(L=2, H=3, n=4, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(n), size=(L, H, n)).astype(np.float32)


def test_attention_takes_layers_and_heads_only():
    """``Attention``'s fields are ``layers``/``heads``; ``layer_ids``/``head_ids`` are gone."""
    import pickle

    import attntopo as at

    w, toks = _weights(), list("abcd")
    params = inspect.signature(at.Attention).parameters
    assert "layers" in params and "heads" in params and "layer_ids" not in params
    new = at.Attention.from_weights(w, toks, layers=[3, 5], heads=[0, 2, 4])
    assert (new.layers, new.heads) == ((3, 5), (0, 2, 4))
    with pytest.raises(TypeError, match="unexpected keyword argument 'layer_ids'"):
        at.Attention.from_weights(w, toks, layer_ids=[3, 5])
    fields = dict(
        weights=w,
        tokens=toks,
        offsets=[(0, 0)] * 4,
        special=[False] * 4,
        causal=False,
        model="custom",
    )
    with pytest.raises(TypeError, match="unexpected keyword argument 'head_ids'"):
        at.Attention(**fields, head_ids=(0, 2, 4))
    assert at.Attention(**fields, layers=(3, 5), heads=(0, 2, 4)) == new
    assert not hasattr(new, "layer_ids") and not hasattr(new, "head_ids")
    assert pickle.loads(pickle.dumps(new)) == new
    # the names raise no warning anywhere on the way (select, drop_special, an analysis)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sel = new.select(layers=1, heads=[0, 2])
        assert (sel.layers, sel.heads) == ((5,), (0, 4))
        res = at.analyze(new, maxdim=0, n_jobs=1)
        assert (res.layers, res.heads) == ((3, 5), (0, 2, 4))


def test_analysis_saved_with_layer_ids_keys_loads(tmp_path):
    """Saved files name the payload keys ``layer_ids``/``head_ids`` (the storage format); they
    load into ``.layers``/``.heads``."""
    import json

    import attntopo as at

    att = at.Attention.from_weights(_weights(), list("abcd"), layers=[3, 5], heads=[0, 2, 4])
    res = at.analyze(att, maxdim=1, n_jobs=1)
    res.save(tmp_path / "a")
    (meta_file,) = [f for f in (tmp_path / "a").iterdir() if f.suffix == ".json"]
    meta = json.loads(meta_file.read_text())
    flat = json.dumps(meta)
    assert '"layer_ids": [3, 5]' in flat and '"head_ids": [0, 2, 4]' in flat
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = at.load_result(tmp_path / "a")
    assert (back.layers, back.heads, back.attention.layers) == ((3, 5), (0, 2, 4), (3, 5))
    assert back == res


def test_drop_special_defaults_to_false_everywhere():
    """One default for ``drop_special`` (docs/api.md, Names): False, the attention as the model
    computed it (as la-tda and TOHA use it).  A public signature that takes it defaults to
    False, or to None where ``settings=`` (a FeatureSettings, whose default is False) decides it;
    so do the command line's ``--drop-special`` and the web API's field."""
    import typer

    from attntopo.cli import app
    from attntopo.corpus import CorpusSettings
    from attntopo.features import FeatureSettings

    assert FeatureSettings().drop_special is False
    taking = {}
    for qual, obj in _public_callables():
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            continue
        # a required drop_special is a recorded value (Timeline's field), not an option
        if (
            "drop_special" in params
            and params["drop_special"].default is not inspect.Parameter.empty
        ):
            taking[qual] = params
        elif "settings" in params and any(p.kind == p.VAR_KEYWORD for p in params.values()):
            taking[qual] = params  # the feature settings as keywords: FeatureSettings' default
    wrong = {
        q: p["drop_special"].default
        for q, p in taking.items()
        if "drop_special" in p
        and not (
            p["drop_special"].default is False
            or (p["drop_special"].default is None and "settings" in p)
        )
    }
    assert not wrong, f"drop_special defaults other than False: {wrong}"
    for must in (
        "attntopo.analyze",
        "attntopo.compare",
        "attntopo.timeline",
        "attntopo.features.features",
        "attntopo.corpus.run",
        "attntopo.corpus.make_settings",
        "attntopo.sklearn.AttentionFeatures",
        "attntopo.AttentionModel.attention",
        "attntopo.FeatureSettings",
    ):
        assert must in taking, f"{must} takes no drop_special (or is no longer public)"
    assert CorpusSettings.__dataclass_fields__["features"].default is dataclasses.MISSING
    assert FeatureSettings.__dataclass_fields__["drop_special"].default is False

    def commands(cmd, path=()):
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from commands(sub, path + (name,))
        if not getattr(cmd, "commands", None):
            yield path, cmd

    flags = {
        " ".join(path): p.default
        for path, cmd in commands(typer.main.get_command(app))
        for p in cmd.params
        if p.name in ("drop_special", "setting__drop_special")
    }
    assert {"analyze", "compare", "corpus", "timeline"} <= set(flags)
    assert all(v is False for v in flags.values()), flags

    pytest.importorskip("fastapi")
    from attntopo.web import Settings
    from attntopo.web.api import _request_models

    for model in _request_models(Settings()):
        assert model.model_fields["drop_special"].default is False, model.__name__
