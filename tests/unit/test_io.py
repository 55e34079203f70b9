"""Atomic writes and the result folder format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attntopo.errors import InvalidInputError, ResultFormatError
from attntopo.io import FORMAT_VERSION, atomic_write_text, load_payload, save_payload


def test_payload_roundtrip(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.array([np.inf, -1.0])}
    meta = {"kind": "test", "x": float("inf"), "y": [1, 2]}
    save_payload(tmp_path / "r", meta, arrays)
    m, a = load_payload(tmp_path / "r")
    assert m["kind"] == "test" and m["x"] == "inf" and m["format_version"] == FORMAT_VERSION
    np.testing.assert_array_equal(a["a"], arrays["a"])
    np.testing.assert_array_equal(a["b"], arrays["b"])


def test_refuses_foreign_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(InvalidInputError, match="not empty"):
        save_payload(tmp_path / "mine", {"kind": "t"}, {})
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_the_current_folder_is_never_replaced(tmp_path, monkeypatch):
    """A new result replaces an empty folder in one rename; the current folder (``--out .``
    run in an empty folder) is refused instead, left as it was (the same inode: a shell's
    working folder); a result already there is updated in place, and any other empty folder
    still takes a new result."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    inode = here.stat().st_ino
    for path in (".", here, "../here"):
        with pytest.raises(InvalidInputError) as e:
            save_payload(path, {"kind": "t"}, {"a": np.zeros(1)})
        assert str(e.value) == (
            f"output folder {str(path)!r} is the current folder, which saving would replace: "
            "give a new folder's name (e.g. out/)"
        )
    assert here.stat().st_ino == inode and list(here.iterdir()) == []
    assert Path.cwd() == here
    save_payload("out", {"kind": "t"}, {"a": np.zeros(1)})  # a new folder below it
    (here / "empty").mkdir()
    save_payload(here / "empty", {"kind": "t"}, {"a": np.ones(1)})  # not the current folder
    np.testing.assert_array_equal(load_payload("empty")[1]["a"], np.ones(1))
    monkeypatch.chdir(here / "out")  # a result as the current folder: written in place
    inode = Path.cwd().stat().st_ino
    save_payload(".", {"kind": "t"}, {"a": np.full(1, 2.0)})
    assert Path.cwd().stat().st_ino == inode
    np.testing.assert_array_equal(load_payload(".")[1]["a"], np.full(1, 2.0))


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
    next((tmp_path / "r").glob("arrays-*.npz")).write_bytes(b"garbage")
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


