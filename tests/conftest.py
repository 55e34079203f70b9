"""Shared fixtures: the real packaged models, loaded once per test process."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

SAMPLE = "Quantum information theory allows us to study attention using entanglement"


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
