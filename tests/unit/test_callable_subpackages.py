"""``attntopo.compress(...)`` and ``attntopo.features(...)``: callable subpackages (the issues'
spelling) that stay the subpackages with their helpers and result classes."""

from __future__ import annotations

import subprocess
import sys

import pytest

import attntopo
from attntopo.errors import AttntopoError


@pytest.mark.parametrize("name", ["compress", "features"])
def test_subpackage_is_callable_and_still_the_subpackage(name):
    import importlib

    module = importlib.import_module(f"attntopo.{name}")
    assert getattr(attntopo, name) is module and callable(module)
    assert callable(getattr(module, name)) and getattr(module, name) is not module
    assert name in dir(attntopo) and name in attntopo.__all__
    assert module.__doc__ and type(module).__doc__ == module.__doc__


def _error(call):
    with pytest.raises(AttntopoError) as info:
        call()
    return type(info.value), str(info.value)


def test_calling_the_subpackage_calls_its_function():
    # the same typed error, raised before any model loads, through both spellings
    assert _error(lambda: attntopo.compress("", model="minilm")) == _error(
        lambda: attntopo.compress.compress("", model="minilm")
    )
    assert _error(
        lambda: attntopo.features(["a text"], model="minilm", sets=("no-such-set",))
    ) == _error(
        lambda: attntopo.features.features(["a text"], model="minilm", sets=("no-such-set",))
    )


@pytest.mark.parametrize("name", ["compress", "features"])
def test_arguments_and_result_pass_through(name, monkeypatch):
    module = getattr(attntopo, name)
    monkeypatch.setattr(module, name, lambda *args, **kwargs: (args, kwargs))  # looked up per call
    assert module("m", "text", scale=0.3) == (("m", "text"), {"scale": 0.3})


def test_lazy_access_in_a_fresh_interpreter():
    code = (
        "import attntopo, sys; assert 'attntopo.compress' not in sys.modules; "
        "c = attntopo.compress; assert callable(c) and c.compress is not c; "
        "from attntopo import features; assert callable(features); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