def _tree(folder):
    """Every file under ``folder`` as a sorted list of relative POSIX paths."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())


def test_layout_names_content(tmp_path):
    import hashlib
    import json

    save_payload(
        tmp_path / "r", {"kind": "t"}, {"a": np.arange(3)}, extra_files={"figures/x.png": b"png"}
    )
    meta = json.loads((tmp_path / "r" / "attntopo.json").read_text())
    name = meta["storage"]["arrays"]
    assert _tree(tmp_path / "r") == sorted(["attntopo.json", name, "figures/x.png"])
    assert (
        name
        == f"arrays-{hashlib.sha256((tmp_path / 'r' / name).read_bytes()).hexdigest()[:16]}.npz"
    )
    assert meta["storage"]["extra_files"] == {"figures/x.png": hashlib.sha256(b"png").hexdigest()}
    assert "storage" not in load_payload(tmp_path / "r")[0]
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_overwrite_leaves_exactly_the_new_result(tmp_path):
    r = tmp_path / "r"
    save_payload(
        r,
        {"kind": "t", "v": 1},
        {"a": np.zeros(2)},
        extra_files={"figures/a.png": b"1", "b.txt": b"1"},
    )
    (r / "figures" / "notes.txt").write_text("overwrite replaces the folder, as format 1 did")
    save_payload(
        r,
        {"kind": "t", "v": 2},
        {"b": np.ones(3)},
        extra_files={"figures/a.png": b"2", "c/d.txt": b"2"},
    )
    meta, arrays = load_payload(r)
    assert meta["v"] == 2 and list(arrays) == ["b"]
    arrays_files = [p.name for p in r.glob("arrays-*.npz")]
    assert len(arrays_files) == 1
    assert _tree(r) == sorted(["attntopo.json", *arrays_files, "figures/a.png", "c/d.txt"])
    assert (r / "figures" / "a.png").read_bytes() == b"2"
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_extra_files_may_swap_file_and_folder(tmp_path):
    r = tmp_path / "r"
    save_payload(r, {"kind": "t"}, {}, extra_files={"figures": b"a file", "plot/x.txt": b"x"})
    save_payload(r, {"kind": "t"}, {}, extra_files={"figures/a.png": b"a", "plot": b"now a file"})
    assert (r / "figures" / "a.png").read_bytes() == b"a"
    assert (r / "plot").read_bytes() == b"now a file"
    assert len(_tree(r)) == 4


@pytest.mark.parametrize(
    "name",
    [
        "../x",
        "/abs",
        "",
        "attntopo.json",
        "arrays.npz",
        "arrays-0123456789abcdef.npz",
        ".attntopo-x.tmp/y",
        "a\\b",
    ],
)
def test_extra_file_names_refused(tmp_path, name):
    with pytest.raises(InvalidInputError, match="extra file name"):
        save_payload(tmp_path / "r", {"kind": "t"}, {}, extra_files={name: b"x"})
    assert list(tmp_path.iterdir()) == []


def test_extra_file_that_is_also_a_folder_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="folder of another"):
        save_payload(tmp_path / "r", {"kind": "t"}, {}, extra_files={"a": b"x", "a/b": b"y"})


def test_failed_overwrite_changes_nothing(tmp_path):
    r = tmp_path / "r"
    save_payload(r, {"kind": "t", "v": 1}, {"a": np.zeros(1)}, extra_files={"f.txt": b"old"})
    before = {p: (r / p).read_bytes() for p in _tree(r)}
    with pytest.raises(TypeError):  # np.savez(file, file=...) fails while the npz is being written
        save_payload(r, {"kind": "t", "v": 2}, {"file": np.ones(1)}, extra_files={"f.txt": b"new"})
    assert {p: (r / p).read_bytes() for p in _tree(r)} == before
    assert load_payload(r)[0]["v"] == 1


def _save_format1(folder, meta, arrays, extra_files=()):
    import json

    folder.mkdir()
    np.savez(folder / "arrays.npz", **arrays)
    for name, data in dict(extra_files).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "attntopo.json").write_text(json.dumps({**meta, "format_version": 1}))


def test_format_1_is_refused_in_one_line_and_overwritten_by_a_save(tmp_path):
    """Format 1 was written before the first release: not read (one line naming the rewrite);
    a save over it leaves exactly the new result."""
    r = tmp_path / "r"
    _save_format1(r, {"kind": "t", "v": 1}, {"a": np.arange(4)}, {"figures/old.png": b"o"})
    with pytest.raises(
        ResultFormatError,
        match=r"is format 1 \(written before the first release.*"
        r"compute the result again and save it$",
    ):
        load_payload(r)
    save_payload(r, {"kind": "t", "v": 2}, {"a": np.arange(5)})
    assert load_payload(r)[0] == {"kind": "t", "v": 2, "format_version": FORMAT_VERSION}
    assert [p for p in _tree(r) if not p.startswith("arrays-")] == ["attntopo.json"]


def test_leftover_of_a_live_save_is_kept(tmp_path):
    import fcntl
    import os

    live = tmp_path / ".r.0123456789abcdef.new"
    dead = tmp_path / ".r.fedcba9876543210.new"
    live.mkdir()
    dead.mkdir()
    (dead / "arrays.npz").write_bytes(b"half")
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        save_payload(tmp_path / "r", {"kind": "t"}, {})
        assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "r"]
    finally:
        os.close(fd)
    save_payload(tmp_path / "r", {"kind": "t"}, {})
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_empty_folder_is_a_new_target(tmp_path):
    (tmp_path / "r").mkdir()
    save_payload(tmp_path / "r", {"kind": "t"}, {"a": np.zeros(1)})
    assert load_payload(tmp_path / "r")[0]["kind"] == "t"
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_reserved_meta_key(tmp_path):
    with pytest.raises(ValueError, match="reserved"):
        save_payload(tmp_path / "r", {"kind": "t", "storage": 1}, {})


# ------------------------------------------------------------------ malformed folders
def _with_meta(tmp_path, text: str):
    """A saved result whose attntopo.json is then replaced by ``text``."""
    r = tmp_path / "r"
    save_payload(r, {"kind": "t"}, {"a": np.zeros(1)})
    (r / "attntopo.json").write_text(text)
    return r


def _one_line_error(folder, *fragments):
    with pytest.raises(ResultFormatError) as e:
        load_payload(folder)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 300, msg
    for f in fragments:
        assert f in msg, msg
    return msg


@pytest.mark.parametrize(
    "text, what",
    [
        ("[1, 2]", "a list"),
        ('"kind"', "a string"),
        ("3.5", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ],
)
def test_meta_that_is_not_an_object(tmp_path, text, what):
    _one_line_error(_with_meta(tmp_path, text), f"holds {what}", "not an object")


@pytest.mark.parametrize("kind", ["[1, 2]", '{"a": 1}', "3", "null"])
def test_kind_that_is_not_a_string(tmp_path, kind):
    _one_line_error(
        _with_meta(tmp_path, f'{{"kind": {kind}, "format_version": 2}}'),
        "result kind must be a string",
    )


def test_kind_missing(tmp_path):
    _one_line_error(_with_meta(tmp_path, '{"format_version": 2}'), "names no result kind")


def test_meta_nested_too_deeply(tmp_path):
    deep = '{"kind": "t", "format_version": 2, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _one_line_error(_with_meta(tmp_path, deep), "nested too deeply")


def test_meta_with_a_huge_integer(tmp_path):
    _one_line_error(
        _with_meta(tmp_path, '{"kind": "t", "format_version": 2, "n": ' + "7" * 5000 + "}"),
        "corrupt",
    )


def test_meta_too_large(tmp_path, monkeypatch):
    import attntopo.io as io

    r = _with_meta(tmp_path, '{"kind": "t", "format_version": 2, "pad": "' + "x" * (1 << 20) + '"}')
    monkeypatch.setattr(io, "_MAX_META_BYTES", 1 << 20)  # 64 MiB by default
    _one_line_error(r, "larger than 1 MiB")


@pytest.mark.parametrize("version", ['"2"', "true", "1.0", "2.5", "null", "[2]", "0", "99"])
def test_format_version_not_a_supported_integer(tmp_path, version):
    _one_line_error(
        _with_meta(tmp_path, f'{{"kind": "t", "format_version": {version}}}'),
        "format_version must be 2",
    )


@pytest.mark.parametrize(
    "storage",
    ["null", "[]", '{"arrays": 3}', '{"arrays": "../../etc/passwd"}', '{"arrays": "arrays.npz"}'],
)
def test_storage_that_names_no_array_file(tmp_path, storage):
    _one_line_error(
        _with_meta(tmp_path, f'{{"kind": "t", "format_version": 2, "storage": {storage}}}'),
        "storage.arrays",
    )


def test_array_file_missing(tmp_path):
    r = tmp_path / "r"
    save_payload(r, {"kind": "t"}, {"a": np.zeros(1)})
    name = next(r.glob("arrays-*.npz")).name
    (r / name).unlink()
    _one_line_error(r, name, "missing")
    _save_format1(tmp_path / "v1", {"kind": "t"}, {"a": np.zeros(1)})
    (tmp_path / "v1" / "arrays.npz").unlink()
    _one_line_error(tmp_path / "v1", "arrays.npz", "missing")


def test_array_file_that_is_not_an_npz_archive(tmp_path):
    import zipfile

    r = tmp_path / "r"
    save_payload(r, {"kind": "t"}, {"a": np.zeros(1)})
    npz = next(r.glob("arrays-*.npz"))
    np.save(npz.with_suffix(".tmp"), np.zeros(3))  # a plain .npy
    npz.with_suffix(".tmp.npy").replace(npz)
    _one_line_error(r, "not an npz archive")
    with zipfile.ZipFile(npz, "w") as z:  # a zip whose member is no .npy
        z.writestr("a.txt", b"text")
    _one_line_error(r, "'a.txt'", "not a NumPy array")
    with zipfile.ZipFile(npz, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", b"x" * 1000)
    raw = bytearray(npz.read_bytes())
    raw[60:70] = b"\xff" * 10  # inside the deflated data
    npz.write_bytes(bytes(raw))
    _one_line_error(r, "corrupt")


def test_meta_not_utf8(tmp_path):
    r = _with_meta(tmp_path, "")
    (r / "attntopo.json").write_bytes(b'{"kind": "\xff"}')
    _one_line_error(r, "corrupt")


def test_a_refused_save_removes_the_folders_it_made(tmp_path):
    """save_payload makes the missing parents of a new result; when the file system then
    refuses the result's own name (longer than it allows), those folders go again and the
    error is the file system's (OSError), with nothing left behind."""
    target = tmp_path / "made" / "here" / ("r" * 300)
    with pytest.raises(OSError):
        save_payload(target, {"kind": "test"}, {"x": np.arange(3)})
    assert list(tmp_path.iterdir()) == []
