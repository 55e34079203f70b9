"""Corpora: stream thousands of texts into a resumable Parquet store and query it with DuckDB.

>>> from attntopo import corpus
>>> store = corpus.run("texts.txt", out="store", sets=("js",))        # doctest: +SKIP
>>> store.counts()["ok"]                                              # doctest: +SKIP
>>> store.sql('SELECT avg("L0H0.js.h0.total_persistence") FROM corpus')  # doctest: +SKIP

``docs/corpus.md`` shows it end to end.  The command line: ``attntopo corpus INPUT --out STORE``
and ``attntopo query STORE "SQL"``.

The pieces (stable interfaces, shared by both engines)
------------------------------------------------------
:func:`open_input` (``_input``)
    Scans an input once (encoding, columns, duplicate ids, empty texts, fingerprint) and
    returns a :class:`CorpusInput`; ``input.batches(batch_size, skip=set_of_batches)``
    streams ``(k, pyarrow.Table)`` pairs with columns ``id`` (string), ``row`` (int64),
    ``text`` (string), ``answer`` (string; with ``answer_column``: (prompt, answer) pairs) and
    the carried columns.  Batch ``k`` holds the non-empty texts
    ``k * batch_size`` … ``(k + 1) * batch_size − 1``: the same texts on every run.
:class:`CorpusSettings`, :func:`make_settings` (``_settings``)
    Frozen, picklable record of everything that decides the numbers (model and its files'
    hash, attntopo version, metric, maxdim, sets and their parameters, layers, heads,
    keep_diagrams, on_long, batch_size, persistence engine); ``to_manifest()`` /
    ``from_manifest()``; :func:`check_same_settings` raises one line naming the first
    differing setting.
:class:`BatchWorker` (``_work``)
    ``BatchWorker(settings, n_jobs=None, model=None)`` loads the model once (checking its
    hash against the settings); ``worker(table) -> pyarrow.Table`` returns one store row per
    input row (:func:`output_schema`), never raising for one bad text (a ``failed`` row).
    Only ``settings`` crosses a process boundary: a Ray actor constructs its own worker.
:class:`StoreReader`, :func:`open_store` (``_store``)
    The folder: ``manifest.json``, ``parts/part-NNNNNNNN.parquet`` (one per batch),
    ``parts.sha256`` (each part's SHA-256 as written; ``verify()``), ``errors.jsonl``, read:
    ``done_batches()``, ``done_ids()``, ``counts()``, ``to_arrow()``, ``to_pandas()``,
    ``diagrams(id)``, ``sql("SELECT … FROM corpus")`` (DuckDB; the view is named
    :data:`TABLE`).  A reader has no method that writes.
:class:`StoreWriter`, :func:`lock_store` (``_writer``)
    What a run writes with: ``StoreWriter.create(...)`` or ``StoreWriter(reader, lock=lock)``;
    ``writer.write_part(k, table)`` (atomic), ``verify()`` (records the checksums of parts
    whose own checksums hold), ``write_errors()``, ``write_checksums()``,
    ``update_manifest(...)``; ``writer.store`` is its reader.
:func:`run` (``_local``)
    Steps 1–4 are :func:`prepare` (→ :class:`Prepared`: store, input, settings, model,
    ``todo`` batches, the store's lock); the engine writes the parts of ``prep.todo``; then
    ``finish(prep)`` rewrites ``errors.jsonl``, releases the lock and returns the store.

The Ray engine
--------------
``backend="ray"`` imports ``attntopo.corpus._ray`` lazily and calls
``run_ray(prep, progress=reporter, ray_address=None | "host:port")``, which must write
``prep.writer.write_part(k, rows)`` for every ``k`` in ``prep.todo`` (rows from
``BatchWorker(prep.settings, n_jobs=1)`` applied to the table of batch ``k`` of
``prep.input.batches(prep.settings.batch_size, skip=prep.store.done_batches())``), call
``progress.advance(rows.num_rows)`` once per batch, and return ``None``.  Same batches, same
worker, same part files: a Ray store equals a local store row for row.
"""

from ._input import (
    INPUT_FORMATS,
    PAIR_COLUMNS,
    RESERVED_COLUMNS,
    CorpusInput,
    open_input,
    record_sha256,
    text_sha256,
)
from ._local import BACKENDS, finish, run
from ._prepare import Prepared, prepare
from ._settings import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CORPUS_SETS,
    ON_LONG,
    CorpusSettings,
    check_same_settings,
    first_difference,
    make_settings,
    model_fingerprint,
)
from ._sql import QUERY_MEMORY_LIMIT, check_memory_limit
from ._store import CHECKSUMS, ERRORS, MANIFEST, PARTS, TABLE, StoreReader, open_store, part_name
from ._work import (
    DIAGRAM_COLUMNS,
    STATUS_FAILED,
    STATUS_OK,
    STATUS_SKIPPED,
    BatchWorker,
    check_lengths,
    feature_columns,
    output_schema,
)
from ._writer import StoreLock, StoreWriter, check_store_path, lock_store

__all__ = [
    "BACKENDS",
    "BatchWorker",
    "CHECKSUMS",
    "CorpusInput",
    "CorpusSettings",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CORPUS_SETS",
    "DIAGRAM_COLUMNS",
    "ERRORS",
    "INPUT_FORMATS",
    "MANIFEST",
    "PARTS",
    "QUERY_MEMORY_LIMIT",
    "ON_LONG",
    "PAIR_COLUMNS",
    "Prepared",
    "RESERVED_COLUMNS",
    "STATUS_FAILED",
    "STATUS_OK",
    "STATUS_SKIPPED",
    "StoreLock",
    "StoreReader",
    "StoreWriter",
    "TABLE",
    "check_lengths",
    "check_memory_limit",
    "check_same_settings",
    "check_store_path",
    "feature_columns",
    "finish",
    "first_difference",
    "lock_store",
    "make_settings",
    "model_fingerprint",
    "open_input",
    "open_store",
    "output_schema",
    "part_name",
    "prepare",
    "record_sha256",
    "run",
    "text_sha256",
]
