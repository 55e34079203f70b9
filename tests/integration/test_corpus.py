"""attntopo.corpus on MiniLM: the store's features are attntopo.features' numbers, resume is
exactly once (parts lost, a torn write, kill -9 at random moments), bad rows and long texts
are rows, not crashes, and the diagrams kept agree with ripser."""

from __future__ import annotations

import csv
import hashlib
import logging
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from attntopo import corpus
from attntopo.datasets import fortunes
from attntopo.errors import InvalidInputError, UnknownTokensWarning
from attntopo.features import features

LAYERS, HEADS = [0, 3], [1, 7]  # four heads keep every test short
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    ds = fortunes(categories=["science"], min_words=4, max_words=14, n_per_category=40, seed=3)
    return [" ".join(t.split()) for t in ds.texts]


def _features_of(store):
    df = store.to_pandas()
    return df, df[store.feature_columns].to_numpy()


def test_store_rows_are_the_features_of_each_batch(minilm, texts, tmp_path):
    src = tmp_path / "in.csv"
    rows = [
        {"key": f"k{i}", "text": t if i != 5 else "", "label": i % 3}
        for i, t in enumerate(texts[:10])
    ]
    with open(src, "w", newline="") as f:
        w = csv.DictWriter(f, ["key", "text", "label"])
        w.writeheader()
        w.writerows(rows)
    store = corpus.run(
        src,
        out=tmp_path / "s",
        model=minilm,
        sets=("js", "graph", "template"),
        layers=LAYERS,
        heads=HEADS,
        batch_size=4,
        id_column="key",
        progress=False,
    )
    assert store.counts() == {
        "total": 9,
        "done": 9,
        "ok": 9,
        "truncated": 0,
        "skipped_empty": 1,
        "skipped_long": 0,
        "failed": 0,
        "remaining": 0,
    }
    df, X = _features_of(store)
    kept = [r for r in rows if r["text"]]
    assert list(df["id"]) == [r["key"] for r in kept]
    assert list(df["label"]) == [r["label"] for r in kept]  # carried, typed int64
    assert list(df["text_sha256"]) == [hashlib.sha256(r["text"].encode()).hexdigest() for r in kept]
    # each batch equals attntopo.features on the same texts (same padded batch: the same numbers)
    for start in range(0, len(kept), 4):
        batch = [r["text"] for r in kept[start : start + 4]]
        ft = features(
            batch,
            model=minilm,
            sets=("js", "graph", "template"),
            layers=LAYERS,
            heads=HEADS,
            batch_size=len(batch),
        )
        assert list(ft.columns) == store.feature_columns
        np.testing.assert_array_equal(X[start : start + 4], ft.values)
    m = store.manifest
    assert m["settings"]["model_hash"].startswith("sha256:") and m["input"][
        "fingerprint"
    ].startswith("sha256:")
    assert (store.path / "errors.jsonl").read_text() == ""


@pytest.mark.parametrize("sets", [("js",), ("graph",)])  # kept also when no set reads them
def test_kept_diagrams_agree_with_ripser(minilm, texts, tmp_path, sets):
    ripser = pytest.importorskip("ripser").ripser
    from attntopo.distances import token_distances

    store = corpus.run(
        texts[:3],
        out=tmp_path / "s",
        model=minilm,
        layers=LAYERS,
        heads=HEADS,
        sets=sets,
        keep_diagrams=True,
        batch_size=3,
        progress=False,
    )
    rid = store.to_pandas()["id"][1]
    dg = store.diagrams(rid)
    att = minilm.attention(
        texts[1], layers=LAYERS, heads=HEADS
    )  # special tokens kept (the default)
    D = token_distances(att.weights)
    for i, layer in enumerate(LAYERS):
        for j, head in enumerate(HEADS):
            ref = ripser(D[i, j], distance_matrix=True, maxdim=1)["dgms"]
            for dim in (0, 1):
                got = dg[(layer, head)][dim]
                want = ref[dim][np.lexsort((ref[dim][:, 1], ref[dim][:, 0]))]
                assert got.shape == want.shape
                np.testing.assert_allclose(got, want, atol=1e-6)  # ripser works in float32


