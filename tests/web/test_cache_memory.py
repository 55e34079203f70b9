"""The explorer's result cache is bounded in bytes (issue 33, item 5): it counted entries, and
one 512-token /api/compare holds about 455 MB (measured below the issue's 558–568 MB of RSS),
against the ~70 MB docs/web.md promised, so 16 entries could hold about 10 GB.  Entries are
measured when stored (:func:`deep_sizeof`, checked against tracemalloc) and the least recently
used dropped while the total is over ``--cache-memory`` (default 1GB)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attntopo.web.cache import LRUCache, deep_sizeof


class _Holder:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Slotted:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


def _made(build):
    """``(object, bytes tracemalloc saw allocated while building it and still held)``."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        obj = build()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return obj, after - before


@pytest.mark.parametrize(
    "build",
    [
        lambda: np.ones((300, 400)),
        lambda: {
            "a": np.ones((6, 12, 64, 64), np.float32),
            "b": [np.arange(10_000) for _ in range(5)],
        },
        lambda: _Holder(
            w=np.ones((2000, 500)),
            names=[f"token {i}" for i in range(2000)],
            nested={"d": _Slotted(np.zeros(50_000), (1.5, "x" * 10_000))},
        ),
        lambda: [{"births": np.full(300, i / 7), "k": i} for i in range(200)],
    ],
    ids=["array", "dict-of-arrays", "object-graph", "many-small"],
)
def test_deep_sizeof_agrees_with_tracemalloc(build):
    obj, allocated = _made(build)
    assert deep_sizeof(obj) == pytest.approx(allocated, rel=0.05, abs=4096)


def test_views_and_shared_arrays_count_once():
    big = np.ones((1000, 1000))
    alone = deep_sizeof(big)
    assert deep_sizeof({"a": big, "b": big, "v": big[10:20], "t": big.T}) < alone + 2000
    assert deep_sizeof(big[:10]) >= big.nbytes  # a small view keeps the whole array alive


_ops = st.lists(
    st.tuples(
        st.sampled_from("abcdefgh"), st.integers(0, 300_000), st.sampled_from(["put", "get"])
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_ops, st.integers(50_000, 600_000), st.integers(1, 8))
def test_the_cache_never_holds_more_than_its_bound(ops, max_bytes, maxsize):
    cache = LRUCache(maxsize, max_bytes)
    for key, n, op in ops:
        if op == "get":
            cache.get(key)
            continue
        value = np.zeros(n, np.uint8)
        cache.put(key, value)
        held = [cache.get(k) for k in list(cache._data)]
        assert cache.nbytes == sum(deep_sizeof(v) for v in held) <= max_bytes
        assert len(cache) <= maxsize
        # the new value is kept exactly when it fits on its own; a stale value never stays
        assert (key in cache) == (deep_sizeof(value) <= max_bytes)
        if key in cache:
            assert cache.get(key) is value
    stats = cache.stats()
    assert stats["bytes"] == cache.nbytes and stats["max_bytes"] == max_bytes


def test_least_recently_used_go_first():
    cache = LRUCache(10, 3 * deep_sizeof(np.zeros(1000, np.uint8)))
    for k in "abc":
        cache.put(k, np.zeros(1000, np.uint8))
    cache.get("a")
    cache.put("d", np.zeros(1000, np.uint8))  # b is the least recently used
    assert sorted(cache._data) == ["a", "c", "d"]
    cache.put("e", np.zeros(2000, np.uint8))  # needs the room of two: c and a go
    assert sorted(cache._data) == ["d", "e"]
    cache.put("f", np.zeros(10_000, np.uint8))  # larger than the bound: not kept, nothing dropped
    assert sorted(cache._data) == ["d", "e"]


def test_settings_read_sizes_in_one_line():
    pytest.importorskip("fastapi", reason="the explorer needs the web extra")
    from attntopo.errors import InvalidInputError
    from attntopo.web import Settings

    assert Settings().cache_memory == 10**9
    assert Settings(cache_memory="512MB").cache_memory == 512 * 10**6
    with pytest.raises(
        InvalidInputError,
        match="^cache_memory must be a size such as 512MB, 2GB or 1.5GiB, got 'big'$",
    ):
        Settings(cache_memory="big")


@pytest.mark.model
@pytest.mark.slow
def test_the_server_keeps_its_results_within_cache_memory():
    """Real MiniLM analyses through the API, a bound that holds about two of them: after each
    request the cache's measured bytes are within the bound (/api/health says so too), each
    entry's measure covers its attention and distance arrays, and a result larger than the
    bound is answered but not kept."""
    pytest.importorskip("fastapi", reason="the explorer needs the web extra")
    from web_helpers import make_client

    words = "attention topology persistence homology token head layer distance".split()
    texts = [" ".join(words[(i + k) % len(words)] for k in range(90)) for i in range(4)]
    c = make_client(cache_memory="25MB")  # each result: about 9.4 MB
    state = c.app.state.attntopo
    for i, text in enumerate(texts):
        r = c.post("/api/analyze", json={"text": text})
        assert r.status_code == 200, r.text
        health = c.get("/api/health").json()["cache"]
        assert state.cache.nbytes == health["bytes"] <= health["max_bytes"] == 25 * 10**6
        assert health["size"] == min(i + 1, 2), health
    for key in list(state.cache._data):
        an = state.cache.get(key)
        arrays = an.attention.weights.nbytes + an.distances.nbytes
        assert arrays <= deep_sizeof(an) <= 1.1 * arrays + 2 * 10**6
    # the most recent two are kept; the first is computed again
    assert c.post("/api/analyze", json={"text": texts[3]}).json()["cached"] is True
    assert c.post("/api/analyze", json={"text": texts[0]}).json()["cached"] is False
    small = make_client(cache_memory="1MB")
    for _ in range(2):
        r = small.post("/api/analyze", json={"text": texts[0]})
        assert r.status_code == 200 and r.json()["cached"] is False
    assert small.get("/api/health").json()["cache"]["size"] == 0


def test_serve_refuses_a_bad_cache_memory_in_one_line():
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "attntopo", "serve", "--cache-memory", "lots"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
    assert r.stderr.strip() == (
        "error: --cache-memory must be a size such as 512MB, 2GB or 1.5GiB, got 'lots'"
    )
