"""The work of one batch: texts in, store rows out, with the feature sets of
:mod:`attntopo.features`.

:class:`BatchWorker` is what every engine runs: the local engine calls one in its process,
the Ray engine builds one per actor (``map_batches(BatchWorker, fn_constructor_kwargs=
{"settings": settings}, batch_format="pyarrow")``).  Its constructor takes only the
picklable :class:`~attntopo.corpus.CorpusSettings` and loads the model itself (once).

Row status
----------
``ok``       features computed (``truncated`` says whether the text was cut to the context);
``skipped``  too long with ``on_long="skip"`` (no features; ``error`` says why);
``failed``   anything else went wrong for this text (``error``: the exception's type and
             message); the rest of its batch is computed text by text, so one bad row never
             costs its neighbours.
"""

from __future__ import annotations

import warnings
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidInputError, TextTooLongError, UnknownTokensWarning
from ._input import _pa, text_sha256
from ._settings import CorpusSettings, model_fingerprint

__all__ = [
    "BatchWorker",
    "output_schema",
    "feature_columns",
    "check_lengths",
    "STATUS_OK",
    "STATUS_SKIPPED",
    "STATUS_FAILED",
    "DIAGRAM_COLUMNS",
    "PACKED_FEATURES",
    "packed_schema",
    "unpack_features",
    "feature_arrays",
    "length_chunks",
    "CHUNK_ELEMENTS",
]

STATUS_OK, STATUS_SKIPPED, STATUS_FAILED = "ok", "skipped", "failed"
#: With ``keep_diagrams``: one list per head (layer-major, the manifest's layers × heads) of
#: the bars' births, deaths (``inf``: never dies) and homology dimensions.
DIAGRAM_COLUMNS: tuple[str, ...] = ("diagram_births", "diagram_deaths", "diagram_dims")


def feature_columns(settings: CorpusSettings) -> list[str]:
    """The feature column names of a store made with ``settings`` (those of
    :func:`attntopo.features.features`: ``L{layer}H{head}.{set}.{quantity}``)."""
    from ..features.pipeline import set_columns

    fs = settings.features
    return set_columns(fs.layers, fs.heads, fs.st())


def output_schema(settings: CorpusSettings, input_schema: Any) -> Any:
    """The Arrow schema of the rows a worker returns for batches of ``input_schema``.

    Columns: ``id`` string, ``row`` int64, ``text_sha256`` string, ``text`` string (with
    ``keep_text``, the default), for pairs (``settings.pairs``: ``text`` is the prompt)
    ``answer_sha256`` string and ``answer`` string (with ``keep_text``), ``n_tokens`` int32 (tokens
    the model saw, special tokens included), ``n_unknown`` int32 (tokens that became the
    unknown token), ``truncated`` bool, ``status`` string, ``error`` string, the carried
    columns, the feature columns (float64, null unless ``status == "ok"``) and, with
    ``keep_diagrams``, :data:`DIAGRAM_COLUMNS`.
    """
    pa = _pa()
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("row", pa.int64(), nullable=False),
        pa.field("text_sha256", pa.string()),
        *([pa.field("text", pa.string())] if settings.keep_text else []),
        *([pa.field("answer_sha256", pa.string())] if settings.pairs else []),
        *([pa.field("answer", pa.string())] if settings.pairs and settings.keep_text else []),
        pa.field("n_tokens", pa.int32()),
        pa.field("n_unknown", pa.int32()),
        pa.field("truncated", pa.bool_()),
        pa.field("status", pa.string()),
        pa.field("error", pa.string()),
    ]
    fields += [f for f in input_schema if f.name not in _INPUT_OWN]
    fields += [pa.field(c, pa.float64()) for c in feature_columns(settings)]
    if settings.keep_diagrams:
        fields += [
            pa.field("diagram_births", pa.list_(pa.list_(pa.float64()))),
            pa.field("diagram_deaths", pa.list_(pa.list_(pa.float64()))),
            pa.field("diagram_dims", pa.list_(pa.list_(pa.int8()))),
        ]
    return pa.schema(fields)


