"""Atomic writes and the result folder format."""

from __future__ import annotations

import numpy as np
import pytest

from attntopo.errors import InvalidInputError, ResultFormatError
from attntopo.io import atomic_write_text, load_payload, save_payload


def test_payload_roundtrip(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.array([np.inf, -1.0])}
    meta = {"kind": "test", "x": float("inf"), "y": [1, 2]}
    save_payload(tmp_path / "r", meta, arrays)
    m, a = load_payload(tmp_path / "r")
    assert m["kind"] == "test" and m["x"] == "inf" and m["format_version"] == 1
    np.testing.assert_array_equal(a["a"], arrays["a"])
    np.testing.assert_array_equal(a["b"], arrays["b"])


def test_refuses_foreign_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(InvalidInputError, match="not empty"):
        save_payload(tmp_path / "mine", {"kind": "t"}, {})
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(ValueError):
        save_payload(tmp_path / "r", {"kind": "t"}, {"bad": np.array([object()], dtype=object)})
    assert list(tmp_path.iterdir()) == []


def test_overwrite_flag(tmp_path):
    save_payload(tmp_path / "r", {"kind": "t"}, {"a": np.zeros(1)})
    with pytest.raises(InvalidInputError, match="overwrite"):
        save_payload(tmp_path / "r", {"kind": "t"}, {"a": np.ones(1)}, overwrite=False)
    np.testing.assert_array_equal(load_payload(tmp_path / "r")[1]["a"], np.zeros(1))


def test_corrupt_arrays(tmp_path):
    save_payload(tmp_path / "r", {"kind": "t"}, {"a": np.zeros(1)})
    (tmp_path / "r" / "arrays.npz").write_bytes(b"garbage")
    with pytest.raises(ResultFormatError, match="corrupt"):
        load_payload(tmp_path / "r")


def test_atomic_text(tmp_path):
    p = atomic_write_text(tmp_path / "sub" / "f.txt", "hello")
    assert p.read_text() == "hello"
    assert [x.name for x in (tmp_path / "sub").iterdir()] == ["f.txt"]


def test_permissions_follow_umask(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        save_payload(tmp_path / "r", {"kind": "t"}, {"a": np.zeros(1)})
        p = atomic_write_text(tmp_path / "f.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "r" / "attntopo.json").stat().st_mode) == 0o644
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_load_payload_rejects_non_path():
    with pytest.raises(ResultFormatError, match="path is expected"):
        load_payload(None)
