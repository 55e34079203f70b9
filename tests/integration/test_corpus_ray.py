"""The Ray engine of attntopo.corpus on a real local Ray (2 CPUs) with MiniLM: the store it
writes equals the local engine's row for row; it resumes a store whose driver was killed
with SIGKILL; a bad cluster address is one line.

Tolerance of the feature comparison (tests/README.md, kind 2): both engines run the same
float32 forward pass on the same padded batches (the local run here with one torch thread,
like each Ray actor), so the attention weights are the same; what may differ is the order
in which float64 reductions add up (NumPy's BLAS uses 2 threads here, 1 in an actor): a JS
divergence over n ≤ 512 keys, then sums over at most 2n bars.  Reordering a float64 sum of m
terms changes it by at most 2·γ_m·Σ|x_i| with γ_m ≈ m·u, u = 2⁻⁵³; with m ≤ 1024 and values
of order one that is ≤ 2.3e-13 per step, so rtol = atol = 1e-12 bounds a few such steps, and
is still five orders of magnitude below any float32 effect (a text computed in another batch
or by another model would differ by ~1e-7 or more).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from attntopo import corpus  # noqa: E402
from attntopo.corpus import open_store  # noqa: E402
from attntopo.corpus._ray import CONNECT_TIMEOUT_S, check_ray_address  # noqa: E402
from attntopo.datasets import fortunes  # noqa: E402
from attntopo.errors import InvalidInputError  # noqa: E402
from attntopo.models import clear_model_cache, describe_model  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

#: The settings of every store here (a store refuses other settings); six heads keep the
#: work small: what is tested is the engine, not the heads.
SETTINGS = dict(
    batch_size=2,
    keep_diagrams=True,
    on_long="skip",
    text_column="text",
    layers=[0, 5],
    heads=[0, 4, 8],
)
RTOL = ATOL = 1e-12
N_TEXTS = 21  # 20 fortunes and one text too long for MiniLM (a "skipped" row); plus one empty line


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    """JSONL: short fortunes with a carried label, one empty text, one text over 512 tokens."""
    texts = list(fortunes(categories=["food"], max_words=14).texts[:20])
    records = [{"text": t, "label": f"food-{i % 3}"} for i, t in enumerate(texts)]
    records.insert(7, {"text": "   ", "label": "empty"})
    records.insert(12, {"text": "word " * 600, "label": "long"})
    path = tmp_path_factory.mktemp("ray_input") / "texts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def local_store(corpus_file, tmp_path_factory, minilm):
    """The reference: the local engine, one torch thread (as in a Ray actor), serial persistence."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return corpus.run(
            corpus_file,
            tmp_path_factory.mktemp("local") / "store",
            model=minilm,
            backend="local",
            n_jobs=1,
            progress=False,
            **SETTINGS,
        )
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def _ray_module():
    yield
    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def shared_ray(_ray_module):
    """A local Ray (2 CPUs) shared by the tests that join one; its address."""
    if not ray.is_initialized():
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    return ray.get_runtime_context().gcs_address


def assert_same_store(got, want):
    """Same schema, same rows in the same order, every id once; features within RTOL/ATOL."""
    a, b = got.to_arrow(), want.to_arrow()
    assert a.schema.remove_metadata() == b.schema.remove_metadata()
    assert a.num_rows == b.num_rows == N_TEXTS
    ids = a["id"].to_pylist()
    assert len(set(ids)) == len(ids)
    features = set(want.feature_columns)
    floats = features | {"diagram_births", "diagram_deaths"}
    for name in a.schema.names:
        if name not in floats:
            assert a[name].to_pylist() == b[name].to_pylist(), name
    A = np.array(a.select(sorted(features)).to_pandas(), dtype=float)
    B = np.array(b.select(sorted(features)).to_pandas(), dtype=float)
    np.testing.assert_allclose(A, B, rtol=RTOL, atol=ATOL, equal_nan=True)
    assert (
        np.isfinite(A).sum() > 0.9 * A.size * (N_TEXTS - 1) / N_TEXTS
    )  # only the skipped row is empty
    for name in ("diagram_births", "diagram_deaths"):
        for x, y in zip(a[name].to_pylist(), b[name].to_pylist()):
            assert (x is None) == (y is None)
            if x is not None:
                assert [len(h) for h in x] == [len(h) for h in y]
                np.testing.assert_allclose(
                    np.concatenate(x), np.concatenate(y), rtol=RTOL, atol=ATOL
                )
    c = got.counts()
    assert (c["ok"], c["skipped_long"], c["skipped_empty"]) == (N_TEXTS - 1, 1, 1)


