""":func:`run`: a corpus into a store, resumably; the local engine (the shared preparation,
steps 1–4, is :func:`~attntopo.corpus._prepare.prepare`).

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
   (:func:`~attntopo.corpus._prepare._prepare_append`: its entry in the manifest's
   ``inputs``, its ids stored before skipped, its batches numbered after the existing parts);
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
import time
from typing import Any, Iterator

from .._progress import NO_PROGRESS, Reporter, check_progress, make_reporter, progress_wanted
from .._validation import check_choice, check_positive_int
from ..errors import DiskFullError, InvalidInputError, MissingDependencyError
from ._prepare import Prepared, prepare
from ._settings import DEFAULT_BATCH_SIZE, DEFAULT_CORPUS_SETS, check_prompt_set
from ._store import StoreReader
from ._work import BatchWorker

__all__ = ["run", "BACKENDS", "finish", "log"]

#: Backends of :func:`run` (where a corpus runs).
BACKENDS: tuple[str, ...] = ("local", "ray")
#: Log lines of a run (``INFO``: one line every ``log_every`` batches and at the end).
log = logging.getLogger("attntopo.corpus")


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
        :func:`attntopo.features.features` takes ``(prompt, answer)`` (the ``prompt`` and
        ``lookback`` sets need pairs); the store keeps the prompt in ``text`` and the answer in
        ``answer``, with ``answer_sha256`` beside ``text_sha256``.  Part of the settings
        (``pairs``).
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
