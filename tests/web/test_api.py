"""The explorer's JSON API through FastAPI's TestClient.

Validation, limits and errors run without a model (fast); analyses on the packaged MiniLM
(and one on SmolLM2) are marked slow.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from attntopo.distances import DISTANCES
from attntopo.errors import InvalidInputError

pytest.importorskip(
    "fastapi", reason="the explorer needs the web extra: pip install 'attntopo[web]'"
)
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx: pip install 'attntopo[web]'")

import attntopo.web.api as web_api  # noqa: E402
from _tolerances import MINILM  # noqa: E402
from web_helpers import BASE, TEXT_A, TEXT_B, assert_clean_error, assert_serving, make_client  # noqa: E402


# ------------------------------------------------------------------ no model needed
def test_health(client):
    r = client.get("/api/health")
    assert r.status_code == 200
    d = r.json()
    assert d["status"] == "ok" and d["max_chars"] == 2000 and d["max_concurrent"] == 2
    assert r.headers["cache-control"] == "no-store"


def test_models_lists_packaged_aliases(client):
    from attntopo.models import packaged_aliases

    d = client.get("/api/models").json()
    names = [m["name"] for m in d["models"]]
    assert d["default"] == "minilm" == names[0]
    assert set(packaged_aliases()) <= set(names)
    assert d["metrics"] == list(DISTANCES)  # every registered distance, in its order
    minilm = d["models"][0]
    assert (minilm["n_layers"], minilm["n_heads"], minilm["causal"]) == (6, 12, False)


def test_models_adds_the_server_model():
    c = make_client(model="MiniLM", models=("minilm",))
    d = c.get("/api/models").json()
    assert [m["name"] for m in d["models"]] == ["minilm"]


def test_openapi_lists_routes_and_limits():
    c = make_client(max_chars=1234)
    spec = c.get("/openapi.json").json()
    for path in ("/api/health", "/api/models", "/api/analyze", "/api/compare"):
        assert path in spec["paths"], path
    schemas = spec["components"]["schemas"]
    req = schemas["AnalyzeRequest"]["properties"]
    assert req["text"]["maxLength"] == 1234
    assert req["metric"]["enum"] == list(DISTANCES)
    assert req["maxdim"]["maximum"] == 2
    assert "ErrorResponse" in schemas
    assert "422" in spec["paths"]["/api/analyze"]["post"]["responses"]


def test_openapi_documents_every_status_and_the_layer_head_rule():
    """Every status a route can answer is in the schema (schemathesis checks answers against
    it), and "layer and head together" is part of the request schema."""
    spec = make_client().get("/openapi.json").json()
    for path, statuses in (
        ("/api/health", {"200", "400", "408", "413", "500"}),
        ("/api/models", {"200", "400", "408", "413", "500", "503", "504"}),
        ("/api/analyze", {"200", "400", "408", "413", "422", "500", "503", "504"}),
        ("/api/compare", {"200", "400", "408", "413", "422", "500", "503", "504"}),
    ):
        op = next(iter(spec["paths"][path].values()))
        assert set(op["responses"]) == statuses, path
    rule = spec["components"]["schemas"]["AnalyzeRequest"]["anyOf"]
    assert {
        "required": ["layer", "head"],
        "properties": {"layer": {"type": "integer"}, "head": {"type": "integer"}},
    } in rule


def test_schema_says_a_text_must_not_be_blank():
    """A whitespace-only text is refused (422), and the schema says so: its pattern, read as a
    regular expression, accepts exactly the strings the server's check accepts (random fuzz
    runs sent "\\r", then "\\x1d", as schema-valid texts). It is spelled with \\uXXXX escapes,
    so engines whose \\s differ from Python's (ECMAScript, Rust) read it the same way."""
    import re

    spec = make_client().get("/openapi.json").json()["components"]["schemas"]
    patterns = {
        spec["AnalyzeRequest"]["properties"]["text"]["pattern"],
        spec["CompareRequest"]["properties"]["text_a"]["pattern"],
        spec["CompareRequest"]["properties"]["text_b"]["pattern"],
    }
    assert len(patterns) == 1
    pattern = re.compile(patterns.pop())
    assert "\\s" not in pattern.pattern.lower()  # no class whose meaning depends on the engine
    disagree = [c for c in map(chr, range(0x110000)) if bool(pattern.search(c)) != bool(c.strip())]
    assert disagree == []


