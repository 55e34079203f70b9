"""Shared fixtures (the real packaged models, loaded once per test process) and the
automatic ``model`` marker."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _share_the_cores() -> None:
    """Under pytest-xdist, give each worker its share of the cores for torch's and the BLAS's
    intra-op threads (and the CLI subprocesses it starts, through the environment).

    Two workers on two cores, each with torch's default of one thread per core, oversubscribe
    the machine 2x, and OpenMP's barriers then stall: measured on a 2-core machine, a hardmax
    training 4x slower, a context diagnostic 30x (tests/README.md).  An explicit
    OMP_NUM_THREADS (.ci/run's second kernel pass sets 2) is left as it is.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers < 1 or "OMP_NUM_THREADS" in os.environ:
        return
    n = str(max(1, (os.cpu_count() or 1) // workers))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, n)
    import sys

    if "torch" in sys.modules:  # already imported (a plugin): set it there too
        sys.modules["torch"].set_num_threads(int(n))


_share_the_cores()

import pytest  # noqa: E402


def _hypothesis_profile() -> None:
    """Hypothesis draws new examples in every run on a developer's machine (where the
    property tests found real bugs: a subnormal division, an asymmetric JS recomputation, a
    table cut next to a wide character), and the same examples in every ``make test`` and CI
    run (``ATTNTOPO_HYPOTHESIS=ci``, which the Makefile sets, or ``CI`` set): a submission
    lands or not on what it changed, never on the draw, nor on the machine's load (no
    deadline, no timing health check).  A counterexample found locally is kept in its test as
    an ``@example``, which every profile runs first (tests/README.md, "Property tests")."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # pragma: no cover - hypothesis is in the test extra
        return
    # dev's parent is hypothesis's own "default" profile, never settings.default: hypothesis
    # loads its built-in "ci" profile (derandomized) at import when it sees a CI variable, and
    # a profile without a parent inherits whatever is loaded (CI's dev then drew nothing new)
    settings.register_profile("dev", parent=settings.get_profile("default"), print_blob=True)
    # derandomize=True implies database=None (hypothesis refuses both): the stored examples
    # are the tests' own @example decorators
    settings.register_profile(
        "ci",
        derandomize=True,
        database=None,
        print_blob=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    chosen = os.environ.get("ATTNTOPO_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")
    settings.load_profile(chosen)


_hypothesis_profile()

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
        groups = {
            m.args[0] if m.args else m.kwargs.get("name") for m in item.iter_markers("xdist_group")
        }
        if (
            MODEL_FIXTURES & set(item.fixturenames)
            or item.get_closest_marker("smollm2")
            or "smollm2" in groups
        ):
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


@pytest.fixture
def distance_shapes(monkeypatch) -> list:
    """The shapes of the distance matrices computed during the test (every call of the
    distances' common driver, ``attntopo.distances._rows._distances``), in order: a test of a
    path that needs some rows only checks that no full ``n × n`` matrix was made."""
    from attntopo.distances import _rows

    seen: list = []
    real = _rows._distances

    def spy(x, *args, **kwargs):
        out = real(x, *args, **kwargs)
        seen.append(tuple(out.shape))
        return out

    monkeypatch.setattr(_rows, "_distances", spy)
    return seen
