"""A small corpus store without a model: real manifest and part files, made-up feature values
(for tests of reading a store: SQL, ``attntopo query``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from attntopo.corpus import (
    CorpusSettings,
    StoreReader,
    StoreWriter,
    feature_columns,
    open_input,
    output_schema,
)
from attntopo.features import FeatureSettings

SETTINGS = CorpusSettings(
    model="toy",
    model_hash="sha256:" + "1" * 64,
    revision=None,
    attntopo_version="0.0",
    features=FeatureSettings(
        sets=("js",), layers=(0,), heads=(0, 3), thresholds=(0.1,), scales=(0.5,), quantiles=(0.5,)
    ),
    keep_diagrams=False,
    batch_size=4,
)


def small_store(
    folder: Path, texts: list[str], seed: int = 0, *, settings: CorpusSettings = SETTINGS
) -> StoreReader:
    """A store of ``texts`` (every row ``ok``, features drawn from a seeded generator)."""
    inp = open_input(texts)
    schema = output_schema(settings, inp.schema)
    info = {"fingerprint": inp.fingerprint, "total": inp.total, "n_empty": 0}
    cols = feature_columns(settings)
    writer = StoreWriter.create(folder, settings, schema, info, cols)
    rng = np.random.default_rng(seed)
    for k, t in inp.batches(settings.batch_size):
        n = t.num_rows
        data = {
            "id": t["id"].combine_chunks(),
            "row": t["row"].combine_chunks(),
            "text": t["text"].combine_chunks(),
            "status": pa.array(["ok"] * n),
            **{c: pa.array(rng.random(n)) for c in cols},
        }
        cells = [data[f.name] if f.name in data else pa.nulls(n, f.type) for f in schema]
        writer.write_part(k, pa.Table.from_arrays(cells, schema=schema))
    return writer.store