#: Columns of an input batch that are no carried column.
_INPUT_OWN = ("id", "row", "text", "answer")


def batch_texts(table: Any) -> tuple[list[str], list[int | None]]:
    """What the model reads for each row of an input batch, and where its answer starts: the
    ``text`` column as is (boundaries None), or, for pairs (an ``answer`` column), each
    (prompt, answer) joined exactly as :func:`attntopo.features.features` joins a pair, with
    the character where the answer starts."""
    texts = table["text"].to_pylist()
    if "answer" not in table.column_names:
        return texts, [None] * len(texts)
    from ..features.pipeline import join_pair

    joined = [join_pair(p, a) for p, a in zip(texts, table["answer"].to_pylist())]
    return [t for t, _ in joined], [b for _, b in joined]


#: With ``BatchWorker(packed=True)``: every feature value of a row in one fixed-size list.
PACKED_FEATURES = "__attntopo_features"


def packed_schema(schema: Any, columns: Sequence[str]) -> Any:
    """``schema`` (:func:`output_schema`) with the feature ``columns`` replaced by one
    :data:`PACKED_FEATURES` column (``fixed_size_list<float64>[len(columns)]``) in the first
    one's place."""
    pa = _pa()
    if not columns:
        return schema
    names = set(columns)
    fields, placed = [], False
    for f in schema:
        if f.name not in names:
            fields.append(f)
        elif not placed:
            fields.append(
                pa.field(PACKED_FEATURES, pa.list_(pa.float64(), len(columns)), nullable=False)
            )
            placed = True
    return pa.schema(fields)


def _packed_array(values: np.ndarray) -> Any:
    """(n, k) float64 values as a fixed-size list array of n rows of k."""
    pa = _pa()
    n, k = values.shape
    flat = pa.array(np.ascontiguousarray(values, dtype=np.float64).reshape(-1), pa.float64())
    return pa.FixedSizeListArray.from_arrays(flat, k)


def feature_arrays(values: np.ndarray, missing: np.ndarray) -> list[Any]:
    """The store's feature columns of ``values`` (n, k) float64: k Arrow float64 arrays of n,
    null where ``missing`` (n,) bool is set (rows that are not ``ok``), NaN kept as NaN.

    Every column shares one validity bitmap and is a view of one transposed copy: a part of
    32 texts has ~2,000 columns, and ``pa.array(values[:, j], mask=missing)`` per column (a
    strided copy and a new bitmap each) took 15.7 ms a batch against 2.8 ms.
    """
    pa = _pa()
    n, k = values.shape
    cols = np.ascontiguousarray(np.asarray(values, dtype=np.float64).T)  # (k, n): rows are columns
    missing = np.asarray(missing, dtype=bool)
    n_null = int(missing.sum())
    valid = pa.array(~missing, pa.bool_()).buffers()[1] if n_null else None
    return [
        pa.Array.from_buffers(pa.float64(), n, [valid, pa.py_buffer(cols[j])], null_count=n_null)
        for j in range(k)
    ]


def unpack_features(table: Any, columns: Sequence[str], schema: Any) -> Any:
    """The store's rows (``schema``) of a table made with ``BatchWorker(packed=True)``: the
    :data:`PACKED_FEATURES` column back as one float64 column per feature, null where the
    row's ``status`` is not ``ok`` (exactly the columns the unpacked worker makes)."""
    pa = _pa()
    if PACKED_FEATURES not in table.column_names:
        return table.select(schema.names)
    k = len(columns)
    packed = table.column(PACKED_FEATURES).combine_chunks()
    values = packed.flatten().to_numpy(zero_copy_only=False).reshape(table.num_rows, k)
    status = table.column("status").to_numpy(zero_copy_only=False)
    got = dict(zip(columns, feature_arrays(values, status != STATUS_OK)))
    arrays = [got[f.name] if f.name in got else table.column(f.name) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema.remove_metadata())