def test_app_survives_a_second_lifespan():
    """Shutting the app's lifespan down leaves it usable when it starts again (it answered
    503 "shutting down" to every later request before: one TestClient context after another)."""
    from fastapi.testclient import TestClient

    from attntopo.web import Settings, create_app

    app = create_app(Settings())
    for _ in range(2):
        with TestClient(app, base_url=BASE) as c:
            r = c.get("/api/models")
            assert r.status_code == 200, r.text[:300]


def test_pages_and_assets_are_local(client):
    index = client.get("/")
    assert index.status_code == 200 and "text/html" in index.headers["content-type"]
    assert "/static/vendor/plotly.min.js" in index.text
    assert 'src="http' not in index.text and 'href="http' not in index.text
    docs = client.get("/docs")
    assert (
        docs.status_code == 200 and "/static/docs.js" in docs.text and 'src="http' not in docs.text
    )
    js = client.get("/static/vendor/plotly.min.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert len(js.content) > 1_000_000 and b"plotly" in js.content[:2000].lower()
    for asset in ("/static/app.js", "/static/app.css", "/static/docs.js", "/favicon.ico"):
        assert client.get(asset).status_code == 200, asset
    csp = index.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp
    assert index.headers["x-content-type-options"] == "nosniff"


LONG = "word " * 500  # 2500 characters


@pytest.mark.parametrize(
    "path, payload, status, words",
    [
        ("/api/analyze", {"text": ""}, 422, ("text", "empty")),
        ("/api/analyze", {"text": "   \n\t "}, 422, ("text", "empty")),
        ("/api/analyze", {"text": LONG}, 422, ("text", "too long", "2000")),
        ("/api/analyze", {"text": "hello", "metric": "cosine"}, 422, ("metric", "jensen_shannon")),
        ("/api/analyze", {"text": "hello", "maxdim": 3}, 422, ("maxdim",)),
        ("/api/analyze", {"text": "hello", "layer": 1}, 422, ("layer", "head")),
        ("/api/analyze", {"text": "hello", "layer": "one", "head": 0}, 422, ("layer",)),
        ("/api/analyze", {"text": 42}, 422, ("text", "string")),
        ("/api/analyze", {"txt": "hello"}, 422, ("missing", "text")),
        ("/api/analyze", {"text": "hello", "bogus": 1}, 422, ("unknown field", "bogus")),
        (
            "/api/analyze",
            {"text": "hello", "model": "gpt2"},
            400,
            ("gpt2", "not available", "minilm"),
        ),
        ("/api/analyze", [1, 2], 400, ("JSON object",)),
        ("/api/compare", {"text_a": "hello"}, 422, ("missing", "text_b")),
        ("/api/compare", {"text_a": "hello", "text_b": " "}, 422, ("text_b", "empty")),
        ("/api/compare", {"text_a": "a", "text_b": "b", "scale": -1}, 422, ("scale",)),
        # compare's scale was called threshold before the first release: an unknown field now
        (
            "/api/compare",
            {"text_a": "a", "text_b": "b", "threshold": 0.2},
            422,
            ("unknown field", "threshold"),
        ),
    ],
)
def test_invalid_requests_get_one_line(client, path, payload, status, words):
    assert_clean_error(client.post(path, json=payload), status, *words)
    assert_serving(client)


@pytest.mark.parametrize(
    "path, payload, field, kind",
    [
        ("/api/analyze", {"text": "hi", "drop_special": "yes"}, "drop_special", "boolean"),
        ("/api/analyze", {"text": "hi", "maxdim": True}, "maxdim", "integer"),
        ("/api/analyze", {"text": "hi", "maxdim": 1.0}, "maxdim", "integer"),
        ("/api/compare", {"text_a": "hi", "text_b": "ho", "scale": False}, "scale", "number"),
        ("/api/analyze", {"text": "hi", "auto_head": 1}, "auto_head", "boolean"),
        ("/api/analyze", {"text": "hi", "layer": "0", "head": 0}, "layer", "integer"),
    ],
)
def test_wrong_types_are_refused_not_coerced(client, path, payload, field, kind):
    """Strict request models: a value of another JSON type is a 422 naming the field (these
    were coerced to 200 before: "yes" -> true, true -> 1, 1.0 -> 1, false -> 0.0)."""
    msg = assert_clean_error(client.post(path, json=payload), 422, field, kind)
    assert msg.startswith(field)
    assert_serving(client)


def test_strict_models_accept_the_documented_types():
    from pydantic import ValidationError

    from attntopo.web import Settings

    AnalyzeRequest, CompareRequest = web_api._request_models(Settings())
    r = AnalyzeRequest.model_validate(
        {
            "text": "hi",
            "maxdim": 2,
            "drop_special": True,
            "auto_head": False,
            "layer": -1,
            "head": 0,
            "metric": "hellinger",
            "model": "minilm",
        }
    )
    assert (r.maxdim, r.drop_special, r.layer) == (2, True, -1)
    # a JSON number without a fraction is a valid number: an integer scale stays accepted
    for t in (1, 0.25, 0):
        assert CompareRequest.model_validate({"text_a": "a", "text_b": "b", "scale": t}).scale == t
    # the same bodies as JSON text (pydantic's JSON mode is strict in the same way)
    assert AnalyzeRequest.model_validate_json('{"text": "hi", "maxdim": 0}').maxdim == 0
    with pytest.raises(ValidationError):
        AnalyzeRequest.model_validate_json('{"text": "hi", "maxdim": 1.0}')


@pytest.mark.parametrize(
    "content, headers, status, words",
    [
        ('{"text": "hello",', {"content-type": "application/json"}, 400, ("malformed JSON",)),
        ("{text: hello}", {"content-type": "application/json"}, 400, ("malformed JSON",)),
        ("", {"content-type": "application/json"}, 400, ("JSON",)),
        ('{"text": "hello"}', {"content-type": "text/plain"}, 400, ("JSON object",)),
    ],
)
def test_malformed_bodies(client, content, headers, status, words):
    assert_clean_error(
        client.post("/api/analyze", content=content, headers=headers), status, *words
    )
    assert_serving(client)


def test_unknown_route_and_method(client):
    assert_clean_error(client.get("/api/nothing"), 404, "not found")
    assert_clean_error(client.get("/api/analyze"), 405, "GET")
    assert_clean_error(client.put("/api/compare", json={}), 405)


def test_foreign_host_header_is_refused():
    from fastapi.testclient import TestClient

    from attntopo.web import Settings, create_app

    app = create_app(Settings())
    assert_clean_error(TestClient(app).get("/api/health"), 400, "Host")  # Host: testserver
    assert_clean_error(TestClient(app, base_url="http://evil.example").get("/"), 400, "Host")
    assert TestClient(app, base_url="http://localhost:8000").get("/api/health").status_code == 200
    # bound to every interface, any Host is accepted (the server warns about that binding)
    assert TestClient(create_app(Settings(host="0.0.0.0"))).get("/api/health").status_code == 200


def test_oversized_body_is_refused():
    c = make_client(max_chars=10)
    r = c.post(
        "/api/analyze",
        content=b'{"text": "' + b"x" * 100_000 + b'"}',
        headers={"content-type": "application/json"},
    )
    assert_clean_error(r, 413, "too large")
    assert_serving(c)


def test_settings_are_checked():
    from attntopo.web import Settings

    for bad in (
        {"max_chars": 0},
        {"max_concurrent": 0},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"port": 70000},
        {"model": " "},
    ):
        with pytest.raises(InvalidInputError):
            Settings(**bad)