def test_a_metric_other_than_js_makes_its_store(minilm, texts, tmp_path):
    """metric= in a store: its columns are named by the metric and hold features()' numbers,
    the kept diagrams are the metric's (H0 deaths: SciPy's minimum spanning tree), and a run
    with another metric on the store is refused naming it."""
    from scipy.sparse.csgraph import minimum_spanning_tree

    from attntopo.distances import token_distances

    kw = dict(
        model=minilm,
        sets=("js", "js_per_token"),
        layers=LAYERS,
        heads=HEADS,
        batch_size=3,
        progress=False,
    )
    store = corpus.run(texts[:3], out=tmp_path / "s", metric="hellinger", keep_diagrams=True, **kw)
    ft = features(
        texts[:3],
        model=minilm,
        sets=kw["sets"],
        layers=LAYERS,
        heads=HEADS,
        metric="hellinger",
        batch_size=3,
    )
    assert store.feature_columns == list(ft.columns)
    assert store.feature_columns[0] == f"L{LAYERS[0]}H{HEADS[0]}.hellinger.h0.n_bars"
    np.testing.assert_array_equal(_features_of(store)[1], ft.values)
    assert store.settings.features.metric == "hellinger"
    rid = store.to_pandas()["id"][2]
    att = minilm.attention(texts[2], layers=LAYERS, heads=HEADS)
    D = token_distances(att.weights, metric="hellinger")
    for i, layer in enumerate(LAYERS):
        for j, head in enumerate(HEADS):
            h0 = store.diagrams(rid)[(layer, head)][0]
            deaths = h0[np.isfinite(h0[:, 1]), 1]
            # each death within 1e-6, as ripser's in test_kept_diagrams_agree_with_ripser
            # (float32 engines; the store's padded batch against this single text's pass)
            assert np.sum(deaths) == pytest.approx(
                minimum_spanning_tree(D[i, j]).sum(), abs=1e-6 * len(deaths)
            )
    with pytest.raises(
        InvalidInputError, match="made with metric=hellinger, this run has metric=total_variation"
    ):
        corpus.run(
            texts[:3], out=tmp_path / "s", metric="total_variation", keep_diagrams=True, **kw
        )


def test_lost_parts_are_recomputed_identically(minilm, texts, tmp_path):
    kw = dict(model=minilm, layers=LAYERS, heads=HEADS, batch_size=5, progress=False)
    store = corpus.run(texts[:12], out=tmp_path / "s", **kw)
    full = store.to_arrow()
    os.unlink(store.part_path(1))
    seen = []
    again = corpus.run(
        texts[:12], out=tmp_path / "s", **{**kw, "progress": lambda d, t, s: seen.append((d, t))}
    )
    assert again.to_arrow().equals(full)
    assert seen[0][1] == 12 and seen[-1] == (12, 12)
    assert min(d for d, _ in seen if d) == 7  # one batch of five was done again, no more


def test_bad_rows_empty_lines_and_long_texts(minilm, texts, tmp_path):
    long = " ".join(["word"] * 600)
    src = tmp_path / "in.txt"
    src.write_text("\n".join([texts[0], "", "\u0301", long, "   ", texts[1], "😀 smile"]) + "\n")
    kw = dict(model=minilm, layers=[0], heads=[0], batch_size=3, progress=False)
    with pytest.warns(UnknownTokensWarning, match="1 text of the corpus holds"):
        store = corpus.run(src, out=tmp_path / "t", **kw)
    c = store.counts()
    assert (c["ok"], c["failed"], c["truncated"], c["skipped_empty"]) == (4, 1, 1, 2)
    df = store.to_pandas().set_index("row")
    assert df.loc[3, "truncated"] and df.loc[3, "n_tokens"] == minilm.max_length
    assert df.loc[2, "status"] == "failed" and "no token but special" in df.loc[2, "error"]
    assert df.loc[6, "n_unknown"] == 1
    assert (
        np.isnan(df.loc[2, store.feature_columns]).all()
        and np.isfinite(df.loc[0, store.feature_columns]).all()
    )
    assert [e["row"] for e in store.errors()] == [2]

    with pytest.warns(UnknownTokensWarning):
        skipped = corpus.run(src, out=tmp_path / "k", on_long="skip", **kw)
    assert skipped.counts()["skipped_long"] == 1
    assert [(e["row"], e["status"], e["n_tokens"]) for e in skipped.errors()] == [
        (2, "failed", 2),
        (3, "skipped", 602),
    ]

    with pytest.raises(InvalidInputError, match=r"input row 3 \(id '3-.*'\) has 602 tokens") as e:
        corpus.run(src, out=tmp_path / "e", on_long="error", **kw)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "e").exists()  # nothing written


