"""The declared interface modules hand out exactly the objects of the modules behind them."""

from __future__ import annotations

import importlib

import pytest

INTERFACES = [
    "attntopo.analyses.building",
    "attntopo.features.pipeline",
    "attntopo.models.instruments",
]


@pytest.mark.parametrize("name", INTERFACES)
def test_every_declared_name_resolves_and_is_documented(name):
    mod = importlib.import_module(name)
    assert mod.__all__ and mod.__doc__
    for attr in mod.__all__:
        obj = getattr(mod, attr)
        assert obj is not None
        assert f"``{attr}``" in mod.__doc__ or attr in mod.__doc__, attr
    with pytest.raises(AttributeError):
        getattr(mod, "no_such_name")


def test_pipeline_names_are_the_private_objects():
    from attntopo.features import _cache, _compute, _select, pipeline

    assert pipeline.stream_into is _compute.stream_into
    assert pipeline.cached_rows is _cache.cached_rows
    assert pipeline.best_heads is _select.best_heads
