"""What decides a corpus store's numbers: one frozen settings record, its manifest form, and
the comparison that refuses to mix two runs made differently.

A store is resumable only if every part file was computed the same way; so the settings are
written to ``manifest.json`` before the first part, and a run on an existing store compares
its own settings with the stored ones field by field (:func:`first_difference`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Sequence

from .._validation import check_bool, check_choice, check_positive_int
from .._version import __version__
from ..errors import InvalidInputError, ResultFormatError

__all__ = [
    "CorpusSettings",
    "ON_LONG",
    "DEFAULT_CORPUS_SETS",
    "DEFAULT_BATCH_SIZE",
    "make_settings",
    "model_fingerprint",
    "first_difference",
    "check_same_settings",
    "check_before_loading",
    "check_prompt_set",
]

#: What to do with a text longer than the model's context.
ON_LONG: tuple[str, ...] = ("truncate", "skip", "error")
#: Feature sets of a corpus run when none are named: the ``js`` set only (cheapest of the
#: topological sets; ``sets=`` adds ``graph``, ``barcode``, ``template``, …).
DEFAULT_CORPUS_SETS: tuple[str, ...] = ("js",)
#: Texts per batch (one forward pass, one part file).
DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class CorpusSettings:
    """Every setting that decides the numbers of a corpus store (frozen, hashable, picklable).

    Build it with :func:`make_settings` (which validates and resolves the model); a Ray actor
    receives it as is and builds its :class:`~attntopo.corpus.BatchWorker` from it.

    Attributes
    ----------
    model : str
        What :func:`attntopo.load_model` is called with (alias, folder, hub id).
    model_hash : str
        ``sha256:<hex>`` of the model's weight, config and tokenizer files
        (:func:`model_fingerprint`), or ``revision:<rev>`` when no file can be read.
    revision : str or None
        Hub revision the model was loaded at.
    attntopo_version : str
        Package version that computed the rows.
    features : FeatureSettings
        The feature settings (:class:`attntopo.features.FeatureSettings`: sets, layers and
        heads, metric, the sets' parameters, drop_special, engine; ``layers`` and ``heads``
        resolved: tuples, never negative; every bar kept: ``min_persistence=0``).  A store
        keeps them as the manifest's ``features`` object.
    maxdim : int
        Highest homology dimension of the diagrams (1: H0 and H1).
    keep_diagrams : bool
        Store each head's diagram of the token distances as Arrow list columns.
    keep_text : bool
        The text itself is a column of the store (``text``), beside ``text_sha256``.
    on_long : {"truncate", "skip", "error"}
        Texts longer than the model's context.
    batch_size : int
        Texts per batch: the batch's composition decides the padded forward pass, so a
        different batch size is a different run.
    dtype : {"float32", "float16", "bfloat16"}
        The model's weights (a bfloat16 model gives other numbers; the device does not
        decide the numbers beyond float32 rounding, so it is not a setting).
    pairs : bool
        The records are (prompt, answer) pairs (``answer_column=``): the sets see them as
        :func:`attntopo.features.features` sees pairs (the ``prompt`` and ``lookback``
        sets need them; the others take the pair joined into one text).
    """

    model: str
    model_hash: str
    revision: str | None
    attntopo_version: str
    features: Any  # FeatureSettings (imported on use: the corpus loads without the features)
    maxdim: int = 1
    keep_diagrams: bool = False
    on_long: str = "truncate"
    batch_size: int = DEFAULT_BATCH_SIZE
    dtype: str = "float32"
    keep_text: bool = True
    pairs: bool = False

    # ------------------------------------------------------------------ manifest form
    def to_manifest(self) -> dict[str, Any]:
        """Plain JSON data (tuples as lists), the ``settings`` entry of ``manifest.json``."""
        doc = {f.name: getattr(self, f.name) for f in fields(self)}
        doc["features"] = self.features.to_dict()
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in doc.items()}

    @classmethod
    def from_manifest(cls, doc: Any) -> "CorpusSettings":
        """Inverse of :meth:`to_manifest`; :class:`~attntopo.errors.ResultFormatError` names
        every missing key (``settings.dtype``, ``settings.features.engine``: a manifest of
        format version 3 has them all) or an unknown one."""
        from ..features import SETTING_NAMES, FeatureSettings

        if not isinstance(doc, dict):
            raise ResultFormatError("manifest.json: 'settings' must be an object")
        doc = dict(doc)
        names = [f.name for f in fields(cls)]
        missing = [f"settings.{n}" for n in names if n not in doc]
        if isinstance(doc.get("features"), dict):
            missing += [f"settings.features.{n}" for n in SETTING_NAMES if n not in doc["features"]]
        if missing:
            raise ResultFormatError(
                f"manifest.json: {', '.join(map(repr, missing))} "
                f"{'is' if len(missing) == 1 else 'are'} missing, which every store of its "
                "format version has (the manifest was changed since it was written)"
            )
        unknown = [k for k in doc if k not in names]
        if unknown:
            raise ResultFormatError(
                f"manifest.json: settings do not match this attntopo (unknown {', '.join(unknown)})"
            )
        try:
            doc["features"] = FeatureSettings.from_dict(doc["features"], where="manifest.json")
        except InvalidInputError as e:
            raise ResultFormatError(f"{e} (settings do not match this attntopo)") from None
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in doc.items()})

    def feature_settings(self) -> dict[str, Any]:
        """The settings dict of :mod:`attntopo.features` (:meth:`FeatureSettings.st`)."""
        return self.features.st()


# ------------------------------------------------------------------ model fingerprint
_MODEL_FILES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".model")
_MODEL_NAMES = {
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "merges.txt",
    "special_tokens_map.json",
    "vocab.json",
    "generation_config.json",
}
_HASH_CACHE: dict[tuple, str] = {}
_HASH_LOCK = threading.Lock()


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _HASH_LOCK:
        hit = _HASH_CACHE.get(key)
    if hit is not None:
        return hit
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    out = h.hexdigest()
    with _HASH_LOCK:
        _HASH_CACHE[key] = out
    return out


def model_fingerprint(model: Any) -> str:
    """``sha256:<hex>`` over the files that decide a loaded model's attention.

    The weight files (``*.safetensors``, ``*.bin``, ``*.gguf``, …) and the config and
    tokenizer files of the model's folder (for a GGUF model: its one file), each by name and
    SHA-256 of its bytes (cached per process by path, size and modification time: ~0.2 s for
    MiniLM's 90 MB once).  A model with no readable folder (passed in as an object) gives
    ``revision:<hub revision or name>``.
    """
    spec = getattr(model, "spec", None)
    source = getattr(model, "source", None)
    files: list[Path] = []
    if spec is not None and getattr(spec, "gguf_file", None):
        p = Path(spec.gguf_file)
        files = [p if p.is_absolute() else Path(spec.path) / p]
    elif source and os.path.isdir(source):
        root = Path(source)
        files = sorted(
            p
            for p in root.iterdir()
            if p.is_file() and (p.suffix in _MODEL_FILES or p.name in _MODEL_NAMES)
        )
    files = [p for p in files if p.is_file()]
    if not files:
        rev = getattr(spec, "revision", None) or getattr(model, "name", "unknown")
        return f"revision:{rev}"
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.name}\0{_file_sha256(p)}\n".encode())
    return "sha256:" + h.hexdigest()


# ------------------------------------------------------------------ building and comparing
def make_settings(
    model: Any,
    *,
    settings: Any = None,
    keep_diagrams: bool = False,
    on_long: str = "truncate",
    batch_size: int = DEFAULT_BATCH_SIZE,
    keep_text: bool = True,
    pairs: bool = False,
    _model_hash: str | None = None,
    **setting_values: Any,
) -> CorpusSettings:
    """Validated :class:`CorpusSettings` for a loaded :class:`~attntopo.models.AttentionModel`.

    The feature settings are a :class:`~attntopo.features.FeatureSettings` (``settings``) or
    its fields as keywords (``setting_values``, checked against the one list of them; one that
    disagrees with ``settings`` is an error); they default to those of
    :func:`attntopo.features.features`, but for ``sets`` (:data:`DEFAULT_CORPUS_SETS`).
    Every argument is checked here, so a bad one fails before the input is read or anything
    written.  ``pairs``: the input holds (prompt, answer) pairs (needed by the ``prompt`` set).
    ``_model_hash`` stands in for the model's files' hash (:func:`check_before_loading`).
    """
    from dataclasses import replace

    from ..attention import resolve_indices
    from ..features import FeatureSettings
    from ..topology.engines import get_engine

    if settings is None and setting_values.get("sets") is None:
        setting_values["sets"] = DEFAULT_CORPUS_SETS
    fs = FeatureSettings.resolve(settings, owner="make_settings()", **setting_values)
    pairs = check_bool(pairs, "pairs")
    check_prompt_set(fs.sets, pairs)
    if fs.min_persistence:
        raise InvalidInputError(
            f"min_persistence={fs.min_persistence:g}: a corpus store keeps every bar "
            "(min_persistence=0); filter the stored diagrams (keep_diagrams) instead"
        )
    fs = replace(  # what the store's rows are: the heads resolved, the engine by its name
        fs,
        layers=tuple(int(i) for i in resolve_indices(fs.layers, model.n_layers, "layer")),
        heads=tuple(int(i) for i in resolve_indices(fs.heads, model.n_heads, "head")),
        engine=None if fs.engine is None else get_engine(engine=fs.engine).name,
    )
    return CorpusSettings(
        model=str(model.name),
        dtype=str(getattr(model, "dtype", "float32")),
        model_hash=model_fingerprint(model) if _model_hash is None else _model_hash,
        revision=getattr(getattr(model, "spec", None), "revision", None),
        attntopo_version=__version__,
        features=fs,
        maxdim=1,
        keep_diagrams=check_bool(keep_diagrams, "keep_diagrams"),
        on_long=check_choice(on_long, "on_long", ON_LONG, what="on_long value"),
        batch_size=check_positive_int(batch_size, "batch_size", allow_none=False),
        keep_text=check_bool(keep_text, "keep_text"),
        pairs=pairs,
    )


def check_prompt_set(sets: Sequence[str], pairs: bool) -> None:
    """Refuse a set that needs pairs (``prompt``, …: input ``"pair"`` in
    :data:`attntopo.features.FEATURE_SETS`) on an input of single texts, in one line."""
    from ..features import FEATURE_SETS

    need = [s for s in sets if s in FEATURE_SETS and FEATURE_SETS[s].input == "pair"]
    if need and not pairs:
        raise InvalidInputError(
            f"the {need[0]} set needs (prompt, answer) pairs: name the input's answer column with "
            "--answer-column (answer_column= in Python; the text column is then the prompt)"
        )


def _show(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return ",".join(str(x) for x in v) or "(none)"
    if isinstance(v, str) and len(v) > 23 and ":" in v:  # a hash: its head is enough
        return v[:23] + "…"
    return str(v)


#: The command line's options of the store's own settings (``attntopo corpus``); the feature
#: settings' options are declared with them (``FeatureSettings``' fields).
_CLI_OPTIONS = {
    "keep_diagrams": "--keep-diagrams",
    "keep_text": "--keep-text",
    "on_long": "--on-long",
    "batch_size": "--batch-size",
    "dtype": "--dtype",
}


def _cli_option(name: str) -> str | None:
    from dataclasses import fields as fields_of

    from ..features import FeatureSettings

    cli = {f.name: f.metadata["cli"] for f in fields_of(FeatureSettings) if f.metadata["cli"]}
    return cli[name].flags[0] if name in cli else _CLI_OPTIONS.get(name)


def _to_pass(name: str, value: Any) -> str:
    """How a run asks for ``name=value``: the keyword, and the command line's option where
    there is one (``drop_special=True; --drop-special``, ``… False; without --drop-special``)."""
    py = f"{name}={list(value) if isinstance(value, tuple) else value!r}"
    flag = _cli_option(name)
    if flag is None or value is None:
        return py
    if isinstance(value, bool):
        cli = flag if value else ("--no-keep-text" if name == "keep_text" else f"without {flag}")
    else:
        cli = f"{flag} {_show(value)}"
    return f"{py}; {cli}"


def first_difference(stored: CorpusSettings, wanted: CorpusSettings) -> tuple[str, Any, Any] | None:
    """``(name, stored value, wanted value)`` of the first setting that differs, or None (a
    feature setting by its own name: ``metric``, not ``features``)."""
    for f in fields(CorpusSettings):
        a, b = getattr(stored, f.name), getattr(wanted, f.name)
        if f.name == "features":
            for g in fields(a):
                x, y = getattr(a, g.name), getattr(b, g.name)
                if x != y:
                    return g.name, x, y
        elif a != b:
            return f.name, a, b
    return None


def check_same_settings(stored: CorpusSettings, wanted: CorpusSettings, where: str) -> None:
    """Raise one line naming the first differing setting (module docstring)."""
    diff = first_difference(stored, wanted)
    if diff is not None:
        name, a, b = diff
        raise InvalidInputError(
            f"{where} was made with {name}={_show(a)}, this run has {name}={_show(b)}: "
            f"re-run with the store's settings ({_to_pass(name, a)}), choose another STORE, or "
            "start it over with new_store=True (--new-store)"
        )


def check_before_loading(
    stored: CorpusSettings, model_info: Any, where: str, *, dtype: str | None = None, **options: Any
) -> None:
    """Compare a run's settings with a store's before its model is loaded (seconds saved on a
    run that would be refused): every setting but the model's identity, which needs its files,
    from ``options`` (:func:`make_settings`'s keywords) and the model's layer and head counts
    recorded in the manifest (``model_info``: its ``"model"`` entry).  Does nothing without
    those counts; the full comparison still follows the model's load."""
    from types import SimpleNamespace

    try:
        n_layers, n_heads = int(model_info["n_layers"]), int(model_info["n_heads"])
    except (KeyError, TypeError, ValueError):
        return
    # the dtype a model given by name will have is known only once loaded (None: its default):
    # taken as the store's then, and compared after the load
    stand_in = SimpleNamespace(
        name=stored.model,
        n_layers=n_layers,
        n_heads=n_heads,
        dtype=stored.dtype if dtype is None else dtype,
        spec=SimpleNamespace(revision=stored.revision),
    )
    check_same_settings(
        stored, make_settings(stand_in, _model_hash=stored.model_hash, **options), where
    )