def check_lengths(model: Any, batches: Any) -> None:
    """For ``on_long="error"``: raise before any work at the first text longer than the
    model's context, naming its row and id (``batches``: ``(k, table)`` pairs)."""
    for _, table in batches:
        for rid, row, text in zip(
            table["id"].to_pylist(), table["row"].to_pylist(), batch_texts(table)[0]
        ):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UnknownTokensWarning)
                    model.tokenize(text)
            except TextTooLongError as e:
                raise InvalidInputError(
                    f"input row {row} (id {rid!r}) has {e.n_tokens} tokens but {model.name} takes "
                    f"at most {e.limit} (on_long='error'): shorten it, or pass --on-long truncate "
                    "or skip (on_long= in Python)"
                ) from None


@dataclass
class _Batch:
    """The bookkeeping of a started batch, per text: its token count, unknown tokens,
    truncation, status and error (filled by :meth:`BatchWorker.start`), and ``run``, the
    texts whose features are computed."""

    table: Any
    texts: list[str]
    bounds: list[int | None]
    n_tokens: list[int | None]
    n_unknown: list[int | None]
    truncated: list[bool]
    status: list[str]
    error: list[str | None]
    run: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, table: Any) -> "_Batch":
        texts, bounds = batch_texts(table)
        n = len(texts)
        return cls(
            table, texts, bounds, [None] * n, [None] * n, [False] * n, [STATUS_OK] * n, [None] * n
        )


