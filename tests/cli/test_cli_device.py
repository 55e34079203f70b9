"""``--device`` and ``--dtype`` on every command that loads a model, as a user runs them
(subprocesses): the options exist, bad values are one line and exit 2 before any work, and a
bfloat16 model runs and says so."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import attntopo as at
from _cli import assert_one_line_error, run
from attntopo.corpus import open_store

#: every command that loads a model
MODEL_COMMANDS = [
    "analyze",
    "approx",
    "compare",
    "compress",
    "context",
    "corpus",
    "depth",
    "hardmax simulate",
    "heads",
    "phrase",
    "report",
    "serve",
    "timeline",
    "words",
]
CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("command", MODEL_COMMANDS)
def test_every_model_command_has_device_and_dtype(command):
    r = run(*command.split(), "--help", columns=200)
    assert r.returncode == 0, r.stderr
    for opt in ("--device", "--dtype"):
        assert opt in r.stdout, (command, opt)
    assert "auto" in r.stdout and "bfloat16" in r.stdout


# each command with the smallest valid input it takes
ARGS = {
    "analyze": ["analyze", "Hello there, world."],
    "compare": ["compare", "Hello there.", "Hello world."],
    "depth": ["depth", "Hello there, world.", "Another text here."],
    "timeline": ["timeline", "Hello there, world."],
    "words": ["words", "Hello there, world."],
    "heads": ["heads", "Hello there, world."],
}
BAD = [
    (["--device", "gpu"], ["unknown --device 'gpu'", "allowed: cpu, cuda, cuda:N"]),
    (["--device", "cuda:99"], ["--device 'cuda:99'"]),
    (["--dtype", "float64"], ["unknown --dtype 'float64'", "allowed: float32, float16, bfloat16"]),
    (["--dtype", "int8", "--device", "cpu"], ["unknown --dtype 'int8'"]),
]
if not CUDA:
    BAD.append(
        (["--device", "cuda"], ["--device 'cuda': this machine has no CUDA GPU", "use cpu or auto"])
    )


@pytest.mark.parametrize("command", sorted(ARGS))
@pytest.mark.parametrize("opts, fragments", BAD)
def test_bad_device_or_dtype_is_one_line_and_exit_2(command, opts, fragments, tmp_path):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if command in ("analyze", "compare", "depth", "timeline") else []
    r = run(*ARGS[command], *opts, *extra)
    assert_one_line_error(r, *fragments)
    assert not out.exists()  # nothing written


def test_corpus_and_serve_check_device_before_any_work(tmp_path):
    store = tmp_path / "store"
    r = run("corpus", "-", "--out", str(store), "--device", "tpu", stdin="one text\n")
    assert_one_line_error(r, "unknown device 'tpu'")
    assert not store.exists()
    r = run("corpus", "-", "--out", str(store), "--gpus-per-actor", "1", stdin="one text\n")
    assert_one_line_error(r, "gpus_per_actor applies to backend='ray' only")
    r = run(
        "corpus",
        "-",
        "--out",
        str(store),
        "--backend",
        "ray",
        "--gpus-per-actor",
        "1.5",
        stdin="one text\n",
    )
    assert_one_line_error(
        r, "gpus_per_actor 1.5: Ray takes a fraction below 1 or a whole number of GPUs"
    )
    r = run(
        "corpus",
        "-",
        "--out",
        str(store),
        "--backend",
        "ray",
        "--device",
        "cuda",
        stdin="one text\n",
    )
    assert_one_line_error(r, "device='cuda' with backend='ray'", "gpus_per_actor=")
    assert not store.exists()
    r = run("serve", "--port", "0", "--dtype", "float8")
    assert_one_line_error(r, "unknown --dtype 'float8'")
    if not CUDA:
        r = run("serve", "--port", "0", "--device", "cuda:1")
        assert_one_line_error(r, "--device 'cuda:1': this machine has no CUDA GPU")


@pytest.mark.model
@pytest.mark.slow
def test_a_bfloat16_analysis_from_the_command_line(tmp_path):
    text = "Quantum information theory allows us to study attention using entanglement"
    r = run(
        "analyze", text, "--dtype", "bfloat16", "--device", "auto", "--layer", "0", "--maxdim", "0"
    )
    assert r.returncode == 0, r.stderr
    where = "cuda:0" if CUDA else "cpu"
    assert f"bidirectional, bfloat16 on {where})" in r.stdout.splitlines()[0]
    r = run(
        "analyze",
        text,
        "--dtype",
        "bfloat16",
        "--layer",
        "0",
        "--maxdim",
        "0",
        "--json",
        "--out",
        str(tmp_path / "a"),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"]["dtype"] == "bfloat16" and doc["model"]["device"] == "cpu"
    # the saved result is the library's bfloat16 analysis (the same kernels on this machine:
    # equal within the float32 rounding of two processes, far below bfloat16's own error)
    saved = at.load_result(tmp_path / "a")
    lib = at.analyze(
        text, at.load_model("minilm", dtype="bfloat16"), layers=[0], maxdim=0, progress=False
    )
    f32 = at.analyze(text, at.load_model("minilm"), layers=[0], maxdim=0, progress=False)
    a, b, c = (x.summary()["total_persistence_h0"] for x in (saved, lib, f32))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    assert np.abs(a - c).max() > 1e-4  # it did run in bfloat16: not the float32 numbers


@pytest.mark.model
@pytest.mark.slow
def test_corpus_dtype_is_a_setting_of_the_store(tmp_path):
    store = tmp_path / "store"
    texts = "The cat sat on the mat.\nAttention is all you need.\n"
    base = [
        "corpus",
        "-",
        "--out",
        str(store),
        "--layer",
        "0",
        "--head",
        "0",
        "--batch-size",
        "2",
        "--quiet",
    ]
    r = run(*base, "--dtype", "bfloat16", stdin=texts)
    assert r.returncode == 0, r.stderr
    s = open_store(store)
    assert s.settings.dtype == "bfloat16" and s.counts()["ok"] == 2
    assert json.loads((store / "manifest.json").read_text())["settings"]["dtype"] == "bfloat16"
    # continuing it in float32 would mix numbers: refused in one line, the store unchanged
    r = run(*base, stdin=texts)
    assert_one_line_error(r, "dtype")
    assert open_store(store).counts()["ok"] == 2
