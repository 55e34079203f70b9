"""Fixtures of the explorer tests (helpers live in web_helpers.py).

Every test module skips itself (with the reason) when the web extra is not installed.
"""

from __future__ import annotations

import pytest

from web_helpers import make_client


@pytest.fixture(scope="module")
def client():
    """A TestClient of an explorer with the default settings (one per test module)."""
    return make_client()