class BatchWorker:
    """Computes the store rows of a batch of texts; the model is loaded once, here.

    Parameters
    ----------
    settings : CorpusSettings
        What to compute (:func:`~attntopo.corpus.make_settings`).
    n_jobs : int, optional
        Worker processes for persistence (:func:`attntopo.topology.persistence_batch`);
        a Ray actor passes 1 (Ray runs one actor per CPU).
    model : AttentionModel, optional
        An already loaded model (the local engine's); by default ``load_model(settings.model)``
        in ``settings.dtype`` on ``device``.
    device : str
        Where a model loaded here runs (a Ray actor with a GPU: ``"cuda"``, the one Ray gave it).
    packed : bool
        Return the feature values as one column, :data:`PACKED_FEATURES` (a fixed-size list of
        float64 per row, NaN where the row is not ``ok``), instead of one column per feature:
        what a Ray actor sends to the driver, which turns it back into the store's columns
        with :func:`unpack_features`.

    Raises
    ------
    InvalidInputError
        The model loaded here is not the one the settings were made with (its files' hash
        differs: another version on this machine or cluster node).
    """

    def __init__(
        self,
        settings: CorpusSettings,
        *,
        n_jobs: int | None = None,
        model: Any = None,
        packed: bool = False,
        device: str = "cpu",
    ) -> None:
        from ..models import load_model

        if not isinstance(settings, CorpusSettings):
            raise InvalidInputError(
                f"settings must be CorpusSettings, got {type(settings).__name__}"
            )
        self.settings = settings
        self.n_jobs = n_jobs
        m = (
            model
            if model is not None
            else load_model(
                settings.model, revision=settings.revision, dtype=settings.dtype, device=device
            )
        )
        got = model_fingerprint(m)
        if got != settings.model_hash:
            raise InvalidInputError(
                f"model {settings.model!r} loaded here has hash {got[:23]}…, the store's settings "
                f"say {settings.model_hash[:23]}…: another version of the model"
            )
        self.model = m
        self.columns = feature_columns(settings)
        self.packed = bool(packed)
        st = settings.feature_settings()
        self._st = st
        self._schemas: dict[Any, Any] = {}

    # -------------------------------------------------------------- one batch
    def __call__(self, table: Any) -> Any:
        """Store rows (:func:`output_schema`) of an input batch (``id``, ``row``, ``text``,
        carried columns), in the batch's order.  Never raises for one text: a failure
        becomes a ``failed`` row."""
        return self.start(table)()

    def start(
        self,
        table: Any,
        *,
        submit: Callable[..., Future] | None = None,
        forward_threads: int | None = None,
        done: Callable[[int], None] | None = None,
    ) -> Callable[[], Any]:
        """Start the store rows of an input batch; the returned function finishes them.

        With ``submit`` (a one-thread executor's), the batch's persistence batches run in
        the background: the worker processes compute them while the caller starts the next
        batch, whose forward pass runs on ``forward_threads`` torch threads (the cores the
        workers leave).  Calling the returned function waits for them and gives the rows
        (the same values as :meth:`__call__`).  Every call of ``submit`` goes through this
        one executor, so the worker pool is only ever used by its thread.

        The batch's texts are computed in chunks of at most :data:`CHUNK_ELEMENTS` padded
        attention elements per head (:func:`length_chunks`): a long text goes in a chunk of
        its own (or with a few others as long), so it never holds the batch's short texts'
        matrices beside its own.  Every chunk but the last is finished here, calling
        ``done(k)`` with its ``k`` texts (a progress bar that moves within the batch); the
        last one is finished by the returned function.
        """
        st = self.settings
        m = self.model
        b = _Batch.of(table)
        unk = getattr(m.tokenizer, "unk_token_id", None)
        with warnings.catch_warnings():  # unknown tokens are counted per row (n_unknown)
            warnings.simplefilter("ignore", UnknownTokensWarning)
            for i, t in enumerate(b.texts):
                try:
                    try:  # truncated, a long text is tokenized only as far as it is kept
                        enc = m.tokenize(t, truncate=st.on_long == "truncate")
                    except TextTooLongError as e:
                        b.n_tokens[i] = e.n_tokens
                        b.status[i] = STATUS_SKIPPED if st.on_long == "skip" else STATUS_FAILED
                        b.error[i] = (
                            f"too long: {e.n_tokens} tokens, {m.name} takes at most {e.limit}"
                        )
                        continue
                    b.n_tokens[i] = len(enc.ids)
                    b.truncated[i] = bool(enc.truncated)
                    if all(enc.special):
                        b.status[i] = STATUS_FAILED
                        b.error[i] = (
                            "no token but special ones: the tokenizer kept no character of the text"
                        )
                    b.n_unknown[i] = (
                        sum(1 for x, sp in zip(enc.ids, enc.special) if x == unk and not sp)
                        if unk is not None
                        else 0
                    )
                except Exception as e:  # noqa: BLE001 - one bad text never stops the batch
                    b.status[i], b.error[i] = STATUS_FAILED, _reason(e)
        b.run = [i for i in range(len(b.texts)) if b.status[i] == STATUS_OK]
        pending: Callable[[], tuple[np.ndarray, list[Any]]] | None = None
        if b.run:
            try:
                pending = self._chunks_start(b, submit, forward_threads, done)
            except Exception:  # noqa: BLE001 - found text by text in finish()
                pending = None

        def finish() -> Any:
            return self._rows(b, pending, submit, forward_threads)

        return finish

    def _rows(
        self,
        b: "_Batch",
        pending: Callable[[], tuple[np.ndarray, list[Any]]] | None,
        submit: Callable[..., Future] | None,
        forward_threads: int | None,
    ) -> Any:
        """The Arrow rows of a started batch (``pending``: its features, None when starting
        them failed)."""
        pa = _pa()
        st = self.settings
        n = len(b.texts)
        values = np.full((n, len(self.columns)), np.nan)
        dgms: list[Any] = [None] * n
        if b.run:
            try:
                if pending is None:
                    raise _BatchFailed
                vals, dg = pending()
                values[b.run] = vals
                for i, d in zip(b.run, dg):
                    dgms[i] = d
            except Exception:  # noqa: BLE001 - find the bad text(s): one at a time
                for i in b.run:
                    try:
                        vals, dg = self._compute_start(
                            [b.texts[i]], submit, forward_threads, bounds=[b.bounds[i]]
                        )()
                        values[i] = vals[0]
                        dgms[i] = dg[0]
                    except Exception as e:  # noqa: BLE001
                        b.status[i], b.error[i] = STATUS_FAILED, _reason(e)
        table = b.table
        schema = self._schema(table.schema)
        ok = np.array([s == STATUS_OK for s in b.status])
        cols: dict[str, Any] = {
            "id": table["id"],
            "row": table["row"],
            "text_sha256": pa.array(
                [text_sha256(t) for t in table["text"].to_pylist()], pa.string()
            ),
            "text": table["text"],
            "n_tokens": pa.array(b.n_tokens, pa.int32()),
            "n_unknown": pa.array(b.n_unknown, pa.int32()),
            "truncated": pa.array(b.truncated, pa.bool_()),
            "status": pa.array(b.status, pa.string()),
            "error": pa.array(b.error, pa.string()),
        }
        if st.pairs:
            answers = table["answer"].to_pylist()
            cols["answer_sha256"] = pa.array([text_sha256(t) for t in answers], pa.string())
        for f in table.schema:
            if f.name not in ("id", "row", "text"):
                cols[f.name] = table[f.name]
        if self.packed:
            cols[PACKED_FEATURES] = _packed_array(values)
        else:
            cols.update(zip(self.columns, feature_arrays(values, ~ok)))
        if st.keep_diagrams:
            for name, part in zip(DIAGRAM_COLUMNS, range(3)):
                cols[name] = pa.array(
                    [d[part] if d is not None else None for d in dgms], schema.field(name).type
                )
        arrays = [
            cols[f.name]
            if not isinstance(cols[f.name], pa.ChunkedArray)
            else cols[f.name].combine_chunks()
            for f in schema
        ]
        return pa.Table.from_arrays(arrays, schema=schema)

    def _schema(self, input_schema: Any) -> Any:
        key = input_schema.remove_metadata()
        hit = self._schemas.get(key)
        if hit is None:
            hit = output_schema(self.settings, key)
            if self.packed:
                hit = packed_schema(hit, self.columns)
            self._schemas[key] = hit
        return hit

    # -------------------------------------------------------------- features
    def _chunks_start(
        self,
        b: "_Batch",
        submit: Callable[..., Future] | None,
        forward_threads: int | None,
        done: Callable[[int], None] | None,
    ) -> Callable[[], tuple[np.ndarray, list[Any]]]:
        """Start the features of ``b.run`` chunk by chunk (:func:`length_chunks`): every
        chunk but the last finished now (``done(len(chunk))`` after each), the last one
        started; the returned function gives the rows and diagrams in ``b.run``'s order."""
        chunks = length_chunks([b.n_tokens[i] or 0 for i in b.run])
        values: list[Any] = [None] * len(b.run)
        dgms: list[Any] = [None] * len(b.run)
        for chunk in chunks[:-1]:
            vals, dg = self._compute_start(
                [b.texts[b.run[j]] for j in chunk],
                submit,
                forward_threads,
                bounds=[b.bounds[b.run[j]] for j in chunk],
            )()
            for r, j in enumerate(chunk):
                values[j], dgms[j] = vals[r], dg[r]
            if done is not None:
                done(len(chunk))
        last = chunks[-1]
        pending = self._compute_start(
            [b.texts[b.run[j]] for j in last],
            submit,
            forward_threads,
            bounds=[b.bounds[b.run[j]] for j in last],
        )

        def finish() -> tuple[np.ndarray, list[Any]]:
            vals, dg = pending()
            for r, j in enumerate(last):
                values[j], dgms[j] = vals[r], dg[r]
            return np.asarray(values, dtype=np.float64), dgms

        return finish

    def _compute(
        self, texts: Sequence[str], bounds: Sequence[int | None] | None = None
    ) -> tuple[np.ndarray, list[Any]]:
        """Feature rows (len(texts), n_features) and, with keep_diagrams, each text's
        (births, deaths, dims) lists per head.  Every n × n matrix is local to this call."""
        return self._compute_start(texts, bounds=bounds)()

    def _compute_start(
        self,
        texts: Sequence[str],
        submit: Callable[..., Future] | None = None,
        forward_threads: int | None = None,
        *,
        bounds: Sequence[int | None] | None = None,
    ) -> Callable[[], tuple[np.ndarray, list[Any]]]:
        """Start :meth:`_compute`: the forward pass here, layer by layer into
        :func:`attntopo.features`' own chunk (``ChunkFeatures``: the distances and the sets
        without persistence here, the persistence batches through ``submit`` (see
        :meth:`start`) or here when it is None).  ``bounds``: per text, where the answer of a
        joined pair starts (:func:`batch_texts`), else None.  The returned function gives
        :meth:`_compute`'s result."""
        from ..features.pipeline import ChunkFeatures, answer_check, head_order, stream_into

        st, fs = self.settings, self.settings.features
        n = len(texts)
        bounds = list(bounds) if bounds is not None else [None] * n
        chunk = ChunkFeatures(
            n,
            bounds,
            self._st,
            fs.drop_special,
            fs.engine,
            self.n_jobs,
            submit=submit,
            maxdim=st.maxdim,
            js_diagrams=st.keep_diagrams,
            order=head_order(fs.layers, fs.heads),
        )
        with warnings.catch_warnings():  # counted per row in n_unknown; run() warns once
            warnings.simplefilter("ignore", UnknownTokensWarning)
            # the model's attention is taken layer by layer: never all layers at once
            stream_into(
                chunk,
                self.model,
                list(texts),
                list(range(n)),
                truncate=st.on_long == "truncate",
                layers=list(fs.layers),
                heads=list(fs.heads),
                forward_threads=forward_threads,
                check=answer_check(bounds, sets=self._st["sets"]) if st.pairs else None,
            )
        chunk.start()
        chunk_finish = chunk.finish
        del chunk

        def finish() -> tuple[np.ndarray, list[Any]]:
            values, dgms = chunk_finish()
            per_head = len(fs.layers) * len(fs.heads)
            dgm_rows: list[Any] = [None] * n
            if dgms is not None:
                for t in range(n):
                    dgm_rows[t] = _diagram_lists(dgms[t * per_head : (t + 1) * per_head])
            return values, dgm_rows

        return finish

    def __repr__(self) -> str:
        return (
            f"BatchWorker(model={self.settings.model!r}, sets={list(self.settings.features.sets)})"
        )