# ----------------------------------------------------- limits, with a fake slow model run
def _slow(seconds: float, exc: Exception | None = None):
    calls = []

    def run(state, name, req):
        calls.append(getattr(req, "text", None))
        time.sleep(seconds)
        raise exc or InvalidInputError("fake analysis finished")

    run.calls = calls
    return run


async def _concurrently(app, first: dict, second: dict, delay: float = 0.3):
    import httpx

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, timeout=30) as c:
        t1 = asyncio.create_task(c.post("/api/analyze", json=first))
        await asyncio.sleep(delay)
        r2 = await c.post("/api/analyze", json=second)
        health = await c.get("/api/health")
        r1 = await t1
        return r1, r2, health


def test_too_many_concurrent_analyses_get_503(monkeypatch):
    from attntopo.web import Settings, create_app

    fake = _slow(1.0)
    monkeypatch.setattr(web_api, "_run_analysis", fake)
    app = create_app(Settings(max_concurrent=1))
    r1, r2, health = asyncio.run(_concurrently(app, {"text": "one"}, {"text": "two"}))
    assert_clean_error(r1, 400, "fake analysis finished")
    msg = assert_clean_error(r2, 503, "busy")
    assert "--max-concurrent" in msg and r2.headers["retry-after"] == "2"
    assert health.status_code == 200 and health.json()["running"] == 1
    assert fake.calls == ["one"]
    # the slot is free again: the next request runs
    c = make_client(max_concurrent=1)
    assert_clean_error(
        c.post("/api/analyze", json={"text": "three"}), 400, "fake analysis finished"
    )


