""":func:`prepare`: steps 1–4 of a corpus run (:mod:`attntopo.corpus._local`, whose module
docstring lists the steps), shared by both backends: the arguments and the STORE path
checked, the input scanned, the store's lock taken, the model loaded and the store opened,
made, started over or appended to; what it returns (:class:`Prepared`) an engine works on.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .._validation import check_bool, check_choice, check_device, check_dtype, check_positive_int
from ..errors import DamagedPartError, InvalidInputError, ResultFormatError
from ._input import CorpusInput, open_input
from ._settings import (
    DEFAULT_BATCH_SIZE,
    ON_LONG,
    CorpusSettings,
    check_before_loading,
    check_prompt_set,
    check_same_settings,
    make_settings,
)
from ._store import MANIFEST, OWN_FILE, StoreReader
from ._work import check_lengths, feature_columns, output_schema
from ._writer import StoreLock, StoreWriter, can_start_over, check_store_path, lock_store

__all__ = ["prepare", "Prepared"]


@dataclass
class Prepared:
    """What steps 1–4 of :func:`~attntopo.corpus.run` produce, for an engine to work on.

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
        The store's lock, held from before the manifest was read until
        :func:`~attntopo.corpus.finish` (:func:`~attntopo.corpus.lock_store`).
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
    """Steps 1–4 of :func:`~attntopo.corpus.run` (:mod:`~attntopo.corpus._local`); the caller
    must :func:`~attntopo.corpus.finish` it.

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
    last = inputs[-1].get("name", "its input")
    try:
        c = store.counts()
    except DamagedPartError as e:  # a resume (not an append) recomputes it; all else as it is
        from ._store import damaged_part

        then = (
            f": run it again with {last} (without --append) to recompute batch {e.batch} "
            f"before appending {inp.name}"
        )
        raise damaged_part(e.path, e.batch, e.why, then) from None
    if c["remaining"] or any(e.get("status") == "appending" for e in inputs):
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


def _what_differs(old: str, new: str) -> tuple[str, str, str]:
    """Of two different record hashes (:func:`~attntopo.corpus.record_sha256`): what differs
    (``"text"``, ``"prompt"``, ``"answer"`` or ``"prompt and answer"``) and the hashes of the
    first part that does."""
    if "+" not in old:
        return "text", old, new
    parts = [
        (name, a, b)
        for name, a, b in zip(("prompt", "answer"), old.split("+"), new.split("+"))
        if a != b
    ]
    return " and ".join(name for name, _, _ in parts), parts[0][1], parts[0][2]


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
                what, old, new = _what_differs(old, new)
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
    if parts.is_dir():  # the parts' own folder, then the folder itself
        for entry in os.listdir(parts):
            if OWN_FILE.match(entry):
                os.unlink(parts / entry)
        with contextlib.suppress(OSError):  # other files in it: left, and reported by the creation
            os.rmdir(parts)