#: A chunk's bound (:func:`length_chunks`): texts × the longest one's tokens², the padded
#: attention elements of one head (x layers × heads for the forward pass).  32 × 128²: a
#: batch of 32 texts of up to 128 tokens is one chunk, as before; a 512-token text is in a
#: chunk with at most one other as long.
CHUNK_ELEMENTS = 32 * 128**2


def length_chunks(n_tokens: Sequence[int], bound: int = CHUNK_ELEMENTS) -> list[list[int]]:
    """Positions of a batch's texts (``n_tokens``: each one's tokens) in chunks computed
    together: sorted by length (ties in batch order), a chunk grows while its size × its
    longest text's tokens² stays within ``bound`` (a text over it alone is a chunk of one).
    A function of the lengths only, so a resumed run computes every batch the same way.

    >>> length_chunks([10, 512, 12], bound=2 * 512**2 - 1)
    [[0, 2], [1]]
    """
    order = sorted(range(len(n_tokens)), key=lambda i: (n_tokens[i], i))
    chunks: list[list[int]] = []
    for i in order:
        n = max(int(n_tokens[i]), 1)
        if chunks and (len(chunks[-1]) + 1) * n * n <= bound:
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


def _diagram_lists(dgms: list[Any]) -> tuple[list, list, list]:
    """One text's heads' diagrams (:class:`~attntopo.topology.Diagram`) as the store's
    :data:`DIAGRAM_COLUMNS`: per head, the bars' births, deaths and homology dimensions,
    dimension by dimension (``Diagram.to_giotto``'s ``[birth, death, dim]`` rows)."""
    rows = [g.to_giotto() for g in dgms]
    return (
        [a[:, 0].tolist() for a in rows],
        [a[:, 1].tolist() for a in rows],
        [a[:, 2].astype(np.int8).tolist() for a in rows],
    )


class _BatchFailed(Exception):
    """Starting a batch's features failed: it is computed text by text."""


def _reason(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}"[:500]
