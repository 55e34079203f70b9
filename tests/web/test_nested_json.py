"""Deeply nested JSON gets the explorer's own error line (issue 33, item 8: it got FastAPI's
"There was an error parsing the body")."""

from __future__ import annotations

import pytest

WEB = "the explorer needs the web extra: pip install 'attntopo[web]'"
pytest.importorskip("fastapi", reason=WEB)
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx: pip install 'attntopo[web]'")

from web_helpers import assert_clean_error, assert_serving  # noqa: E402


@pytest.mark.parametrize("path", ["/api/analyze", "/api/compare"])
@pytest.mark.parametrize(
    "body",
    [
        "[" * 5000 + "]" * 5000,
        '{"text": "a", "layer": ' + '{"x": ' * 4000 + "1" + "}" * 4000 + "}",
        '{"text": ' + "[" * 3000 + '"a"' + "]" * 3000 + "}",
    ],
    ids=["arrays", "objects", "in-a-field"],
)
def test_deeply_nested_json_is_one_line_in_the_error_shape(client, path, body):
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    msg = assert_clean_error(r, 400, "nests JSON arrays or objects too deeply", "/docs")
    assert "There was an error parsing the body" not in msg
    assert msg == (
        "the request body nests JSON arrays or objects too deeply to be read: send one "
        "JSON object of the request's fields (see /docs)"
    )
    assert_serving(client)


def test_json_nested_within_python_limits_is_an_ordinary_field_error(client):
    r = client.post("/api/analyze", json={"text": "a", "layer": [[[[1]]]]})
    assert_clean_error(r, 422, "layer")
