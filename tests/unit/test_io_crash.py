"""Saves that die at every filesystem step, the way SQLite tests crashes.

A child process saves with ``ATTNTOPO_TEST_CRASH_AT=k`` (the test hook of :mod:`attntopo.io`):
its k-th filesystem step (file creation, write, fsync, rename, unlink, mkdir, rmdir) ends it with
``os._exit`` -- no ``finally``, no cleanup, a write torn in half.  For every k until a save runs
to the end, the parent checks that the folder holds exactly the previous or exactly the new
payload, that no extra file is partial, and that the next save leaves nothing else behind.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from attntopo.errors import ResultFormatError
from attntopo.io import FORMAT_VERSION, load_payload, save_payload

CRASHED = 86  # the exit status of attntopo.io's test hook

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from attntopo.io import save_payload

    target, spec = sys.argv[1], sys.argv[2]
    with open(spec + ".json") as f:
        d = json.load(f)
    with np.load(spec + ".npz") as z:
        arrays = {k: z[k] for k in z.files}
    extra = {k: bytes.fromhex(v) for k, v in d["extra"].items()}
    save_payload(target, d["meta"], arrays, extra_files=extra, compress=d["compress"])
    """
)


def _payload(version: str, seed: int, extra: dict[str, bytes], compress: bool = False) -> dict:
    rng = np.random.default_rng(seed)
    arrays = {
        "weights": rng.random((3, 40, 40)),
        f"only_{version}": np.arange(seed + 5, dtype=np.int32),
        "mask": rng.random(17) > 0.5,
    }
    return {
        "meta": {"kind": "crash_test", "v": version, "n": seed, "x": "inf"},
        "arrays": arrays,
        "extra": extra,
        "compress": compress,
    }


# one extra file in both results, one only in the old, one only in the new
OLD = _payload(
    "old", 1, {"figures/a.png": b"old a" * 3000, "notes/old.txt": b"only in the old result"}
)
NEW = _payload(
    "new",
    2,
    {"figures/a.png": b"new a" * 5000, "top.txt": b"only in the new result"},
    compress=True,
)
THIRD = _payload("third", 3, {"figures/a.png": b"third"})


def _tree(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir())


def _save(folder, payload):
    save_payload(
        folder,
        payload["meta"],
        payload["arrays"],
        extra_files=payload["extra"],
        compress=payload["compress"],
    )


def _is(folder, payload) -> bool:
    """Whether ``load_payload(folder)`` gives exactly ``payload``
    (metadata, array names, dtypes, values)."""
    meta, arrays = load_payload(folder)
    if (
        meta != {**payload["meta"], "format_version": FORMAT_VERSION}
        or arrays.keys() != payload["arrays"].keys()
    ):
        return False
    return all(
        arrays[k].dtype == v.dtype and np.array_equal(arrays[k], v)
        for k, v in payload["arrays"].items()
    )


def _crash_save(spec_dir, target, payload, k):
    """Save ``payload`` to ``target`` in a child that
    dies at step ``k``; True if it ran to the end."""
    spec = spec_dir / "spec"
    np.savez(f"{spec}.npz", **payload["arrays"])
    with open(f"{spec}.json", "w") as f:
        json.dump(
            {
                "meta": payload["meta"],
                "compress": payload["compress"],
                "extra": {n: b.hex() for n, b in payload["extra"].items()},
            },
            f,
        )
    env = dict(os.environ, ATTNTOPO_TEST_CRASH_AT=str(k))
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(target), str(spec)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode in (0, CRASHED), r.stderr
    return r.returncode == 0


def _check_extras(folder, before, after, committed: bool) -> None:
    """Each extra file is complete; before the commit point none has changed."""
    for name in sorted(set(before["extra"]) | set(after["extra"])):
        path = folder / name
        found = path.read_bytes() if path.is_file() else None  # None: absent
        if committed:  # published one rename at a time, the previous ones swept at the end
            assert found in (before["extra"].get(name), after["extra"].get(name)), name
        else:
            assert found == before["extra"].get(name), name


