"""FeatureSettings: the feature settings in one record, its checks, and the rule that a
keyword given beside ``settings=`` must agree with it (features, feature_names, corpus, the
scikit-learn estimator)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import numpy as np
import pytest

import attntopo
from _synthetic import text_attention
from attntopo.errors import InvalidInputError
from attntopo.features import (
    CYCLE_CAP,
    DEFAULT_QUANTILES,
    DEFAULT_SCALES,
    DEFAULT_SETS,
    DEFAULT_THRESHOLDS,
    FeatureSettings,
    features,
)

FIELDS = [f.name for f in dataclasses.fields(FeatureSettings)]


def test_defaults_are_the_documented_ones_and_it_is_public():
    s = FeatureSettings()
    assert (s.sets, s.thresholds, s.scales, s.quantiles, s.cycle_cap) == (
        DEFAULT_SETS,
        DEFAULT_THRESHOLDS,
        DEFAULT_SCALES,
        DEFAULT_QUANTILES,
        CYCLE_CAP,
    )
    assert (s.layers, s.heads, s.drop_special, s.min_persistence, s.engine) == (
        None,
        None,
        False,
        0.0,
        None,
    )
    assert attntopo.FeatureSettings is FeatureSettings


def test_equal_settings_are_equal_hashable_and_picklable():
    a = FeatureSettings(
        sets=["js", "graph"], layers=[0, 1], thresholds=[0.1, 0.5], cycle_cap=np.int64(7)
    )
    b = FeatureSettings(sets=("js", "graph"), layers=(0, 1), thresholds=(0.1, 0.5), cycle_cap=7)
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a.thresholds == (0.1, 0.5) and isinstance(a.layers, tuple)
    assert pickle.loads(pickle.dumps(a)) == a
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.sets = ("js",)
    assert FeatureSettings(sets="js").sets == ("js",)
    assert FeatureSettings(layers=-1).layers == -1
    assert FeatureSettings(prompt_quantities="attention").st()["prompt_quantities"] == ["attention"]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"sets": ("js", "nope")}, "unknown feature set 'nope'"),
        ({"sets": ()}, "sets is empty"),
        ({"sets": ("js", "js")}, "distinct"),
        ({"thresholds": (0.1, 1.5)}, "thresholds must be a non-empty sequence"),
        ({"scales": ()}, "scales must be a non-empty sequence"),
        ({"quantiles": "0.5"}, "quantiles must be a sequence of numbers"),
        ({"cycle_cap": 0}, "cycle_cap must be an int >= 1"),
        ({"drop_special": "yes"}, "drop_special must be True or False"),
        ({"min_persistence": -0.1}, "min_persistence"),
        ({"engine": "local"}, "unknown persistence engine 'local'"),
        ({"layers": [0, 1.5]}, "layers must be None, an int or a sequence of ints"),
        ({"heads": "0"}, "heads must be None, an int or a sequence of ints"),
        ({"prompt_quantities": ("js", "x")}, "unknown prompt quantity 'x'"),
        ({"prompt_quantities": ()}, "prompt_quantities must name distinct quantities"),
    ],
)
def test_bad_settings_are_one_clear_error(kwargs, fragment):
    with pytest.raises(InvalidInputError, match=fragment):
        FeatureSettings(**kwargs)
    with pytest.raises(InvalidInputError, match=fragment):  # replace() checks again
        dataclasses.replace(FeatureSettings(), **kwargs)


def test_resolve_takes_keywords_that_agree_and_refuses_those_that_do_not():
    s = FeatureSettings(sets=("graph",), thresholds=(0.1,))
    assert FeatureSettings.resolve(s) is s
    assert FeatureSettings.resolve(s, thresholds=[0.1], sets="graph", layers=None) is s
    assert FeatureSettings.resolve(None, cycle_cap=3) == FeatureSettings(cycle_cap=3)
    with pytest.raises(
        InvalidInputError, match=r"thresholds=\[0\.2\] disagrees with settings\.thresholds=\[0\.1\]"
    ):
        FeatureSettings.resolve(s, thresholds=(0.2,))
    with pytest.raises(
        InvalidInputError, match="settings must be an attntopo.features.FeatureSettings"
    ):
        FeatureSettings.resolve({"sets": ("js",)})


@pytest.fixture(scope="module")
def atts():
    return [
        text_attention("the cat sat on the mat.", 2, 3, seed=1),
        text_attention("dogs bark at night, loudly.", 2, 3, seed=2),
    ]


def test_features_with_settings_equals_features_with_keywords(atts):
    kw = dict(
        sets=("js", "graph"),
        layers=[1],
        heads=[0, 2],
        thresholds=(0.05, 0.3),
        scales=(0.2,),
        quantiles=(0.5,),
        cycle_cap=5,
        drop_special=False,
        min_persistence=0.01,
        engine="ripser",
    )
    by_kw = features(atts, n_jobs=1, **kw)
    s = FeatureSettings(**kw)
    by_settings = features(atts, settings=s, n_jobs=1)
    assert by_settings.columns == by_kw.columns
    np.testing.assert_array_equal(by_settings.values, by_kw.values)
    assert by_settings.settings == by_kw.settings
    # the settings decide the table: another threshold, other columns
    other = features(atts, settings=dataclasses.replace(s, thresholds=(0.5,)), n_jobs=1)
    assert other.columns != by_kw.columns
    agreeing = features(atts, settings=s, thresholds=(0.05, 0.3), n_jobs=1)
    np.testing.assert_array_equal(agreeing.values, by_kw.values)
    with pytest.raises(InvalidInputError, match="cycle_cap=6 disagrees with settings.cycle_cap=5"):
        features(atts, settings=s, cycle_cap=6)


@pytest.mark.parametrize("fn", ["features", "feature_names", "corpus.run", "corpus.make_settings"])
def test_every_entry_point_checks_its_keywords_against_the_one_list(fn, tmp_path):
    """The settings come as ``settings=`` or keywords checked against SETTING_NAMES: a name
    that is no setting is a TypeError naming the function, before any model, input or store."""
    import attntopo.corpus as corpus
    import attntopo.features as feats

    call = {
        "features": lambda: feats.features(["a text"], tau=1),
        "feature_names": lambda: feats.feature_names("no-such-model", tau=1),
        "corpus.run": lambda: corpus.run(["a text"], tmp_path / "s", tau=1),
        "corpus.make_settings": lambda: corpus.make_settings(object(), tau=1),
    }[fn]
    obj = {
        "features": feats.features,
        "feature_names": feats.feature_names,
        "corpus.run": corpus.run,
        "corpus.make_settings": corpus.make_settings,
    }[fn]
    params = inspect.signature(obj).parameters
    assert "settings" in params and not set(FIELDS) & set(params)
    with pytest.raises(
        TypeError,
        match="unexpected keyword argument 'tau' \\(the feature settings are sets, layers",
    ):
        call()
    assert not (tmp_path / "s").exists()


def test_the_estimator_has_every_setting_as_a_parameter():
    pytest.importorskip("sklearn")
    from attntopo.sklearn import AttentionFeatures

    params = AttentionFeatures().get_params()
    assert set(FIELDS) | {"settings"} <= set(params)
    est = AttentionFeatures(
        thresholds=(0.1,),
        quantiles=(0.5,),
        cycle_cap=3,
        scales=(0.2,),
        engine="ripser",
        min_persistence=0.01,
    )
    assert est.feature_settings() == FeatureSettings(
        thresholds=(0.1,),
        quantiles=(0.5,),
        cycle_cap=3,
        scales=(0.2,),
        engine="ripser",
        min_persistence=0.01,
    )
    s = FeatureSettings(sets=("js",), layers=[0])
    assert AttentionFeatures(settings=s).feature_settings() == s
    # the model is the one positional parameter; the settings are keywords
    assert AttentionFeatures("minilm", sets=("js",), layers=[0]).feature_settings() == s
    with pytest.raises(TypeError):
        AttentionFeatures("minilm", ("js",))
    assert AttentionFeatures(settings=s, sets=("js",)).feature_settings() == s
    with pytest.raises(InvalidInputError, match="sets=\\['graph'\\] disagrees with settings.sets"):
        AttentionFeatures(settings=s, sets=("graph",)).fit(["a text", "another"])
    with pytest.raises(InvalidInputError, match="thresholds must be"):
        AttentionFeatures(thresholds=(2.0,)).fit(["a text", "another"])
