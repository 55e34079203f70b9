"""Helpers of the explorer tests (imported by the test modules and conftest.py)."""

from __future__ import annotations

BASE = "http://127.0.0.1"  # the explorer accepts loopback Host headers only (DNS-rebinding guard)
TEXT_A = "Quantum information theory allows us to study attention using entanglement"
TEXT_B = "Classical information theory studies entropy and communication"


def make_client(**settings):
    """A TestClient of a fresh explorer app with these :class:`~attntopo.web.Settings`."""
    from fastapi.testclient import TestClient

    from attntopo.web import Settings, create_app

    return TestClient(create_app(Settings(**settings)), base_url=BASE)


def assert_clean_error(resp, status, *words: str) -> str:
    """A JSON ``{"error": "one line"}`` with that status, no traceback; returns the message."""
    statuses = (status,) if isinstance(status, int) else status
    assert resp.status_code in statuses, (resp.status_code, resp.text[:300])
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert set(body) == {"error"}, body
    msg = body["error"]
    assert isinstance(msg, str) and msg.strip()
    assert "\n" not in msg
    assert len(msg) <= 400
    text = resp.text
    for bad in ("Traceback", 'File "', "site-packages", "pydantic_core", "line "):
        assert bad not in text, f"{bad!r} leaked into {text[:300]}"
    for w in words:
        assert w.lower() in msg.lower(), (w, msg)
    return msg


def assert_serving(client) -> None:
    r = client.get("/api/health")
    assert r.status_code == 200 and r.json()["status"] == "ok"
