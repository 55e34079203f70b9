""":func:`run`: a corpus into a store, resumably; the local engine and the shared preparation.

The steps (shared by both backends; ``backend="ray"`` hands step 5 to
:func:`attntopo.corpus._ray.run_ray`):

1. check the arguments and the STORE path (a file or an unwritable place: one line, nothing
   written);
2. scan the input (:func:`~attntopo.corpus.open_input`: encodings, columns, duplicate ids —
   every input error comes before any work);
3. take the store's lock (:func:`~attntopo.corpus.lock_store`, creating the folder if
   needed) before reading its manifest: another run holding it is one line, nothing changed;
4. load the model and make the settings (:func:`~attntopo.corpus.make_settings`); open the
   store: an existing one must have the same settings and the same input (else one line
   naming the difference), and its part files are checked; with ``on_long="error"`` every
   text is tokenized first; then (all checks passed) ``new_store`` clears the old store and
   a new store gets its manifest; ``append`` adds another input to a finished store instead
   (:func:`_prepare_append`: its entry in the manifest's ``inputs``, its ids stored before
   skipped, its batches numbered after the existing parts);
5. for every batch without a part file: :class:`~attntopo.corpus.BatchWorker` → one part,
   written atomically;
6. rewrite ``errors.jsonl`` and return the :class:`~attntopo.corpus.StoreReader`.

Steps 4–6 write through a :class:`~attntopo.corpus.StoreWriter` (``Prepared.writer``); what
:func:`run` returns is its reader, which cannot write.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .._progress import NO_PROGRESS, Reporter, check_progress, make_reporter, progress_wanted
from .._validation import check_bool, check_choice, check_device, check_dtype, check_positive_int
from ..errors import DiskFullError, InvalidInputError, MissingDependencyError, ResultFormatError
from ._input import CorpusInput, open_input
from ._settings import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CORPUS_SETS,
    ON_LONG,
    CorpusSettings,
    check_before_loading,
    check_prompt_set,
    check_same_settings,
    make_settings,
)
from ._store import MANIFEST, OWN_FILE, StoreReader
from ._work import BatchWorker, check_lengths, feature_columns, output_schema
from ._writer import StoreLock, StoreWriter, can_start_over, check_store_path, lock_store

__all__ = ["run", "BACKENDS", "prepare", "Prepared", "finish", "log"]

#: Backends of :func:`run` (where a corpus runs).
BACKENDS: tuple[str, ...] = ("local", "ray")
#: Log lines of a run (``INFO``: one line every ``log_every`` batches and at the end).
log = logging.getLogger("attntopo.corpus")


@dataclass
class Prepared:
    """What steps 1–4 of :func:`run` produce, for an engine to work on.

    Attributes
    ----------
    writer : StoreWriter
        The writer of the opened (or new) store: engines write ``writer.write_part(k, rows)``.
    store : StoreReader
        Its reader (``writer.store``); ``store.done_batches()`` are the batches to skip.
    input : CorpusInput
        The scanned input (``input.batches(settings.batch_size, skip=…)`` streams the rest).
    settings : CorpusSettings
        The run's settings (the same as the store's).
    model : AttentionModel or ModelDescription
        The model loaded in this process, or (``prepare(weights=False)``: the Ray backend) its
        description without weights.
    todo : list of int
        Batches without a part file, in order.
    lock : StoreLock
        The store's lock, held from before the manifest was read until :func:`finish`
        (:func:`~attntopo.corpus.lock_store`).
    """

    writer: StoreWriter
    input: CorpusInput
    settings: CorpusSettings
    model: Any
    todo: list[int]
    lock: StoreLock | None
    #: the manifest's entry of the input this run appends or continues (None: a store of one
    #: input, resumed or made)
    appending: dict | None = None

    @property
    def store(self) -> StoreReader:
        """The store's reader (the writer's)."""
        return self.writer.store


def prepare(
    texts: Any,
    out: Any,
    *,
    model: Any = "minilm",
    new_store: bool = False,
    append: bool = False,
    text_column: str = "text",
    id_column: str | None = None,
    answer_column: str | None = None,
    input_format: str = "auto",
    encoding: str = "utf-8",
    device: str | None = None,
    dtype: str | None = None,
    weights: bool = True,
    **settings_options: Any,
) -> Prepared:
    """Steps 1–4 of :func:`run` (module docstring); the caller must :func:`finish` it.

    ``settings_options`` are :func:`~attntopo.corpus.make_settings`'s keyword arguments
    (``sets``, ``layers``, ``heads``, ``keep_diagrams``, ``on_long``, ``batch_size``, …);
    ``device`` and ``dtype`` are :func:`attntopo.load_model`'s, for a model given by name;
    ``answer_column`` reads (prompt, answer) pairs (the ``pairs`` setting).
    ``weights=False`` (the Ray backend, whose actors load the model): a model given by name
    is only described (:func:`attntopo.models.describe_model`: its tokenizer and
    configuration, which the settings and the length check need), and ``Prepared.model`` is
    that description.
    """
    from ..models import AttentionModel, ModelDescription, describe_model, load_model

    device, dtype, new_store, append = _check_options(
        model, device, dtype, new_store, append, answer_column, settings_options
    )
    path = check_store_path(out)
    inp = open_input(
        texts,
        text_column=text_column,
        id_column=id_column,
        input_format=input_format,
        encoding=encoding,
        answer_column=answer_column,
    )
    lock = None
    try:
        if inp.total == 0:
            what = (
                f"{inp.n_records} empty record{'s' if inp.n_records != 1 else ''}"
                if inp.n_records
                else "nothing"
            )
            raise InvalidInputError(
                f"{inp.name}: no texts to compute (it holds {what}): no store was made or changed"
            )
        # the lock first: nothing of the store is read to be changed, nor changed, without it
        # (docs/corpus.md, "Who writes when"); a run that cannot have it changes nothing
        lock = lock_store(path)
        check_store_path(path)  # again under the lock: what another run did before is settled
        store, unusable = _open_existing(path, new_store)
        if store is not None and not new_store:  # a refusal from the manifest, not after a load
            check_before_loading(
                store.settings,
                store.manifest.get("model"),
                f"STORE {str(path)!r}",
                dtype=dtype,
                **settings_options,
            )
        m = (
            model
            if isinstance(model, (AttentionModel, ModelDescription))
            else load_model(model, device=device, dtype=dtype)
            if weights
            else describe_model(model, device=device, dtype=dtype)
        )
        settings = make_settings(m, **settings_options)
        schema = output_schema(settings, inp.schema)
        info = _input_info(inp, text_column, id_column, answer_column)
        entry = None
        if store is not None and not new_store:
            check_same_settings(store.settings, settings, f"STORE {str(path)!r}")
            old = store.manifest.get("input", {}).get("fingerprint")
            entry = _appended_input(store, inp, settings, schema, append)
            if entry is None and old != inp.fingerprint:
                raise InvalidInputError(
                    f"STORE {str(path)!r} was made from another input (fingerprint "
                    f"{str(old)[:19]}…, this input {inp.fingerprint[:19]}…): --append "
                    "(append=True) adds its new texts, another STORE or --new-store "
                    "(new_store=True) starts over"
                )
        if settings.on_long == "error":
            check_lengths(m, inp.batches(settings.batch_size))
        if (store is not None or unusable) and new_store:
            _clear(path)  # every check passed: only now is the old store removed
            store = None
        if store is None:
            from ..analyses.building import package_versions

            writer = StoreWriter.create(
                path,
                settings,
                schema,
                info,
                feature_columns(settings),
                extra={"model": m.info(), "versions": package_versions()},
                lock=lock,
            )
        else:
            writer = StoreWriter(store, lock=lock)
        writer.clean_temporary()
        _drop_damaged(writer)
        store = writer.store.refresh()
        done = store.done_batches()
        if entry is not None:
            return _prepare_append(writer, inp, settings, m, lock, entry)
        todo = _todo(path, inp, settings.batch_size, done)
        return Prepared(writer, inp, settings, m, todo, lock)
    except BaseException:
        if lock is not None:
            lock.release(remove_if_empty=True)
        inp.close()
        raise


def _check_options(
    model: Any,
    device: Any,
    dtype: Any,
    new_store: Any,
    append: Any,
    answer_column: str | None,
    settings_options: dict,
) -> tuple[Any, Any, bool, bool]:
    """Step 1's checks of the arguments, before the input is read or the store touched:
    ``(device, dtype, new_store, append)`` checked; ``settings_options["pairs"]`` set."""
    from ..models import AttentionModel, ModelDescription, check_selection

    check_choice(
        settings_options.get("on_long", "truncate"), "on_long", ON_LONG, what="on_long value"
    )
    check_positive_int(
        settings_options.get("batch_size", DEFAULT_BATCH_SIZE), "batch_size", allow_none=False
    )
    if isinstance(model, (AttentionModel, ModelDescription)):
        _only_by_name(device, dtype)
    else:  # before the input is read or the store touched: a device this machine lacks is one line
        device = check_device(device)
        dtype = check_dtype(dtype, device)
    new_store = check_bool(new_store, "new_store")
    append = check_bool(append, "append")
    if append and new_store:
        raise InvalidInputError(
            "append and new_store exclude each other: --append adds texts to a store, "
            "--new-store starts it over"
        )
    settings_options["pairs"] = answer_column is not None
    given = settings_options.get("settings")
    if given is not None:
        check_prompt_set(given.sets, settings_options["pairs"])
    # layers and heads against the model's configuration, before its weights load
    check_selection(
        model,
        **{
            k: settings_options.get(k)
            if settings_options.get(k) is not None
            else getattr(given, k, None)
            for k in ("layers", "heads")
        },
    )
    return device, dtype, new_store, append


def _open_existing(path: Path, new_store: bool) -> tuple[StoreReader | None, bool]:
    """The store at ``path`` if it has a manifest, and whether it is one that cannot be used
    (refused, unless ``new_store`` may start it over)."""
    existing = (path / MANIFEST).is_file()
    store, unusable = None, False
    if existing:
        try:
            store = StoreReader(path)  # refuses what is not a corpus store
        except ResultFormatError as e:
            # a manifest that cannot be used: --new-store starts over (what the refusal
            # says to do), where the folder is a store's and holds nothing else
            if not new_store:
                raise
            if not can_start_over(path):
                what = str(e).split("; --new-store")[0]
                raise ResultFormatError(
                    f"{what}: --new-store starts over only a folder that holds a store's own "
                    "files (manifest.json, parts/, parts.sha256, errors.jsonl) and no other "
                    "program's manifest: give another STORE"
                ) from None
            unusable = True
    return store, unusable


def _input_info(
    inp: CorpusInput, text_column: str, id_column: str | None, answer_column: str | None
) -> dict:
    """The manifest's record of the input."""
    return {
        "name": inp.name if inp.name != "stdin" else "stdin",
        "format": inp.format,
        "fingerprint": inp.fingerprint,
        "total": inp.total,
        "n_empty": inp.n_empty,
        "n_records": inp.n_records,
        "carried": list(inp.carried),
        "text_column": text_column,
        "id_column": id_column,
        **({"answer_column": answer_column} if answer_column is not None else {}),
    }