def test_ray_store_equals_local_store(corpus_file, local_store, tmp_path, minilm, monkeypatch):
    """backend="ray" without an address starts a local Ray, writes the same store and shuts
    Ray down again."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if ray.is_initialized():  # another test of this module ran first: this one starts its own
        ray.shutdown()
    store = corpus.run(
        corpus_file, tmp_path / "store", model=minilm, backend="ray", progress=False, **SETTINGS
    )
    assert not ray.is_initialized()
    assert_same_store(store, local_store)
    assert open_store(store.path).sql("SELECT count(DISTINCT id) FROM corpus").iloc[0, 0] == N_TEXTS


def test_ray_driver_killed_then_resumed(local_store, corpus_file, tmp_path, minilm, shared_ray):
    """A driver joined to the cluster (ray_address) killed with SIGKILL after its first part:
    the re-run (in this process, on the Ray it is connected to, which stays up) computes the
    missing batches only, leaves the written parts alone, and the store equals the local
    one, every text exactly once."""
    out = tmp_path / "store"
    code = (
        "from attntopo import corpus\n"
        f"corpus.run({str(corpus_file)!r}, {str(out)!r}, backend='ray', "
        f"ray_address={shared_ray!r}, progress=False, **{SETTINGS!r})\n"
    )
    log = (tmp_path / "driver.log").open("w")
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 180
    try:
        while not list((out / "parts").glob("part-*.parquet")):
            assert p.poll() is None, (tmp_path / "driver.log").read_text()
            assert time.monotonic() < deadline, "no part file after 180 s"
            time.sleep(0.01)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the driver's process group: nothing else of ours
        p.wait()
        log.close()
    assert p.returncode == -signal.SIGKILL
    kept = {q.name: q.stat().st_mtime_ns for q in (out / "parts").glob("part-*.parquet")}
    assert 1 <= len(kept) < 11, len(kept)
    # the model by name, none loaded in this process: the driver (this process) only reads the
    # model's tokenizer and configuration, the actors load the weights
    with _no_cached_models():
        before = _loaded_models()
        store = corpus.run(
            corpus_file, out, model="minilm", backend="ray", progress=False, **SETTINGS
        )
        assert _loaded_models() == before, "the Ray driver loaded the model's weights"
    assert store.manifest["model"]["n_layers"] == minilm.n_layers
    assert ray.is_initialized()
    assert {name: (out / "parts" / name).stat().st_mtime_ns for name in kept} == kept
    assert len(list((out / "parts").glob("part-*.parquet"))) == 11 and not list(
        (out / "parts").glob(".*.tmp")
    )
    assert_same_store(store, local_store)


@contextlib.contextmanager
def _no_cached_models():
    """No model in load_model's cache while inside; the cache as it was afterwards (the other
    tests of this worker keep sharing their session's model: test_models checks it is cached)."""
    from attntopo.models import model as _model_module

    with _model_module._CACHE_LOCK:
        saved = dict(_model_module._CACHE)
    clear_model_cache()
    try:
        yield
    finally:
        with _model_module._CACHE_LOCK:
            _model_module._CACHE.update(saved)


def _loaded_models() -> int:
    """transformers models alive in this process."""
    import gc

    from transformers import PreTrainedModel

    gc.collect()
    return sum(isinstance(o, PreTrainedModel) for o in gc.get_objects())


def test_describe_model_is_load_models_without_weights(minilm):
    """What a Ray driver holds instead of the model: the same description and tokenization,
    and no transformers model built."""
    with _no_cached_models():
        before = _loaded_models()
        d = describe_model("minilm")
        assert _loaded_models() == before and not hasattr(d, "hf_model")
    assert d.info() == minilm.info()
    text = "The cat sat on the mat, and Zürich's café was closed."
    assert d.tokenize(text) == minilm.tokenize(text)
    assert describe_model(minilm) is minilm


def test_bad_ray_address_is_one_line(capfd):
    """Nothing listening, not an address: one line naming the address and what to do, fast
    (Ray itself retries for minutes), nothing printed."""
    t0 = time.monotonic()
    with pytest.raises(InvalidInputError) as e:
        check_ray_address("127.0.0.1:1")
    msg = str(e.value)
    assert "\n" not in msg and "'127.0.0.1:1'" in msg and "ray start --head" in msg
    assert time.monotonic() - t0 < CONNECT_TIMEOUT_S + 1
    for bad in ("nonsense", "host:99999", ":6379", ""):
        with pytest.raises(InvalidInputError, match="HOST:PORT"):
            check_ray_address(bad)
    assert capfd.readouterr() == ("", "")