def test_slow_analysis_gets_504_and_the_server_keeps_serving(monkeypatch):
    from fastapi.testclient import TestClient

    from attntopo.web import Settings, create_app

    fake = _slow(1.5)
    monkeypatch.setattr(web_api, "_run_analysis", fake)
    app = create_app(Settings(timeout=0.3, max_concurrent=1))
    state = app.state.attntopo
    c = TestClient(app, base_url=BASE)
    t0 = time.perf_counter()
    msg = assert_clean_error(c.post("/api/analyze", json={"text": "slow"}), 504, "0.3 s", "timeout")
    assert time.perf_counter() - t0 < 1.2, "the 504 must not wait for the computation"
    assert "retry" in msg.lower()
    assert_serving(c)
    # the abandoned computation keeps its slot until it really ends, then frees it
    assert state.slots.running == 1
    assert_clean_error(c.post("/api/analyze", json={"text": "other"}), 503, "busy")
    deadline = time.monotonic() + 5
    while state.slots.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state.slots.running == 0


def test_unexpected_errors_are_a_generic_500(monkeypatch):
    fake = _slow(0.0, RuntimeError("secret internal detail at /home/user/x.py"))
    monkeypatch.setattr(web_api, "_run_analysis", fake)
    c = make_client()
    msg = assert_clean_error(c.post("/api/analyze", json={"text": "boom"}), 500, "internal error")
    assert "secret" not in msg and "RuntimeError" not in msg
    assert_serving(c)


def test_errors_are_not_cached(monkeypatch):
    fake = _slow(0.0)
    monkeypatch.setattr(web_api, "_run_analysis", fake)
    c = make_client()
    for _ in range(2):
        assert_clean_error(c.post("/api/analyze", json={"text": "again"}), 400)
    assert fake.calls == ["again", "again"]