def _todo(path: Path, inp: CorpusInput, batch_size: int, done: set[int]) -> list[int]:
    """The input's batches without a part file; a part beyond the input's batches is refused."""
    todo = [k for k in range(inp.batch_count(batch_size)) if k not in done]
    extra = sorted(done - set(range(inp.batch_count(batch_size))))
    if extra:
        from ._store import part_name

        raise InvalidInputError(
            f"STORE {str(path)!r} holds {part_name(extra[0])}, a batch this input does not have"
        )
    return todo


def _appended_input(
    store: StoreReader, inp: CorpusInput, settings: CorpusSettings, schema: Any, append: bool
) -> dict | None:
    """The manifest entry of ``inp`` when this run appends it to ``store`` or continues an
    append of it (a new entry, recorded with status ``"appending"``); None when the store
    holds one input and this is it (the plain resume), or when this is another input without
    ``append`` (refused by the caller)."""
    inputs = store.inputs()
    same = [e for e in inputs if e.get("fingerprint") == inp.fingerprint]
    if same:
        return None if len(inputs) == 1 else same[0]
    if not append:
        return None
    where = f"STORE {str(store.path)!r}"
    c = store.counts()
    if c["remaining"] or any(e.get("status") == "appending" for e in inputs):
        last = inputs[-1].get("name", "its input")
        raise InvalidInputError(
            f"{where} is unfinished ({c['done']} of {c['total']} texts stored): run it again with "
            f"{last} to finish it before appending {inp.name}"
        )
    if schema.remove_metadata() != store.schema.remove_metadata():
        theirs = [f.name for f in store.schema if f.name not in set(store.feature_columns)]
        ours = [f.name for f in schema if f.name not in set(store.feature_columns)]
        raise InvalidInputError(
            f"cannot append {inp.name} to {where}: its columns differ from the store's "
            f"(store: {', '.join(theirs)}; input: {', '.join(ours)})"
        )
    import datetime as _dt
    import hashlib

    first_part = max(
        [max(store.done_batches(), default=-1) + 1]
        + [
            int(e.get("first_part", 0)) + -(-int(e.get("total", 0)) // settings.batch_size)
            for e in inputs
        ]
    )
    entry = {
        "name": inp.name,
        "format": inp.format,
        "fingerprint": inp.fingerprint,
        "total": inp.total,
        "n_empty": inp.n_empty,
        "n_records": inp.n_records,
        "text_column": inp.text_column,
        "id_column": inp.id_column,
        **({"answer_column": inp.answer_column} if inp.answer_column is not None else {}),
        "first_part": first_part,
        "already": None,
        "status": "appending",
        "added": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    source = getattr(inp, "_path", None)
    if source is not None:
        h = hashlib.sha256()
        with open(source, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        entry.update(size=os.path.getsize(source), sha256=h.hexdigest())
    return entry


def _prepare_append(
    writer: StoreWriter,
    inp: CorpusInput,
    settings: CorpusSettings,
    m: Any,
    lock: StoreLock,
    entry: dict,
) -> Prepared:
    """Step 4 of an append (new or continued): the ids stored before it are read with their
    text hashes; an id of the input stored with another text is refused (one line naming it);
    the input's batch ``k`` becomes part ``first_part + k`` without the rows whose id is
    stored before it (a batch left empty writes no part).  The same on every run of the same
    append, so an interrupted append continues exactly where its parts end."""
    from ._input import record_sha256

    store = writer.store
    first = int(entry["first_part"])
    before = store.stored_hashes(before=first)
    already = 0
    empty: set[int] = set()
    for k, table in inp.batches(settings.batch_size):
        n_old = 0
        answers = (
            table["answer"].to_pylist()
            if "answer" in table.column_names
            else [None] * table.num_rows
        )
        for rid, text, answer in zip(table["id"].to_pylist(), table["text"].to_pylist(), answers):
            old = before.get(rid)
            if old is None:
                continue
            n_old += 1
            new = record_sha256(text, answer=answer)
            if old != new:
                what = "text" if answer is None else "prompt or answer"
                raise InvalidInputError(
                    f"cannot append {inp.name} to STORE {str(store.path)!r}: id {rid!r} is stored "
                    f"with another {what} (SHA-256 {old[:12]}…, this input's {new[:12]}…): "
                    "nothing was changed"
                )
        already += n_old
        if n_old == table.num_rows:
            empty.add(k)
    entry = {**entry, "already": already}
    inputs = store.inputs()
    at = [i for i, e in enumerate(inputs) if e.get("fingerprint") == entry["fingerprint"]]
    if not at:
        inputs.append(entry)
    else:
        inputs[at[0]] = entry
    if inputs != store.manifest.get("inputs"):
        writer.update_manifest(inputs=inputs)
    done = store.done_batches()
    todo = [
        first + k
        for k in range(inp.batch_count(settings.batch_size))
        if k not in empty and first + k not in done
    ]
    return Prepared(writer, _AppendInput(inp, first, before), settings, m, todo, lock, entry)


class _AppendInput:
    """An input appended to a store (:func:`_prepare_append`), seen by the engines as an
    input whose batch ``k`` is part ``first_part + k`` without the rows stored before it."""

    def __init__(self, inp: CorpusInput, first_part: int, before: dict[str, str]) -> None:
        from ._input import _pa

        self._inp, self.first_part = inp, first_part
        self._before = _pa().array(sorted(before), type=_pa().string())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inp, name)

    def batches(self, batch_size: int, skip: Any = frozenset()) -> Iterator[tuple[int, Any]]:
        import pyarrow.compute as pc

        own = {k - self.first_part for k in skip if k >= self.first_part}
        for k, table in self._inp.batches(batch_size, skip=own):
            if len(self._before):
                table = table.filter(pc.invert(pc.is_in(table["id"], value_set=self._before)))
            if table.num_rows:
                yield self.first_part + k, table

    def close(self) -> None:
        self._inp.close()


def _drop_damaged(writer: StoreWriter) -> None:
    """Remove every damaged part (:meth:`StoreWriter.verify`), saying which, so that the run
    computes its batch again: a part is trusted as done only after its bytes are checked."""
    import warnings

    from ..errors import DamagedPartWarning
    from ._store import part_name

    store = writer.store
    for k, why in sorted(writer.verify().items()):
        writer.remove_part(k)
        warnings.warn(
            DamagedPartWarning(
                f"STORE {str(store.path)!r}: {part_name(k)} "
                f"was damaged ({why}): batch {k} is recomputed"
            ),
            stacklevel=2,
        )
    if store.unchecked:
        n, first = len(store.unchecked), part_name(store.unchecked[0])
        warnings.warn(
            DamagedPartWarning(
                f"STORE {str(store.path)!r}: {n} part{'s' if n != 1 else ''} ({first}"
                f"{', …' if n > 1 else ''}) {'have' if n != 1 else 'has'} neither a recorded "
                "SHA-256 nor page checksums (written before attntopo wrote them): they read in "
                "full, but a changed value in them cannot "
                "be seen; --new-store recomputes the store"
            ),
            stacklevel=2,
        )


def _only_by_name(device: Any, dtype: Any) -> None:
    given = [f"{k}=" for k, v in (("device", device), ("dtype", dtype)) if v is not None]
    if given:
        raise InvalidInputError(
            f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} only for a model given by "
            f"name; a loaded model runs where and as it was loaded"
        )


def _clear(path: Path) -> None:
    """Remove a corpus store's own files (the manifest first: from then on a reader sees no
    store, never the old manifest with the new parts), under the store's lock."""
    from ._store import PARTS

    os.unlink(path / MANIFEST)
    for entry in os.listdir(path):
        if OWN_FILE.match(entry):
            os.unlink(path / entry)
    parts = path / PARTS
    if parts.is_dir():  # format version 2: the parts' own folder, then the folder itself
        for entry in os.listdir(parts):
            if OWN_FILE.match(entry):
                os.unlink(parts / entry)
        with contextlib.suppress(OSError):  # other files in it: left, and reported by the creation
            os.rmdir(parts)


def finish(prep: Prepared) -> StoreReader:
    """Step 6 of :func:`run`: the error log, the lock released, the store's reader re-read."""
    try:
        store, writer = prep.store.refresh(), prep.writer
        writer.write_errors()
        writer.write_checksums()
        if (
            prep.appending is not None
            and prep.appending.get("status") == "appending"
            and not store.counts()["remaining"]
        ):
            inputs = store.inputs()
            inputs[-1] = {**inputs[-1], "status": "done"}
            writer.update_manifest(inputs=inputs)
        store = store.refresh()
        if prep.appending is not None:
            store.appended = next(
                e for e in store.inputs() if e.get("fingerprint") == prep.appending["fingerprint"]
            )
        return store
    finally:
        _release(prep)


def _release(prep: Prepared) -> None:
    """The lock released (once), the writer left without it, the input closed."""
    if prep.lock is not None:
        prep.lock.release()
    prep.lock = None
    prep.writer.lock = None
    prep.input.close()


# ------------------------------------------------------------------ progress
class _LogReporter(Reporter):
    """Progress off, but one ``INFO`` line on the ``attntopo.corpus`` logger every
    ``every`` batches (what the command line prints when stderr is not a terminal)."""

    def __init__(self, every: int) -> None:
        super().__init__("corpus")
        self.every = every
        self._batches = 0
        self._t0 = time.monotonic()
        self._done0 = 0

    def skip_done(self, k: int) -> None:
        """Rows already in the store: counted as done, not in the rate."""
        self.done += k
        self._done0 = self.done

    def advance(self, k: int = 1) -> None:
        """One batch of ``k`` rows is done (a log line every ``every`` batches)."""
        super().advance(k)
        self._batches += 1
        if self._batches % self.every == 0:
            log.info(
                _rate_line(
                    self.done, self.total, self.done - self._done0, time.monotonic() - self._t0
                )
            )


def _rate_line(done: int, total: int, new: int, seconds: float) -> str:
    rate = new / seconds if seconds > 0 else 0.0
    left = (total - done) / rate if rate > 0 else float("nan")
    eta = (
        "?"
        if left != left
        else f"{int(left) // 3600}:{int(left) // 60 % 60:02d}:{int(left) % 60:02d}"
    )
    pct = 100.0 * done / total if total else 100.0
    return f"corpus: {done}/{total} texts ({pct:.1f} %), {rate:.2f} texts/s, eta {eta}"


def _bar(progress: Any, log_every: int) -> Reporter:
    """The reporter of ``progress=``: a rich bar with texts/s, a callback, log lines or nothing."""
    progress = check_progress(progress)
    if progress is None and not progress_wanted(None):
        return _LogReporter(log_every) if log_every else NO_PROGRESS
    if progress is None or progress is True:
        return _RateBar()
    return make_reporter(progress, description="corpus")


class _RateBar(Reporter):
    """A transient rich bar: texts done / total, texts/s, elapsed time, ETA."""

    def __init__(self) -> None:
        super().__init__("corpus")
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class _Rate(ProgressColumn):
            def render(self, task):  # noqa: D401 - rich's interface
                return Text(f"{task.speed:.2f} texts/s" if task.speed else "… texts/s")

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _Rate(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
            redirect_stdout=False,
        )
        self._task = self._bar.add_task("corpus", total=None)
        self._started = False

    def _emit(self) -> None:
        if self._closed:
            return
        if not self._started:
            self._bar.start()
            self._started = True
        self._bar.update(
            self._task, completed=self.done, total=self.total or None, description=self.label
        )

    def skip_done(self, k: int) -> None:
        """Rows already in the store: counted as done without changing the rate."""
        self.done += k
        self._bar.reset(self._task, completed=self.done, total=self.total or None)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._started:
                self._bar.stop()


# ------------------------------------------------------------------ the entry point
def run(
    texts: Any,
    out: Any,
    *,
    model: Any = "minilm",
    settings: Any = None,
    keep_diagrams: bool = False,
    keep_text: bool = True,
    backend: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_long: str = "truncate",
    text_column: str = "text",
    id_column: str | None = None,
    answer_column: str | None = None,
    input_format: str = "auto",
    encoding: str = "utf-8",
    new_store: bool = False,
    append: bool = False,
    n_jobs: int | None = None,
    ray_address: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    gpus_per_actor: float | None = None,
    progress: Any = None,
    log_every: int = 10,
    **setting_values: Any,
) -> StoreReader:
    """Compute the features of every text of a corpus into a resumable Parquet store.

    Parameters
    ----------
    texts : str, path, list of str, pandas.DataFrame or pyarrow.Table
        A text file (one text per line), JSONL, CSV/TSV or Parquet file, ``"-"`` for stdin,
        or texts in memory (see :func:`~attntopo.corpus.open_input`).
    out : str or path
        The STORE folder: new, empty, or a store made by an earlier run with the same
        settings and input (which is then continued).
    model : str or AttentionModel
        Alias (``"minilm"``, ``"smollm2"``), folder, hub id or a loaded model.  With
        ``backend="ray"``, a model given by name is loaded by the actors only.
    settings : FeatureSettings, optional
        The feature settings in one record (:class:`attntopo.features.FeatureSettings`: sets,
        layers and heads, metric, the sets' parameters, drop_special, the persistence engine).
        A store keeps every bar (``min_persistence=0``).
    **setting_values
        The same settings as keywords (``sets=("js", "graph")``, ``layers=[0]``,
        ``metric="hellinger"``, ``engine="ripser"``, …), checked against the one list of them
        (another name is a TypeError); one given beside ``settings`` must agree with it.
        ``sets`` defaults to ``("js",)`` here (any of :data:`attntopo.features.FEATURE_SETS`;
        those of input ``"pair"``, such as ``prompt``, for an input of pairs:
        ``answer_column``).  The metric decides the kept diagrams too.
    keep_diagrams : bool
        Also store each head's diagram (H0, H1) of the token distances as list columns
        (:meth:`StoreReader.diagrams`).
    keep_text : bool
        Store each text itself (column ``text``), so that queries can show it (default); False
        keeps only its SHA-256 (a corpus that must not be copied).  Part of the settings.
    backend : {"local", "ray"}, default "local"
        ``"local"``: this process (persistence on ``n_jobs`` worker processes); ``"ray"``:
        Ray Data with an actor pool (needs ``attntopo[ray]``; ``ray_address`` joins a cluster).
    batch_size : int
        Texts per batch: one forward pass and one part file.  Part of the settings.
    on_long : {"truncate", "skip", "error"}
        Texts longer than the model's context: cut (counted, ``truncated`` column), skip
        (a ``skipped`` row, listed in ``errors.jsonl``) or stop before any work.
    text_column, id_column, input_format, encoding
        How to read the input (:func:`~attntopo.corpus.open_input`).
    answer_column : str, optional
        Read (prompt, answer) pairs (JSONL, CSV/TSV, Parquet, DataFrame, Arrow): the text column
        is the prompt, this column its answer.  Each pair goes to the feature sets exactly as
        :func:`attntopo.features.features` takes ``(prompt, answer)`` (the ``prompt`` set needs
        pairs); the store keeps the prompt in ``text`` and the answer in ``answer``, with
        ``answer_sha256`` beside ``text_sha256``.  Part of the settings (``pairs``).
    new_store : bool
        Remove an existing store at ``out`` (its own files only) and start over.
    append : bool
        Add the texts of this input to the existing store ``out`` (same settings; the store
        finished): texts whose id the store holds already are skipped (counted; the same id
        with another text is refused, naming it), the rest become new parts, and the manifest
        records the input (``StoreReader.inputs()``).  Running the same append again continues it.
        On a new STORE it makes the store.
    (``engine=`` is the persistence engine, as in :func:`attntopo.features.features`; where
    the corpus runs is ``backend=``.)
    n_jobs : int, optional
        Persistence worker processes of the local engine (None: all CPUs).
    ray_address : str, optional
        Address of a running Ray cluster (``backend="ray"``); without it a local Ray is
        started and shut down.
    device : {"cpu", "cuda", "cuda:N", "mps", "auto"}, optional
        Where a model given by name runs (``"cpu"`` by default; ``"auto"``: the first GPU
        when there is one).  With ``backend="ray"`` the driver loads no weights (it reads the
        model's tokenizer and configuration for the settings and the length checks); the
        actors load the model, where ``gpus_per_actor`` puts them.
    dtype : {"float32", "float16", "bfloat16"}, optional
        The model's weights (``"float32"`` by default); part of the settings, as it changes
        the numbers.
    gpus_per_actor : float, optional
        ``backend="ray"`` only: GPUs Ray gives each actor (its ``num_gpus`` resource; a
        fraction in (0, 1) shares a GPU between actors, above 1 a whole number).  Each actor
        then loads the model on its GPU; the number of actors is capped by the cluster's
        GPUs.  Default: none (the actors run on CPUs).
    progress : None, bool or callable
        ``None``: a bar on a terminal (texts done / total, texts/s, ETA), else an ``INFO``
        line on the ``attntopo.corpus`` logger every ``log_every`` batches; ``True``/``False``;
        or ``callback(done, total, stage)``.  The local engine counts texts as each chunk of a
        batch is done (a batch's texts are computed in chunks by length,
        :func:`~attntopo.corpus._work.length_chunks`), not only when its part is written.
    log_every : int
        Batches between log lines when there is no bar (0: none).

    Returns
    -------
    StoreReader
        The finished store, read (:meth:`~StoreReader.counts`, :meth:`~StoreReader.sql`,
        :meth:`~StoreReader.to_pandas`).

    Raises
    ------
    InvalidInputError
        Bad arguments, input errors (naming file and line), a STORE that is a file or not
        writable, a store made with other settings or another input (naming the setting),
        a text too long with ``on_long="error"``.
    ResultFormatError
        A corrupt or foreign file among the store's parts (named).
    MissingDependencyError
        pyarrow/duckdb (``attntopo[corpus]``) or, for ``backend="ray"``, ray is missing.
    """
    from ..features import FeatureSettings

    backend = (
        "local"
        if backend is None
        else check_choice(backend, "backend", BACKENDS, what="corpus backend")
    )
    # the feature settings in one record, checked before anything is read or loaded
    if setting_values.get("engine") in BACKENDS:
        raise InvalidInputError(
            f"engine={setting_values['engine']!r}: engine= is the persistence engine; "
            f"where the corpus runs is backend={setting_values['engine']!r}"
        )
    if settings is None and setting_values.get("sets") is None:
        setting_values["sets"] = DEFAULT_CORPUS_SETS
    settings = FeatureSettings.resolve(settings, owner="corpus.run()", **setting_values)
    check_prompt_set(settings.sets, answer_column is not None)
    log_every = check_positive_int(log_every, "log_every", allow_none=False) if log_every else 0
    check_progress(progress)
    if backend == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise MissingDependencyError("backend='ray' needs ray: pip install 'attntopo[ray]'")
        # imported by name: the Ray engine module is optional (a missing one is a clear error)
        ray_engine = importlib.import_module(f"{__package__}._ray")
        run_ray = ray_engine.run_ray
        if ray_address is not None:
            # a bad address is one line before the model loads or the store is written
            ray_engine.check_ray_address(ray_address)
        gpus_per_actor = ray_engine.check_gpus_per_actor(gpus_per_actor)
        if not gpus_per_actor and isinstance(device, str) and device != "cpu" and device != "auto":
            raise InvalidInputError(
                f"device={device!r} with backend='ray': the actors have no GPU unless Ray gives "
                "them one; pass gpus_per_actor= (--gpus-per-actor), e.g. 1 or 0.5"
            )
    elif ray_address is not None:
        raise InvalidInputError("ray_address applies to backend='ray' only")
    elif gpus_per_actor is not None:
        raise InvalidInputError(
            "gpus_per_actor applies to backend='ray' only (the local backend runs on device=)"
        )
    with _full_disk_is_one_line(out):
        prep = prepare(
            texts,
            out,
            model=model,
            settings=settings,
            keep_diagrams=keep_diagrams,
            keep_text=keep_text,
            batch_size=batch_size,
            on_long=on_long,
            text_column=text_column,
            id_column=id_column,
            answer_column=answer_column,
            input_format=input_format,
            encoding=encoding,
            new_store=new_store,
            append=append,
            device=device,
            dtype=dtype,
            weights=backend
            != "ray",  # on Ray the actors load the model, the driver reads its files
        )
        try:
            reporter = _bar(progress, log_every)
            with reporter:
                reporter.add_total(
                    prep.store.counts()["total"] if prep.appending else prep.input.total
                )
                already = prep.store.n_rows()
                if isinstance(reporter, (_RateBar, _LogReporter)):
                    reporter.skip_done(already)
                else:
                    reporter.advance(already)
                reporter.stage("features")
                if backend == "ray":
                    run_ray(
                        prep,
                        progress=reporter,
                        ray_address=ray_address,
                        n_jobs=n_jobs,
                        gpus_per_actor=gpus_per_actor,
                    )
                else:
                    _run_local(prep, reporter, n_jobs)
        except BaseException:
            _release(prep)
            raise
        store = finish(prep)
    _warn_unknown(store)
    c = store.counts()
    log.info(
        "corpus: %d done, %d skipped (empty), %d skipped "
        "(too long), %d truncated, %d failed%s -> %s",
        c["ok"],
        c["skipped_empty"],
        c["skipped_long"],
        c["truncated"],
        c["failed"],
        f", {store.appended['already']} already in the store (skipped)" if store.appended else "",
        store.path,
        extra={"final": True},
    )
    return store


@contextlib.contextmanager
def _full_disk_is_one_line(out: Any) -> Iterator[None]:
    """A full file system (or quota) while the store is written: one line naming the store,
    what is kept and how to go on (:class:`~attntopo.errors.DiskFullError`), not an OSError.

    Nothing stored is lost: a part is written to a temporary file (removed when the write
    fails) and renamed only when complete, a checksum line torn by the failure is ignored, and
    the manifest is only ever replaced atomically (an append's entry); the lock is released, so the
    same command continues."""
    try:
        yield
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        try:
            kept = f" ({StoreReader(out).n_rows()} texts are stored)"
        except Exception:  # noqa: BLE001 - only a count for the message
            kept = ""
        raise DiskFullError(
            f"STORE {str(out)!r}: {e.strerror or 'No space left on device'}: nothing stored is "
            f"lost{kept}; free some space and run the same command again to continue"
        ) from None


def _warn_unknown(store: StoreReader) -> None:
    """One warning when texts held tokens the model's vocabulary lacks (``n_unknown``)."""
    import warnings

    from ..errors import UnknownTokensWarning, user_stacklevel

    # from the parts' summaries, like the counts (a DuckDB query over every part would hold
    # every footer at once)
    n = sum(summary["unknown"] for summary in store._summaries())
    if n:
        warnings.warn(
            UnknownTokensWarning(
                f"{n} text{'s' if n != 1 else ''} of the corpus hold{'' if n != 1 else 's'} "
                f"tokens that became the unknown token ({store.settings.model}'s vocabulary lacks "
                "them): see the n_unknown column",
                count=n,
                model=store.settings.model,
            ),
            stacklevel=user_stacklevel(),
        )


def _run_local(prep: Prepared, reporter: Reporter, n_jobs: int | None) -> None:
    """Step 5 in this process: one worker, batch after batch.

    A batch's persistence runs in the worker processes (fed by one background thread) while
    this thread runs the next batch's forward pass on the cores they leave (one torch thread
    on two cores) and its distances; at most two batches are alive at a time.  Parts are
    still written here, one at a time, in batch order, each atomically: a run killed at any
    moment leaves whole parts only, and a resumed run computes the rest.
    """
    if not prep.todo:
        return
    from concurrent.futures import ThreadPoolExecutor

    from ..features.pipeline import PERSISTENCE_SETS, threads_beside_workers

    st = prep.settings
    worker = BatchWorker(st, n_jobs=n_jobs, model=prep.model)
    skip = prep.store.done_batches()
    overlap = n_jobs != 1 and (
        st.keep_diagrams or any(s in PERSISTENCE_SETS for s in st.features.sets)
    )
    executor = ThreadPoolExecutor(1, thread_name_prefix="attntopo-corpus") if overlap else None
    submit = executor.submit if executor is not None else None
    threads = threads_beside_workers(n_jobs) if overlap else None
    pending: tuple[int, Any, list[int]] | None = None
    try:
        for k, table in prep.input.batches(st.batch_size, skip=skip):
            shown = [0]  # texts of this batch the bar already counts (its finished chunks)
            finish = worker.start(
                table, submit=submit, forward_threads=threads, done=_chunk_done(reporter, shown)
            )
            del table
            if pending is not None:
                _write(prep, reporter, *pending)
            pending = (k, finish, shown)
        if pending is not None:
            _write(prep, reporter, *pending)
            pending = None
    finally:
        pending = None  # an interrupted run drops the started batch: a resumed run computes it
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


def _chunk_done(reporter: Reporter, shown: list[int]) -> Any:
    """``BatchWorker.start``'s ``done``: a finished chunk of a batch moves the bar (texts,
    not a batch: a long text computed alone shows the rest of its batch as done)."""

    def done(k: int) -> None:
        shown[0] += k
        if isinstance(reporter, _LogReporter):  # its lines count batches, not chunks
            Reporter.advance(reporter, k)
        else:
            reporter.advance(k)

    return done


def _write(prep: Prepared, reporter: Reporter, k: int, finish: Any, shown: list[int]) -> None:
    """Finish batch ``k`` (waiting for its persistence) and write its part; the bar gets the
    batch's texts its chunks have not counted yet."""
    rows = finish()
    prep.writer.write_part(k, rows)
    reporter.advance(rows.num_rows - shown[0])