def test_other_settings_or_input_are_refused_naming_them(minilm, texts, tmp_path):
    kw = dict(model=minilm, layers=LAYERS, heads=HEADS, batch_size=4, progress=False)
    corpus.run(texts[:4], out=tmp_path / "s", **kw)
    with pytest.raises(InvalidInputError, match=r"made with sets=js, this run has sets=js,graph"):
        corpus.run(texts[:4], out=tmp_path / "s", sets=("js", "graph"), **kw)
    with pytest.raises(InvalidInputError, match="batch_size=4, this run has batch_size=2"):
        corpus.run(texts[:4], out=tmp_path / "s", **{**kw, "batch_size": 2})
    with pytest.raises(InvalidInputError, match="from another input"):
        corpus.run(texts[1:5], out=tmp_path / "s", **kw)
    new = corpus.run(texts[1:5], out=tmp_path / "s", new_store=True, **kw)
    assert new.counts()["ok"] == 4


def test_feature_settings_record_makes_the_same_store(minilm, texts, tmp_path):
    """corpus.run(settings=FeatureSettings(...)) is the keyword run: same manifest, same rows;
    the store gives its FeatureSettings back; a disagreeing keyword is refused before any
    file is written."""
    from attntopo.features import FeatureSettings

    fs = FeatureSettings(
        sets=("js", "graph"), layers=LAYERS, heads=HEADS, thresholds=(0.1,), scales=(0.3,)
    )
    kw = dict(model=minilm, batch_size=4, progress=False)
    a = corpus.run(texts[:4], out=tmp_path / "a", settings=fs, **kw)
    b = corpus.run(
        texts[:4],
        out=tmp_path / "b",
        sets=("js", "graph"),
        layers=LAYERS,
        heads=HEADS,
        thresholds=(0.1,),
        scales=(0.3,),
        **kw,
    )
    assert a.settings == b.settings and a.settings.features == fs
    assert a.manifest["settings"] == b.manifest["settings"]
    np.testing.assert_array_equal(_features_of(a)[1], _features_of(b)[1])
    # the store continues under the keywords that made it, and under its own record
    corpus.run(texts[:4], out=tmp_path / "a", settings=a.settings.features, **kw)
    with pytest.raises(
        InvalidInputError, match=r"cycle_cap=9 disagrees with settings\.cycle_cap=50"
    ):
        corpus.run(texts[:4], out=tmp_path / "c", settings=fs, cycle_cap=9, **kw)
    with pytest.raises(
        InvalidInputError, match="min_persistence=0.1: a corpus store keeps every bar"
    ):
        corpus.run(
            texts[:4],
            out=tmp_path / "c",
            settings=FeatureSettings(sets=("js",), min_persistence=0.1),
            **kw,
        )
    assert not (tmp_path / "c").exists()


def test_log_lines_without_a_terminal(minilm, texts, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="attntopo.corpus"):
        corpus.run(
            texts[:6],
            out=tmp_path / "s",
            model=minilm,
            layers=[0],
            heads=[0],
            batch_size=2,
            log_every=1,
        )  # progress=None, and pytest's stderr is no terminal
    lines = [r.getMessage() for r in caplog.records]
    assert [x.split(" texts")[0] for x in lines[:3]] == [
        "corpus: 2/6",
        "corpus: 4/6",
        "corpus: 6/6",
    ]
    assert "texts/s, eta" in lines[0]
    assert lines[-1].startswith("corpus: 6 done, 0 skipped (empty)")


# ------------------------------------------------------------------ kill -9
_CHILD = """
import sys
from attntopo import corpus
corpus.run(sys.argv[1], out=sys.argv[2], layers=[0, 3], heads=[1, 7], batch_size=4, progress=False)
"""


