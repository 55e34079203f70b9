"""Shared fixtures (the real packaged models, loaded once per test process) and the
automatic ``model`` marker."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

SAMPLE = "Quantum information theory allows us to study attention using entanglement"

# fixtures that hand a test a real model in this process
MODEL_FIXTURES = frozenset({"minilm", "smollm2"})


def pytest_configure(config):
    # registered here, next to the rule that tests/README.md states for it
    config.addinivalue_line(
        "markers",
        "forward_compare: compares numbers from two different float32 forward passes (batch and "
        "single text, prefix and full text, CLI or server and library, float32 and float64), with "
        "the tolerances of tests/_tolerances.py; .ci/run repeats these under another kernel family",
    )


def pytest_collection_modifyitems(config, items):
    """Mark ``model`` every test that runs a real model's forward pass.

    In this process: it uses a fixture of ``MODEL_FIXTURES``, directly or through other
    fixtures (``item.fixturenames`` is the closure).  In a subprocess or a server (the CLI
    and web tests): it is marked ``model`` by hand, or ``smollm2`` / ``xdist_group("smollm2")``.
    ``-m model`` selects every test that needs the packaged models (tests/README.md).
    """
    for item in items:
        if item.get_closest_marker("model"):
            continue
        groups = {m.args[0] if m.args else m.kwargs.get("name") for m in item.iter_markers("xdist_group")}
        if (MODEL_FIXTURES & set(item.fixturenames) or item.get_closest_marker("smollm2")
                or "smollm2" in groups):
            item.add_marker(pytest.mark.model)


@pytest.fixture(scope="session")
def minilm():
    import attntopo as at

    return at.load_model("minilm")


@pytest.fixture(scope="session")
def smollm2():
    import attntopo as at

    return at.load_model("smollm2")


@pytest.fixture(scope="session")
def sample_text() -> str:
    return SAMPLE
