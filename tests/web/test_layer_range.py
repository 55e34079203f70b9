"""A layer or head out of the model's range is refused by /api/analyze and /api/compare with
one line, before the model loads or runs (issue 33, item 8): the sizes come from the model's
configuration, as for the command line's --layer/--head (attntopo.models.check_selection).

Evidence that nothing ran: the app's model-run functions count their calls, /api/health lists
no loaded model and its cache saw no lookup; with a folder holding MiniLM's config.json alone
(no weights), a request in range reaches the load and fails there, one out of range never does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip(
    "fastapi", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx: pip install 'attntopo[web]'")

import attntopo.web.api as web_api  # noqa: E402
from attntopo.models import resolve_spec  # noqa: E402
from web_helpers import TEXT_A, TEXT_B, assert_clean_error, make_client  # noqa: E402

MINILM_LAYERS = "minilm has 6 layers, valid are 0..5 (or -6..-1)"
MINILM_HEADS = "minilm has 12 heads, valid are 0..11 (or -12..-1)"

# (layer, head) out of range and the one line each gets on MiniLM (6 layers x 12 heads)
BAD = [
    (6, 0, f"layer 6 is out of range: {MINILM_LAYERS}"),
    (-7, 0, f"layer -7 is out of range: {MINILM_LAYERS}"),
    (4096, 3, f"layer 4096 is out of range: {MINILM_LAYERS}"),
    (0, 12, f"head 12 is out of range: {MINILM_HEADS}"),
    (-1, -13, f"head -13 is out of range: {MINILM_HEADS}"),
]


def _body(route: str, layer: int, head: int, **more) -> dict:
    texts = {"text": TEXT_A} if route == "/api/analyze" else {"text_a": TEXT_A, "text_b": TEXT_B}
    return {**texts, "layer": layer, "head": head, **more}


@pytest.fixture
def runs(monkeypatch) -> list:
    """The model runs the app starts (each route's run function, counted)."""
    calls: list = []
    for fn in ("_run_analysis", "_run_comparison"):
        real = getattr(web_api, fn)

        def counting(state, name, req, real=real, fn=fn):
            calls.append(fn)
            return real(state, name, req)

        monkeypatch.setattr(web_api, fn, counting)
    return calls


@pytest.mark.parametrize("route", ["/api/analyze", "/api/compare"])
@pytest.mark.parametrize("layer, head, line", BAD)
def test_out_of_range_is_one_line_before_the_model_runs(route, layer, head, line, runs):
    c = make_client()
    r = c.post(route, json=_body(route, layer, head))
    assert assert_clean_error(r, 400) == line
    assert runs == []
    health = c.get("/api/health").json()
    assert health["loaded_models"] == []  # not even loaded
    assert (health["cache"]["hits"], health["cache"]["misses"], health["cache"]["size"]) == (
        0,
        0,
        0,
    )


@pytest.mark.smollm2
def test_the_requested_models_range_is_the_one_checked(runs):
    """``"model": "smollm2"`` is checked against SmolLM2's 30 layers x 9 heads (read from the
    GGUF file's header), not against the server's default model."""
    c = make_client()
    r = c.post("/api/analyze", json=_body("/api/analyze", 6, 9, model="smollm2"))
    assert assert_clean_error(r, 400) == (
        "head 9 is out of range: smollm2 has 9 heads, valid are 0..8 (or -9..-1)"
    )
    r = c.post("/api/compare", json=_body("/api/compare", 30, 0, model="SmolLM2"))
    assert assert_clean_error(r, 400) == (
        "layer 30 is out of range: smollm2 has 30 layers, valid are 0..29 (or -30..-1)"
    )
    assert runs == [] and c.get("/api/health").json()["loaded_models"] == []


@pytest.fixture(scope="module")
def config_only(tmp_path_factory) -> Path:
    """A model folder with MiniLM's config.json and nothing else: it cannot load."""
    d = tmp_path_factory.mktemp("config_only")
    shutil.copy(Path(resolve_spec("minilm").path) / "config.json", d / "config.json")
    return d


@pytest.mark.parametrize("route", ["/api/analyze", "/api/compare"])
def test_a_model_without_weights_is_checked_from_its_configuration(route, config_only, runs):
    c = make_client(model=str(config_only))
    r = c.post(route, json=_body(route, 0, -13))
    assert assert_clean_error(r, 400) == (
        f"head -13 is out of range: {config_only} has 12 heads, valid are 0..11 (or -12..-1)"
    )
    assert runs == []
    # in range: the request reaches the model run, whose load fails (no weights); the
    # server stays up and answers its own error line
    r = c.post(route, json=_body(route, 5, -12))
    assert r.status_code >= 400 and set(r.json()) == {"error"}
    assert "out of range" not in r.json()["error"]
    assert runs == ["_run_analysis" if route == "/api/analyze" else "_run_comparison"]
    assert c.get("/api/health").json()["status"] == "ok"


def test_a_loaded_models_own_sizes_are_checked(runs):
    """A model the server has loaded is checked against the sizes it reported when loaded
    (what covers a model whose configuration gives none, such as a hub id not in the cache):
    here sizes set by hand, so that they differ from MiniLM's configuration."""
    c = make_client()
    c.app.state.attntopo.loaded["minilm"] = {"n_layers": 2, "n_heads": 3}
    r = c.post("/api/analyze", json=_body("/api/analyze", 2, 0))
    assert assert_clean_error(r, 400) == (
        "layer 2 is out of range: minilm has 2 layers, valid are 0..1 (or -2..-1)"
    )
    assert runs == []