@pytest.mark.slow
@pytest.mark.model
def test_kill9_at_random_moments_then_resume_gives_every_row_once(minilm, texts, tmp_path):
    """Three runs in a subprocess die: one by a torn part write (the io crash hook), two by
    SIGKILL at random moments of the work (after a random number of finished batches, plus a
    random part of one batch's time); each resumed store equals an uninterrupted one."""
    n_texts, batches = 28, 7
    src = tmp_path / "in.txt"
    src.write_text("\n".join(texts[:n_texts]) + "\n")
    kw = dict(model=minilm, layers=LAYERS, heads=HEADS, batch_size=4, progress=False)
    t0 = time.perf_counter()
    ref = corpus.run(src, out=tmp_path / "ref", **kw).to_arrow()
    per_batch = (time.perf_counter() - t0) / batches
    rng = random.Random(17)
    env = dict(os.environ, ATTNTOPO_PROGRESS="0")
    # manifest: 3 steps for the file, 1 rename, 1 folder fsync; each part the same 5:
    # step 5 + 3·5 + 2 is the write of batch 3's temporary file, cut in half
    trials = [("crash", 5 + 3 * 5 + 2, 0.0)] + [
        ("kill", rng.randrange(0, batches - 2), rng.random()) for _ in range(2)
    ]
    for n, (how, when, frac) in enumerate(trials):
        out = tmp_path / f"s{n}"
        child_env = dict(env, ATTNTOPO_TEST_CRASH_AT=str(when)) if how == "crash" else env
        p = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(src), str(out)],
            env=child_env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if how == "kill":  # after `when` parts exist, and a random part of a batch's time more
            deadline = time.monotonic() + 240
            while (
                p.poll() is None
                and time.monotonic() < deadline
                and (
                    not (out / "manifest.json").exists()
                    or len(list((out / "parts").glob("part-*.parquet"))) < when
                )
            ):
                time.sleep(0.005)
            time.sleep(frac * per_batch)
            p.kill()
        p.wait(timeout=240)
        assert p.returncode in (86, -9), (how, p.returncode, p.stderr.read()[-2000:])
        before = sorted(os.listdir(out / "parts")) if (out / "parts").exists() else []
        store = corpus.run(src, out=out, **kw)
        got = store.to_arrow()
        ids = got.column("id").to_pylist()
        assert len(ids) == len(set(ids)) == n_texts, (how, before)
        assert got.equals(ref), (how, before)
        assert not [e for e in os.listdir(out / "parts") if e.endswith(".tmp")]
        if how == "crash":
            assert any(e.endswith(".tmp") for e in before)  # the torn temporary file was there
            assert corpus.part_name(3) not in before and corpus.part_name(2) in before


def test_run_checks_device_and_dtype_before_any_work(tmp_path, minilm):
    import torch

    from attntopo.errors import DeviceError, InvalidInputError

    out = tmp_path / "s"
    with pytest.raises(DeviceError, match=r"^unknown device 'tpu'; allowed: cpu, cuda"):
        corpus.run(["a text"], out, device="tpu", progress=False)
    with pytest.raises(DeviceError, match=r"^unknown dtype 'float64'; allowed"):
        corpus.run(["a text"], out, dtype="float64", progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match=r"^device 'cuda': this machine has no CUDA GPU"):
            corpus.run(["a text"], out, device="cuda", progress=False)
    with pytest.raises(InvalidInputError, match=r"^dtype= is only for a model given by name"):
        corpus.run(["a text"], out, model=minilm, dtype="bfloat16", progress=False)
    with pytest.raises(InvalidInputError, match=r"^gpus_per_actor applies to backend='ray' only"):
        corpus.run(["a text"], out, gpus_per_actor=1, progress=False)
    assert not out.exists()
    # a model given by name in bfloat16: the store's settings say so
    store = corpus.run(
        ["The cat sat on the mat."], out, dtype="bfloat16", layers=[0], heads=[0], progress=False
    )
    assert store.settings.dtype == "bfloat16" and store.counts()["ok"] == 1