def test_auto_address_is_probed_and_kept_as_auto(monkeypatch):
    """'auto' is checked at the local cluster's host:port but handed to ray.init as 'auto': only
    then does Ray read that cluster's session token (a `ray start --head` cluster of Ray >= 2.52
    refuses a driver that names its host:port without the token)."""
    import socket

    from ray._private import services

    with socket.socket() as listener:  # something answering, as a cluster's GCS would
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        host, port = listener.getsockname()
        monkeypatch.setattr(
            services, "canonicalize_bootstrap_address_or_die", lambda a: f"{host}:{port}"
        )
        assert check_ray_address("auto") == "auto"
        assert check_ray_address(f" {host}:{port} ") == f"{host}:{port}"

    def several(a):
        raise ConnectionError("Found multiple active Ray instances:\n 10.0.0.1:6379, 10.0.0.2:6379")

    monkeypatch.setattr(services, "canonicalize_bootstrap_address_or_die", several)
    with pytest.raises(InvalidInputError) as e:
        check_ray_address("auto")
    msg = str(e.value)
    assert (
        "\n" not in msg
        and "no single Ray cluster" in msg
        and "multiple active Ray instances" in msg
    )
    monkeypatch.undo()
    monkeypatch.setenv("RAY_ADDRESS", "not an address")  # what 'auto' reads first
    with pytest.raises(InvalidInputError, match="RAY_ADDRESS='not an address'.*HOST:PORT"):
        check_ray_address("auto")


def test_bad_ray_address_fails_before_the_model_loads_or_the_store_is_written(tmp_path):
    out = tmp_path / "store"
    with pytest.raises(InvalidInputError, match="127.0.0.1:1"):
        corpus.run(
            ["one text", "another"],
            out,
            model="minilm",
            backend="ray",
            ray_address="127.0.0.1:1",
            progress=False,
        )
    assert not out.exists()


def test_gpus_per_actor_places_actors_on_rays_gpus(corpus_file, tmp_path, monkeypatch):
    """--gpus-per-actor goes through Ray's own ``num_gpus``: on a Ray that declares one GPU
    (Ray schedules by the declared resources), two actors of 0.5 GPU each are placed, Ray
    assigns each GPU 0, and each loads the model on "cuda"; this machine has no CUDA, so the
    actor's load fails, and the driver gets the actor's own one-line error naming the GPU Ray
    gave it.  More GPUs per actor than the cluster has is refused before any actor starts."""
    import torch

    from attntopo.errors import DeviceError

    if torch.cuda.is_available():
        pytest.skip(
            "this machine has a CUDA GPU: the actor would run (tests/integration/test_gpu.py)"
        )
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",
        num_cpus=2,
        num_gpus=1,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    try:
        with pytest.raises(DeviceError, match=r"no CUDA GPU .*\(a Ray actor given GPU 0 on ") as e:
            corpus.run(
                corpus_file,
                tmp_path / "s",
                backend="ray",
                gpus_per_actor=0.5,
                n_jobs=2,
                progress=False,
                **SETTINGS,
            )
        assert "\n" not in str(e.value)
        with pytest.raises(
            InvalidInputError, match=r"^gpus_per_actor=2, but the Ray cluster .* has 1 GPUs$"
        ):
            corpus.run(
                corpus_file,
                tmp_path / "t",
                backend="ray",
                gpus_per_actor=2,
                progress=False,
                **SETTINGS,
            )
    finally:
        ray.shutdown()


def test_ray_store_of_pairs_equals_local_store(tmp_path, minilm, shared_ray):
    """(prompt, answer) pairs (answer_column) through the Ray actors, with the sets for
    hallucination detection and layers and heads out of order: the same rows as the local
    engine's, prompt and answer kept, every feature within RTOL/ATOL under the same name."""
    import pandas as pd
    import torch

    df = pd.DataFrame(
        {
            "prompt": ["What is the capital of France?", "Who wrote Hamlet?", "What is 2 + 2?"],
            "answer": ["Paris is the capital of France.", "Dickens, in 1950.", "It is 4."],
        }
    )
    kw = dict(
        model=minilm,
        text_column="prompt",
        answer_column="answer",
        sets=("prompt", "lookback", "zigzag", "spectral", "js"),
        layers=[5, 0],
        heads=[4, 0],
        batch_size=2,
        progress=False,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        want = corpus.run(df, tmp_path / "local", backend="local", n_jobs=1, **kw).to_arrow()
    finally:
        torch.set_num_threads(threads)
    store = corpus.run(df, tmp_path / "ray", backend="ray", **kw)  # the connection of shared_ray
    got = store.to_arrow()
    assert got.schema.remove_metadata() == want.schema.remove_metadata()
    assert (
        store.feature_columns[0] == "L5H4.prompt.js" and "L*H*.zigzag.h1.n_bars" in got.schema.names
    )
    feats = set(store.feature_columns)
    for name in got.schema.names:
        if name not in feats:
            assert got[name].to_pylist() == want[name].to_pylist(), name
    assert got["answer"].to_pylist() == list(df["answer"]) and store.counts()["ok"] == 3
    A = np.array(got.select(sorted(feats)).to_pandas(), dtype=float)
    B = np.array(want.select(sorted(feats)).to_pandas(), dtype=float)
    np.testing.assert_allclose(A, B, rtol=RTOL, atol=ATOL)