def _no_strays(parent, folder, payload) -> None:
    arrays_files = [p.name for p in folder.glob("arrays-*.npz")]
    assert len(arrays_files) == 1
    assert _tree(folder) == sorted(["attntopo.json", *arrays_files, *payload["extra"]])
    assert [p.name for p in parent.iterdir()] == [folder.name]


def _has_new_extras(folder) -> bool:
    return all((folder / n).read_bytes() == b for n, b in NEW["extra"].items())


def _crash_every_step(tmp_path, prepare, check) -> int:
    """Crash the save of NEW at step k = 1, 2, ... until one runs to the end; the number of crashes.

    Each k starts from a fresh folder made by ``prepare(target)``; ``check(k, target, done)`` judges
    what the child left.  After a crash, the next save (of THIRD) must recover: exactly THIRD,
    nothing else in the folder or beside it.
    """
    for k in itertools.count(1):
        assert k < 400, "the save never ran to the end"
        parent, spec_dir = tmp_path / f"k{k}", tmp_path / f"spec{k}"
        parent.mkdir()
        spec_dir.mkdir()
        target = parent / "result"
        prepare(target)
        done = _crash_save(spec_dir, target, NEW, k)
        check(k, target, done)
        if done:
            assert _is(target, NEW) and _has_new_extras(target)
            _no_strays(parent, target, NEW)
            return k - 1
        _save(target, THIRD)
        assert _is(target, THIRD)
        _no_strays(parent, target, THIRD)
        assert (target / "figures" / "a.png").read_bytes() == b"third"


@pytest.mark.slow
def test_overwrite_crashed_at_every_step(tmp_path):
    def check(k, target, done):
        is_old = _is(target, OLD)
        assert is_old or _is(target, NEW), f"crash at step {k}: neither the old nor the new payload"
        _check_extras(target, OLD, NEW, committed=not is_old)

    prepare = lambda t: _save(t, OLD)  # noqa: E731
    # every step was crashed once: stage, commit, publish, sweep
    assert _crash_every_step(tmp_path, prepare, check) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("exists", ["absent", "empty folder"])
def test_new_folder_crashed_at_every_step(tmp_path, exists):
    def check(k, target, done):
        if target.exists() and any(target.iterdir()):  # complete, extra files included
            assert _is(target, NEW), f"crash at step {k}: a partial result under the target name"
            assert _has_new_extras(target)
        else:
            assert not done
            with pytest.raises(ResultFormatError):
                load_payload(target)

    prepare = (lambda t: t.mkdir()) if exists == "empty folder" else (lambda t: None)
    assert _crash_every_step(tmp_path, prepare, check) >= 20


CONCURRENT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from attntopo.errors import ResultFormatError
    from attntopo.io import load_payload, save_payload

    target, role, i = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for j in range(12):
        if role == "save":
            arrays = {"a": np.full(1000 + i, i), "b": np.arange(i + j)}
            save_payload(target, {"kind": "t", "i": i, "j": j}, arrays,
                         extra_files={"figures/f.txt": f"{i} {j}".encode()})
        else:
            try:
                meta, arrays = load_payload(target)
            except ResultFormatError as e:
                if "no result folder" in str(e) or "holds no" in str(e):
                    continue  # not saved yet
                raise
            i2, j2 = meta["i"], meta["j"]
            assert np.array_equal(arrays["a"], np.full(1000 + i2, i2)), meta
            assert np.array_equal(arrays["b"], np.arange(i2 + j2)), meta
    """
)


def test_concurrent_saves_and_loads(tmp_path):
    """Saves into one folder are serialized; every load sees one whole payload."""
    target = tmp_path / "result"
    roles = [("save", 1), ("save", 2), ("save", 3), ("load", 0), ("load", 0)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(target), role, str(i)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for role, i in roles
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), errors
    meta, arrays = load_payload(target)
    assert np.array_equal(arrays["a"], np.full(1000 + meta["i"], meta["i"]))
    assert (target / "figures" / "f.txt").read_text() == f"{meta['i']} {meta['j']}"
    assert _tree(target) == sorted(
        ["attntopo.json", next(target.glob("arrays-*")).name, "figures/f.txt"]
    )
    assert [p.name for p in tmp_path.iterdir()] == ["result"]
