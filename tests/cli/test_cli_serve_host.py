"""``attntopo serve --host ""`` as a subprocess: an empty address (``--host "$HOST"`` with HOST
unset) made uvicorn listen on every interface, IPv4 and IPv6, wider than 0.0.0.0, for a server
without authentication; it is refused in one line before anything listens."""

from __future__ import annotations

import pytest

from _cli import assert_one_line_error, run

pytest.importorskip("uvicorn", reason="the explorer needs the web extra")


@pytest.mark.parametrize("host", ["", " ", "[]"])
def test_an_empty_host_is_one_line_and_listens_nowhere(host):
    r = run("serve", "--host", host, "--port", "0", timeout=60)
    assert_one_line_error(r, f"--host {host!r} is empty", "127.0.0.1", "0.0.0.0")