def test_cache_computes_once_under_concurrency():
    from attntopo.web.cache import LRUCache

    cache = LRUCache(2)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.2)
        return object()

    out = []
    threads = [
        threading.Thread(target=lambda: out.append(cache.get_or_compute("k", compute)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(v) for v, _ in out}) == 1
    assert sorted(c for _, c in out) == [False, True, True, True]
    cache.put("a", 1)
    cache.put("b", 2)  # "k" is the least recently used: dropped
    assert "k" not in cache and len(cache) == 2


def test_triangles_upto_is_complete_below_its_scale():
    from attntopo.topology.complex import complex_at

    rng = np.random.default_rng(0)
    X = rng.random((30, 3))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    full = complex_at(D, np.inf, max_simplex_dim=2)
    births = np.sort(full.birth_arrays[1])
    tris, b, complete = web_api.triangles_upto(D, 500)
    assert len(b) <= 500 and np.all(np.diff(b) >= 0)
    assert np.isfinite(complete)
    assert len(b) == int((births <= complete).sum())
    assert np.all(b <= complete)
    tris_all, b_all, c_all = web_api.triangles_upto(D, 10**6)
    assert c_all == np.inf and len(b_all) == len(births)
    assert web_api.triangles_upto(D[:2, :2], 10)[0].shape == (0, 3)


# ------------------------------------------------------------------- real models
@pytest.mark.forward_compare
@pytest.mark.model
@pytest.mark.slow
def test_analyze_one_head_matches_the_library(client):
    import attntopo as at

    r = client.post("/api/analyze", json={"text": TEXT_A, "layer": 1, "head": 2})
    assert r.status_code == 200, r.text[:300]
    d = r.json()
    assert d["kind"] == "analysis" and d["selected"] == [1, 2]
    assert d["model"]["name"] == "minilm" and d["model"]["n_layers"] == 6
    assert d["layers"] == list(range(6)) and d["heads"] == list(range(12))
    assert len(d["summary"]["max_persistence_h1"]) == 72
    h = d["head"]
    n = d["text"]["n_tokens"]
    assert len(d["text"]["labels"]) == n == h["n_tokens"]
    D = np.array(h["distances"])
    assert D.shape == (n, n) and np.allclose(D, D.T) and np.all(np.diag(D) == 0)
    ref = at.analyze(TEXT_A, "minilm", layers=1, heads=2)
    # another computation than the library's (a server thread), sent with 6 decimals
    assert np.allclose(D, ref.distance_matrix(1, 2), atol=MINILM.distance_atol + 0.5e-6, rtol=0)
    assert np.allclose(
        np.array(h["attention"]),
        ref.attention_matrix(1, 2),
        atol=MINILM.weights_atol + 0.5e-6,
        rtol=0,
    )
    assert len(h["diagram"]["h0"]) == n and len(h["diagram"]["h1"]) == len(ref.diagram(1, 2)[1])
    assert np.array(h["layout"]).shape == (n, 2)
    births = [t[3] for t in h["triangles"]]
    assert births == sorted(births) and h["triangles_complete_to"] == "inf"
    assert len(births) == n * (n - 1) * (n - 2) // 6
    assert 0 < h["scale"] <= h["max_distance"] <= 1


@pytest.mark.model
@pytest.mark.slow
def test_summary_without_a_head_and_the_auto_head(client):
    d = client.post("/api/analyze", json={"text": TEXT_A}).json()
    assert d["head"] is None and d["selected"] is None
    d2 = client.post("/api/analyze", json={"text": TEXT_A, "auto_head": True}).json()
    col = d2["summary"]["max_persistence_h1"]
    best = int(np.argmax(col))
    assert d2["selected"] == [d2["summary"]["layer"][best], d2["summary"]["head"][best]]
    d3 = client.post("/api/analyze", json={"text": TEXT_A, "layer": -1, "head": -1}).json()
    assert d3["selected"] == [5, 11]


@pytest.mark.model
@pytest.mark.slow
def test_head_changes_reuse_the_model_run(monkeypatch):
    calls = []
    real = web_api._run_analysis

    def counting(state, name, req):
        calls.append(req.text)
        return real(state, name, req)

    monkeypatch.setattr(web_api, "_run_analysis", counting)
    c = make_client()
    text = "Attention heads see the same sentence differently"
    first = c.post("/api/analyze", json={"text": text, "layer": 0, "head": 0}).json()
    second = c.post("/api/analyze", json={"text": text, "layer": 3, "head": 7}).json()
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["selected"] == [3, 7]
    assert calls == [text]
    c.post("/api/analyze", json={"text": text, "metric": "hellinger", "layer": 3, "head": 7})
    assert len(calls) == 2  # another metric is another analysis


@pytest.mark.model
@pytest.mark.slow
def test_bad_layer_and_too_many_tokens_are_400(client):
    assert_clean_error(
        client.post("/api/analyze", json={"text": TEXT_A, "layer": 6, "head": 0}),
        400,
        "layer 6",
        "6 layers",
    )
    assert_clean_error(
        client.post(
            "/api/compare", json={"text_a": TEXT_A, "text_b": TEXT_B, "layer": 0, "head": 12}
        ),
        400,
        "head 12",
        "12 heads",
    )
    big = make_client(max_chars=20_000)
    assert_clean_error(big.post("/api/analyze", json={"text": "word " * 700}), 400, "tokens", "512")
    assert_serving(big)
    r = client.post("/api/analyze", json={"text": TEXT_A, "layer": 0, "head": 0})
    assert r.status_code == 200  # still serving after the bad requests


@pytest.mark.forward_compare
@pytest.mark.model
@pytest.mark.slow
def test_compare_one_head_and_the_grid(client):
    import attntopo as at

    r = client.post(
        "/api/compare", json={"text_a": TEXT_A, "text_b": TEXT_B, "layer": 2, "head": 4}
    )
    assert r.status_code == 200, r.text[:300]
    d = r.json()
    assert d["kind"] == "comparison" and d["selected"] == [2, 4]
    keys = [s["key"] for s in d["shared_tokens"]]
    assert keys[:2] == ["information", "theory"]
    for s in d["shared_tokens"]:
        assert d["a"]["labels"][s["a"]].lower() == s["text_a"].lower()
    assert len(d["summary"]["bottleneck_h1"]) == 72 and len(d["summary_a"]["layer"]) == 72
    ref = at.compare(TEXT_A, TEXT_B, "minilm", layers=2, heads=4)
    h = d["head"]
    # a median MST edge, a bottleneck distance: from another computation than the library's
    assert h["scale"] == pytest.approx(ref.scale(2, 4), rel=0, abs=MINILM.diagram_atol)
    assert h["report"]["counts"] == {k: int(v[0, 0]) for k, v in ref.counts.items()}
    assert h["report"]["diagram_distances"]["bottleneck"] == pytest.approx(
        ref.diagram_distances["bottleneck"][0, 0].tolist(), rel=0, abs=MINILM.bottleneck_atol
    )
    assert len(h["report"]["pairs"]) == len(keys) * (len(keys) - 1) // 2
    assert np.array(h["a"]["distances"]).shape == (d["a"]["n_tokens"],) * 2
    assert np.array(h["b"]["distances"]).shape == (d["b"]["n_tokens"],) * 2


@pytest.mark.model
@pytest.mark.slow
def test_analyze_short_text_auto_head_by_h0(client):
    """Most heads of a six-token text have no H1 bar: auto_head and the page's grid use the
    longest H0 bar, and the payload says so."""
    r = client.post("/api/analyze", json={"text": "The cat sat.", "auto_head": True})
    assert r.status_code == 200, r.text[:300]
    d = r.json()
    m1 = np.asarray(d["summary"]["max_persistence_h1"], dtype=float)
    assert 2 * (m1 == 0).sum() > m1.size
    assert d["ranking"] == {"stat": "max_persistence", "dim": 0, "column": "max_persistence_h0"}
    m0 = np.asarray(d["summary"]["max_persistence_h0"], dtype=float)
    best = int(np.argmax(m0))
    assert d["selected"] == [d["summary"]["layer"][best], d["summary"]["head"][best]]


@pytest.mark.model
@pytest.mark.slow
def test_compare_short_texts_ranking_dimension_and_ties(client):
    """Most heads' H1 distance is exactly 0 on two six-token texts: the payload ranks by H0,
    says so, and marks ties; its own summary says the same."""
    r = client.post("/api/compare", json={"text_a": "The cat sat.", "text_b": "A cat sat."})
    assert r.status_code == 200, r.text[:300]
    d = r.json()
    h1 = np.asarray(d["summary"]["bottleneck_h1"], dtype=float)
    assert 2 * (h1 == 0).sum() > h1.size
    assert d["ranking"]["dim"] == 0 and d["ranking"]["column"] == "bottleneck_h0"
    h0 = np.asarray(d["summary"]["bottleneck_h0"], dtype=float)
    assert [e[2] for e in d["most_similar_heads"]] == sorted(h0)[:5]
    for layer, head, value, rank, n_tied in d["most_similar_heads"]:
        assert rank == 1 + int((h0 < value).sum()) and n_tied == int((h0 == value).sum())
    assert set(d["summary"]["rank_by"]) == {"bottleneck_h0"}


@pytest.mark.slow
@pytest.mark.smollm2
@pytest.mark.xdist_group("smollm2")
def test_compare_on_smollm2(client):
    r = client.post(
        "/api/compare",
        json={
            "text_a": "The cat sat on the mat",
            "text_b": "A cat sat on a chair",
            "model": "SmolLM2",
            "auto_head": True,
        },
    )
    assert r.status_code == 200, r.text[:300]
    d = r.json()
    assert d["model"]["name"] == "smollm2" and d["model"]["causal"] is True
    assert len(d["layers"]) == 30 and len(d["heads"]) == 9
    D = np.array(d["head"]["a"]["distances"])
    assert D.shape == (d["a"]["n_tokens"],) * 2


@pytest.mark.parametrize("host", ["", "  ", "[]", None])
def test_an_empty_host_is_refused(host):
    from attntopo.web import Settings

    # "" would make uvicorn listen on every interface, IPv4 and IPv6
    with pytest.raises(InvalidInputError, match="host must be an address such as '127.0.0.1'"):
        Settings(host=host)
