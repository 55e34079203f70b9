"""The loaded model: batched attention extraction, and load_model (tokenization: _description)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Literal, Sequence, get_args

import numpy as np

from .._progress import ProgressOption, Reporter, check_progress, make_reporter
from .._validation import check_bool, check_device, check_dtype, check_indices, check_positive_int
from ..attention import Attention
from ..errors import (
    EmptyTextError,
    InvalidInputError,
    ModelLoadError,
    TextTooLongError,
)
from ._description import Encoding, ModelDescription
from .loading import load_hf
from .precision import normalize_rows
from .specs import DEFAULT_MODEL, ModelSpec, resolve_spec

__all__ = [
    "AttentionModel",
    "ModelDescription",
    "describe_model",
    "load_model",
    "clear_model_cache",
    "Encoding",
]

log = logging.getLogger("attntopo")

# Bound on the attention tensors materialised per forward pass (float32 elements).
_BATCH_ELEMENTS = 96 * 2**20
# Bound on one layer's attention of a batch when layers are taken one at a time (float32
# elements: 32 MiB); a single text always makes a batch, whatever its length.
_LAYER_ELEMENTS = 8 * 2**20
# A streamed layer at least this large (float32 elements: 8 MiB) hands the C heap's free
# pages back to the system once it has been consumed (_trim_heap).
_TRIM_ELEMENTS = 2 * 2**20


def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library, or no ctypes)."""
    try:
        import ctypes

        fn = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


_MALLOC_TRIM = _malloc_trim() if sys.platform.startswith("linux") else None


def _trim_heap() -> None:
    """Hand the free pages of the C heap back to the system (glibc; elsewhere nothing).

    glibc serves blocks below its (adaptive, up to 32 MiB) mmap threshold from the heap and
    keeps them when they are freed: the few-MiB temporaries of every streamed layer (the
    forward pass's activations, the float64 blocks of the renormalization and the scores)
    would otherwise add up, layer after layer, to a resident size that grows with the number
    of layers (on a 12-layer Llama at 900 tokens: ~80 MB more by the last layer).  About a
    microsecond when there is nothing to return.
    """
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class AttentionModel(ModelDescription):
    """A transformer loaded with eager attention, ready to return attention weights.

    Obtain one with :func:`load_model` (cached per process); do not construct directly.

    Attributes
    ----------
    name : str
        What it was loaded as (alias, hub id, path).
    n_layers, n_heads : int
        Layers and query heads per layer (grouped-query models report query heads).
    n_kv_heads : int
        Key/value heads per layer (= n_heads unless grouped-query attention).
    causal : bool
        True if rows never see later tokens (decoder models); measured on a probe at load.
    max_length : int
        Longest input in tokens, special tokens included.
    """

    def __init__(
        self,
        spec: ModelSpec,
        hf_model,
        tokenizer,
        source: str,
        device: str,
        dtype: str,
        *,
        owned: bool = True,
    ):
        super().__init__(
            spec,
            hf_model.config,
            tokenizer,
            source,
            device,
            dtype,
            architecture=type(hf_model).__name__,
            owned=owned,
        )
        self.hf_model = hf_model
        cfg = self.config
        #: keyword arguments of every forward pass: no key/value cache (a model the user loaded
        #: keeps its config; a cache would hold every layer's keys, and a layer run again with
        #: the captured arguments would append to it)
        self.forward_kwargs: dict = {"use_cache": False} if hasattr(cfg, "use_cache") else {}
        # re-entrant: a diagnostic that patches the model (hooks, positions off, another
        # attention function) holds it for the whole patched stretch, and the forward passes
        # it runs inside take it again
        self._lock = threading.RLock()
        self.causal = self._probe_causal()

    # ------------------------------------------------------------- attention
    def _probe_causal(self) -> bool:
        w = self._forward([[self._probe_id()] * 4])[0]
        return bool(np.all(np.triu(w, 1) == 0))

    def _probe_id(self) -> int:
        tok = self.tokenizer
        ids = tok("a", add_special_tokens=False)["input_ids"]
        return int(ids[0]) if ids else int(tok.unk_token_id or 0)

    def _forward(self, batch_ids: list[list[int]]) -> list[np.ndarray]:
        """Forward a batch of id lists (right-padded); returns per text ``(L, H, n_i, n_i)``."""
        return self._host_layers(batch_ids, range(self.n_layers), range(self.n_heads))

    def _host_layers(
        self, batch_ids: list[list[int]], li: Sequence[int], hi: Sequence[int], on_layer=None
    ) -> list[np.ndarray]:
        """Per text of the batch, the layers ``li`` and heads ``hi`` as a host float32 array
        ``(len(li), len(hi), n_i, n_i)``, copied layer by layer as the forward pass makes them
        (the other layers and heads never leave the model's device)."""
        pos = {int(x): k for k, x in enumerate(li)}
        out = [np.empty((len(pos), len(hi), len(x), len(x)), np.float32) for x in batch_ids]

        def keep(b: int, layer: int, w) -> None:
            out[b][pos[layer]] = w.cpu().numpy()

        self._forward_layers(batch_ids, list(pos), list(hi), keep, on_layer)
        return out

    def _attention_modules(self) -> list | None:
        """The modules whose forward returns one layer's attention weights, in layer order.

        Found through transformers' own record of them (``_can_record_outputs["attentions"]``,
        the classes transformers hooks for ``output_attentions``); None when the model has no
        such record or the count is not one per layer (then :meth:`_forward_layers` falls
        back to ``output_attentions=True`` and takes the layers from its output).
        """
        cached = getattr(self, "_att_modules", False)
        if cached is not False:
            return cached
        found = None
        spec = None
        for mod in self.hf_model.modules():
            spec = (getattr(type(mod), "_can_record_outputs", None) or {}).get("attentions")
            if spec is not None:
                break
        specs = spec if isinstance(spec, (list, tuple)) else [spec] if spec is not None else []
        classes = []
        for sp in specs:
            target = getattr(sp, "target_class", sp)
            if (
                isinstance(target, type)
                and getattr(sp, "index", 1) == 1
                and getattr(sp, "layer_name", None) is None
            ):
                classes.append(target)
        if classes:
            mods = [m for m in self.hf_model.modules() if isinstance(m, tuple(classes))]
            if len(mods) == self.n_layers:
                found = mods
        self._att_modules = found
        return found

    def _forward_layers(
        self, batch_ids: list[list[int]], li: Sequence[int], hi: Sequence[int], fn, on_layer=None
    ) -> None:
        """Forward a batch of id lists (right-padded) and hand over the attention layer by layer.

        ``fn(b, layer, weights)`` is called for every text ``b`` of the batch and every layer of
        ``li`` (ascending model order: all texts of one layer before the next layer), during the
        forward pass, with ``weights`` a float32 torch.Tensor of shape (len(hi), n_b, n_b) on
        the model's device.  Forward hooks on the attention modules take each layer's weights
        as the model makes them and drop them before the next layer runs, so at most one
        layer's attention is alive at a time (besides what ``fn`` keeps).  ``on_layer(k)``,
        if given, is called once each model layer ``k`` of the forward pass is done (taken or
        not): the progress of a forward pass, layer by layer.
        """
        import torch

        lengths = [len(x) for x in batch_ids]
        n = max(lengths)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(batch_ids), n), int(pad), dtype=torch.long)
        mask = torch.zeros((len(batch_ids), n), dtype=torch.long)
        for i, row in enumerate(batch_ids):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
        inputs = {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}
        wanted = {int(x): k for k, x in enumerate(li)}
        all_heads = list(hi) == list(range(self.n_heads))
        head_idx = None if all_heads else torch.tensor(list(hi), dtype=torch.long)

        trim = len(batch_ids) * len(hi) * n * n >= _TRIM_ELEMENTS

        def take(layer: int, w) -> None:
            if head_idx is not None:
                w = w.index_select(1, head_idx.to(w.device))
            for b, nb in enumerate(lengths):
                # each text's real rows, renormalized in float64 (a bfloat16 row sums to 1 only
                # within about 2^-8), checked against the rounding its dtype explains, as float32;
                # a few heads at a time, so that the float64 temporaries stay small
                wb = w[b, :, :nb, :nb]
                # float32 weights are normalized in place: the module's output is dropped after
                # this hook (its attention output was computed before), so nothing else reads it
                out = (
                    wb
                    if wb.dtype == torch.float32
                    else torch.empty(wb.shape, dtype=torch.float32, device=wb.device)
                )
                normalize_rows(wb, what=f"attention of {self.name}, layer {layer}", out=out)
                fn(b, layer, out)
                del out, wb

        modules = self._attention_modules()
        counter = [0]

        def hook(module, args, output):
            k = counter[0]
            counter[0] += 1
            if not isinstance(output, tuple) or len(output) < 2 or output[1] is None:
                return None
            if k in wanted:
                take(k, output[1])
            if trim:  # every layer, taken or not: the forward pass's own blocks too
                _trim_heap()
            if on_layer is not None:
                on_layer(k)
            # the weights go: transformers' own recorder (output_attentions) skips a None
            return (output[0], None) + tuple(output[2:])

        handles = []
        with self._lock, torch.inference_mode():
            try:
                if modules is not None:
                    handles = [m.register_forward_hook(hook, prepend=True) for m in modules]
                out = self.hf_model(**inputs, **self.forward_kwargs, output_attentions=True)
            except TypeError as e:
                raise ModelLoadError(
                    f"{self.name} cannot return attention weights (its forward rejected "
                    f"output_attentions=True: {str(e).splitlines()[0][:120]})"
                ) from None
            finally:
                for h in handles:
                    h.remove()
            if modules is not None and counter[0] == self.n_layers:
                return
            atts = getattr(out, "attentions", None)
            if not atts or any(a is None for a in atts) or len(atts) != self.n_layers:
                impl = getattr(self.config, "_attn_implementation", None) or "unknown"
                raise ModelLoadError(
                    f"{self.name} returned no attention weights (attention implementation "
                    f"{impl!r}; attntopo needs 'eager'): load it with attn_implementation='eager'"
                )
            atts = list(atts)
            del out
            for k in range(self.n_layers):
                w, atts[k] = atts[k], None
                if k in wanted:
                    take(k, w)
                del w
                if trim:
                    _trim_heap()
                if on_layer is not None:
                    on_layer(k)

    def stream(
        self,
        text: str | Sequence[str],
        fn,
        *,
        layers=None,
        heads=None,
        truncate: bool = False,
        batch_size: int | None = None,
        progress: ProgressOption = False,
    ) -> list[Encoding]:
        """Run the model and hand its attention to ``fn`` one layer at a time, never all layers.

        For long texts and large models, where all layers' attention would not fit in memory
        (an 8B Llama at 2,000 tokens: 17 GB in float32): the forward pass calls ``fn`` as each
        attention layer is computed, on the model's device, and drops the layer when ``fn``
        returns.  Keep what you need from it (a reduction, the chosen heads, bars), not the
        tensor itself.  :meth:`attention` and :func:`attntopo.features` are built on it.

        Parameters
        ----------
        text : str or list of str
            The texts (tokenized as :meth:`tokenize` does).
        fn : callable
            ``fn(index, layer, weights)``: ``index`` the text's position in ``text`` (0 for a
            single string), ``layer`` the model layer (0-based, ascending within a forward
            pass), ``weights`` a float32 ``torch.Tensor`` of shape (n_heads', n, n) on the
            model's device (rows as :meth:`attention` gives them; the selected heads only).
            The tensor is reused once ``fn`` returns: copy what you keep.  Its return value is
            ignored.
        layers, heads : int, sequence of int or slice, optional
            Hand over only these (0-based, negatives count from the end); all by default.
        truncate : bool
            Cut texts longer than :attr:`max_length` instead of raising.
        batch_size : int >= 1, optional
            Texts per forward pass; by default as many as keep one layer's attention of the
            batch under 32 MiB (a long text goes alone).
        progress : bool, callable or None, default False
            Report the forward passes layer by layer (see :mod:`attntopo._progress`): stage
            ``"attention"``, :meth:`progress_units` units, each text advancing one unit per model
            layer computed, so that one long text moves too.

        Returns
        -------
        list of Encoding
            One per text, in order: its tokens, offsets and special-token mask.

        Examples
        --------
        >>> import attntopo as at
        >>> m = at.load_model("minilm")
        >>> peaks = {}
        >>> def peak(i, layer, w):
        ...     peaks[layer] = float(w.max())
        >>> encs = m.stream("A cat sat.", peak, heads=[0, 1])
        >>> sorted(peaks) == list(range(m.n_layers)) and len(encs[0].tokens) == 6
        True
        """
        _, texts = _text_list(text)
        if not callable(fn):
            raise InvalidInputError(
                f"fn must be callable as fn(index, layer, weights), got {type(fn).__name__}"
            )
        truncate = check_bool(truncate, "truncate")
        batch_size = check_positive_int(batch_size, "batch_size", None, hint="None: by memory")
        li = check_indices(layers, self.n_layers, "layer", owner=self.name)
        hi = check_indices(heads, self.n_heads, "head", owner=self.name)
        encs = self._encode(texts, truncate=truncate)
        with make_reporter(
            progress, total=self.progress_units(len(texts)), description="attention"
        ) as reporter:
            reporter.stage("attention")
            for idx in self._batches(encs, batch_size, len(hi), per_layer=True):
                self._forward_layers(
                    [encs[i].ids for i in idx],
                    li,
                    hi,
                    lambda b, layer, w, idx=idx: fn(idx[b], layer, w),
                    lambda k, n=len(idx): reporter.advance(n),
                )
        return encs

    def progress_units(self, n_texts: int) -> int:
        """Units of ``progress=`` in :meth:`attention` and :meth:`stream` for ``n_texts`` texts:
        one per text and model layer (every layer runs in a forward pass, selected or not),
        advanced as each layer of a forward pass is done.  A caller that passes an open
        reporter adds these to its plan."""
        return int(n_texts) * self.n_layers

    def _batches(
        self, encs: list[Encoding], batch_size: int | None, n_heads: int, per_layer: bool = False
    ) -> list[list[int]]:
        """Text indices grouped into forward passes, shortest texts first: ``batch_size`` texts,
        or as many as keep the padded attention under a bound (all layers' ``_BATCH_ELEMENTS``,
        or with ``per_layer`` one layer's ``_LAYER_ELEMENTS``)."""
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
        bound, depth = (_LAYER_ELEMENTS, 1) if per_layer else (_BATCH_ELEMENTS, self.n_layers)
        out, start = [], 0
        while start < len(order):
            if batch_size is None:
                stop = start + 1
                while stop < len(order):
                    n_next = len(encs[order[stop]].ids)
                    if (stop + 1 - start) * depth * n_heads * n_next**2 > bound:
                        break
                    stop += 1
            else:
                stop = min(start + batch_size, len(order))
            out.append(order[start:stop])
            start = stop
        return out

    def forward_ids(
        self, batch_ids: Sequence[Sequence[int]], *, layers=None, heads=None
    ) -> list[np.ndarray]:
        """Attention of already-tokenized inputs (lists of token ids, special tokens included).

        The batch is right-padded with an attention mask, so padding never leaks into the
        result: each entry equals a run on that input alone within float32 round-off
        (≈1e-6: a padded batch goes through other matrix kernels).

        Returns
        -------
        list of ndarray of shape (n_layers', n_heads', n_i, n_i), float32
            One per input, for the selected layers and heads (all by default).
        """
        ids = [[int(x) for x in row] for row in batch_ids]
        if not ids or any(len(row) == 0 for row in ids):
            raise InvalidInputError("give at least one non-empty list of token ids")
        too_long = max(len(row) for row in ids)
        if too_long > self.max_length:
            raise TextTooLongError(
                f"input has {too_long} tokens but {self.name} takes at most {self.max_length}",
                n_tokens=too_long,
                limit=self.max_length,
                model=self.name,
            )
        li = check_indices(layers, self.n_layers, "layer", owner=self.name)
        hi = check_indices(heads, self.n_heads, "head", owner=self.name)
        return self._host_layers(ids, li, hi)

    def attention(
        self,
        text: str | Sequence[str],
        *,
        drop_special: bool = False,
        truncate: bool = False,
        layers=None,
        heads=None,
        batch_size: int | None = None,
        progress: ProgressOption = False,
    ) -> Attention | list[Attention]:
        """Attention weights of a text (or of each text in a list).

        Parameters
        ----------
        text : str or list of str
            One text → one :class:`~attntopo.attention.Attention`; a list → a list, computed
            in padded batches (padding never leaks: every text's weights equal a run alone
            within float32 round-off, ≈1e-6).
        drop_special : bool
            Remove special tokens' rows and columns and renormalize rows
            (see :meth:`Attention.drop_special`).
        truncate : bool
            Cut texts longer than :attr:`max_length` instead of raising.
        layers, heads : int, sequence of int or slice, optional
            Keep only these (0-based, negatives count from the end); all by default.
        batch_size : int >= 1, optional
            Texts per forward pass; by default as many as fit a memory bound.
        progress : bool, callable or None, default False
            Report the forward passes layer by layer: ``True`` a bar, ``None`` a bar on a
            terminal or in Jupyter, or a callback ``callback(done, total, stage)`` (see
            :mod:`attntopo._progress`); stage ``"attention"``, :meth:`progress_units` units
            (each text advances one per model layer computed, so one long text moves too).

        Returns
        -------
        Attention or list of Attention
            ``weights`` of shape (n_layers, n_heads, n_tokens, n_tokens), float32.
        """
        single, texts = _text_list(text)
        drop_special = check_bool(drop_special, "drop_special")
        truncate = check_bool(truncate, "truncate")
        batch_size = check_positive_int(batch_size, "batch_size", None, hint="None: by memory")
        li = check_indices(layers, self.n_layers, "layer", owner=self.name)
        hi = check_indices(heads, self.n_heads, "head", owner=self.name)
        with make_reporter(
            progress, total=self.progress_units(len(texts)), description="attention"
        ) as reporter:
            reporter.stage("attention")
            results = self._attention(texts, drop_special, truncate, li, hi, batch_size, reporter)
        return results[0] if single else results  # type: ignore[return-value]

    def _attention(
        self,
        texts: list[str],
        drop_special: bool,
        truncate: bool,
        li,
        hi,
        batch_size: int | None,
        reporter: Reporter,
    ) -> list[Attention]:
        """:meth:`attention` of checked arguments; ``reporter`` advances by each batch's texts
        as each model layer of its forward pass is done.

        The selected layers and heads are copied to the host layer by layer as the forward pass
        makes them (:meth:`_forward_layers`): the others never leave the model's device.
        """
        encs = self._encode(texts, truncate=truncate)
        results: list[Attention | None] = [None] * len(encs)
        for idx in self._batches(encs, batch_size, self.n_heads):
            arrays = self._host_layers(
                [encs[i].ids for i in idx], li, hi, lambda k, n=len(idx): reporter.advance(n)
            )
            for i, w in zip(idx, arrays):
                e = encs[i]
                att = Attention(
                    weights=w,
                    tokens=e.tokens,
                    offsets=e.offsets,
                    special=np.array(e.special, dtype=bool),
                    causal=self.causal,
                    model=self.name,
                    text=e.text,
                    token_ids=np.array(e.ids, dtype=np.int64),
                    layers=li,
                    heads=hi,
                    truncated=e.truncated,
                )
                results[i] = att.drop_special() if drop_special else att
        return results  # type: ignore[return-value]


def _text_list(text) -> tuple[bool, list[str]]:
    """Whether ``text`` is one string, and the texts as a list (checked: a string or a
    non-empty list or tuple)."""
    single = isinstance(text, str)
    if not single and not isinstance(text, (list, tuple)):
        raise InvalidInputError(
            f"text must be a string or a list of strings, got {type(text).__name__}"
        )
    texts = [text] if single else list(text)
    if not texts:
        raise EmptyTextError("no texts given: pass a string or a non-empty list of strings")
    return single, texts


#: Weights' dtypes :func:`load_model` accepts (attention is always returned as float32).
WeightsDtype = Literal["float32", "float16", "bfloat16"]
WEIGHTS_DTYPES: tuple[str, ...] = get_args(WeightsDtype)

_CACHE: dict[tuple, AttentionModel] = {}
_CACHE_LOCK = threading.Lock()


def load_model(
    spec=DEFAULT_MODEL,
    *,
    tokenizer=None,
    device: str | None = None,
    dtype: WeightsDtype | None = None,
    allow_pickle: bool = False,
    trust_remote_code: bool = False,
    revision: str | None = None,
    progress: ProgressOption = None,
) -> AttentionModel:
    """Load a model with eager attention (cached: one load per process and settings).

    Parameters
    ----------
    spec : str, path or transformers.PreTrainedModel
        ``"minilm"`` (default, packaged all-MiniLM-L6-v2), ``"smollm2"`` (packaged GGUF
        SmolLM2-135M-Instruct, converted once and cached), any Hugging Face id
        (``"bert-base-uncased"``, ``"gpt2"``, …), a local model folder, a ``.gguf`` file, or a
        Hugging Face model you have already loaded (pass its ``tokenizer=`` too).
    tokenizer : transformers tokenizer, optional
        Only with an already-loaded model: its tokenizer (a fast one gives character offsets,
        needed for :attr:`Attention.sources` and word matching).
    device : {"cpu", "cuda", "cuda:N", "mps", "auto"}, optional
        Torch device (``"cpu"`` by default); ``"auto"`` is the first GPU when there is one,
        else the CPU.  Not for an already-loaded model, which runs where it is.
    dtype : {"float32", "float16", "bfloat16"}, optional
        Weights' dtype (``"float32"`` by default; bfloat16 and float16 run on the CPU too).
        Attention is always returned as float32, each row divided by its sum in float64
        (:func:`attntopo.models.normalize_rows`).  Not for an already-loaded model.
    allow_pickle : bool
        Allow pickle (``pytorch_model.bin``) weights.  Off by default: safetensors/GGUF only.
    trust_remote_code : bool
        Allow custom model code from the repository.  Off by default.
    revision : str, optional
        Hub branch, tag or commit.
    progress : bool, callable or None, default None
        Report the load (nothing is reported when the model is already loaded): ``None`` a
        bar on a terminal or in Jupyter, ``True``/``False``, or a callback
        ``callback(done, total, stage)`` (see :mod:`attntopo._progress`).  Stages:
        ``"loading model"`` and ``"checking attention"``, and before them, the first time a
        GGUF file is used, its conversion: ``"reading GGUF tokenizer"``, ``"reading GGUF
        model"``, ``"dequantizing GGUF"`` (one unit per tensor), ``"building model"``,
        ``"saving converted model"``.

    Notes
    -----
    An already-loaded model is used in place and not cached.  attntopo needs the attention
    weights, which only the eager attention implementation returns: a model loaded with
    another one (``"sdpa"``, the default of transformers 5) is switched with
    ``model.set_attn_implementation("eager")``, and a model in training mode is put in
    ``eval()`` mode (dropout off), both on your object; a tokenizer without a padding token
    gets its end-of-text token as one.  A model that still returns no attention weights is
    refused with :class:`~attntopo.errors.ModelLoadError`.

    Raises
    ------
    ModelNotFoundError
        Unknown alias, missing folder, or hub unreachable (names the offline aliases).
    UnsafeWeightsError
        Only pickle weights and ``allow_pickle`` is False.
    ModelLoadError
        The model gives no attention weights.
    DeviceError
        An unknown device, ``cuda`` (or ``mps``) on a machine without one, a dtype the
        device cannot run (one line; a subclass of InvalidInputError).
    InvalidInputError
        A wrong type or setting (one line saying what is allowed).
    """
    allow_pickle = check_bool(allow_pickle, "allow_pickle")
    trust_remote_code = check_bool(trust_remote_code, "trust_remote_code")
    progress = check_progress(progress)
    if _is_hf_model(spec):
        given = [
            name
            for name, v in (
                ("device", device),
                ("dtype", dtype),
                ("revision", revision),
                ("allow_pickle", allow_pickle or None),
                ("trust_remote_code", trust_remote_code or None),
            )
            if v is not None
        ]
        if given:
            names = ", ".join(f"{g}=" for g in given)
            raise InvalidInputError(
                f"{names} {'is' if len(given) == 1 else 'are'} only for a model loaded by name; an "
                f"already-loaded model runs where and as it is (move it with model.to(...) first)"
            )
        return _wrap_loaded(spec, tokenizer)
    if tokenizer is not None:
        raise InvalidInputError(
            "tokenizer= is only for a model you have already loaded (load_model(model, "
            "tokenizer=tokenizer)); a model loaded by name brings its own"
        )
    if not isinstance(spec, (str, os.PathLike, ModelSpec)):
        raise InvalidInputError(
            "model must be an alias (minilm, smollm2), a Hugging Face id, a local path or a "
            f"loaded transformers model, got {type(spec).__name__}; for attention weights you "
            "already have, use Attention.from_weights(weights, tokens)"
        )
    device = check_device(device)
    dtype = check_dtype(dtype, device)
    resolved = resolve_spec(spec, revision=revision)
    key = (
        resolved.kind,
        resolved.path,
        resolved.gguf_file,
        resolved.revision,
        device,
        dtype,
        allow_pickle,
        trust_remote_code,
    )
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        with make_reporter(progress, description=f"loading {resolved.name}") as reporter:
            reporter.add_total(2)  # the weights, the attention check (a conversion adds its own)
            hf_model, tok, source = load_hf(
                resolved,
                dtype=dtype,
                device=device,
                allow_pickle=allow_pickle,
                trust_remote_code=trust_remote_code,
                reporter=reporter,
            )
            reporter.advance()
            reporter.stage("checking attention")
            model = AttentionModel(resolved, hf_model, tok, source, device, dtype)
            reporter.advance()
        _CACHE[key] = model
        return model


def describe_model(
    spec=DEFAULT_MODEL,
    *,
    device: str | None = None,
    dtype: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> ModelDescription:
    """A model's tokenizer and configuration, without loading its weights.

    For a process that plans work a model does elsewhere (the driver of a corpus run on Ray,
    whose actors load the weights): :meth:`ModelDescription.tokenize` tokenizes as the loaded
    model does, and the layer and head counts, the context length, ``name``, ``dtype`` and
    ``device`` are those :func:`load_model` with the same arguments gives.  An
    :class:`AttentionModel` already loaded is returned as it is.

    Parameters
    ----------
    spec, device, dtype, revision, trust_remote_code
        As :func:`load_model` (``device`` and ``dtype`` are checked, not used: nothing runs).

    Raises
    ------
    ModelNotFoundError, ModelLoadError, InvalidInputError, DeviceError
        As :func:`load_model`, for the configuration and tokenizer files.
    """
    from .loading import load_description, model_class_name

    if isinstance(spec, ModelDescription):
        return spec
    if not isinstance(spec, (str, os.PathLike, ModelSpec)):
        raise InvalidInputError(
            f"model must be an alias (minilm, smollm2), a Hugging Face id or a local path to be "
            f"described, got {type(spec).__name__}"
        )
    device = check_device(device)
    dtype = check_dtype(dtype, device)
    resolved = resolve_spec(spec, revision=revision)
    config, tok, source = load_description(resolved, trust_remote_code=trust_remote_code)
    return ModelDescription(
        resolved, config, tok, source, device, dtype, architecture=model_class_name(config)
    )


def _is_hf_model(obj) -> bool:
    """A transformers model object (checked without importing transformers for names)."""
    if isinstance(obj, (str, os.PathLike, ModelSpec)) or "transformers" not in sys.modules:
        return False
    from transformers import PreTrainedModel

    return isinstance(obj, PreTrainedModel)


def _wrap_loaded(hf_model, tokenizer) -> AttentionModel:
    """An :class:`AttentionModel` around a model and tokenizer the caller already loaded."""
    from transformers import PreTrainedTokenizerBase

    name = str(getattr(hf_model, "name_or_path", "") or type(hf_model).__name__)
    if tokenizer is None:
        raise InvalidInputError(
            f"an already-loaded model needs its tokenizer: load_model(model, tokenizer="
            f"AutoTokenizer.from_pretrained({name!r}))"
        )
    if not isinstance(tokenizer, PreTrainedTokenizerBase):
        raise InvalidInputError(
            f"tokenizer must be a transformers tokenizer (AutoTokenizer.from_pretrained(...)), got "
            f"{type(tokenizer).__name__}"
        )
    impl = getattr(hf_model.config, "_attn_implementation", None)
    if impl != "eager":
        try:
            hf_model.set_attn_implementation("eager")
        except Exception as e:  # noqa: BLE001 - any failure: the probe below decides
            log.info("could not switch %s to eager attention: %s", name, e)
        else:
            log.info(
                "switched %s from %r to eager attention (attntopo needs the weights)", name, impl
            )
    if hf_model.training:
        hf_model.eval()
    param = next(hf_model.parameters(), None)
    device = str(param.device) if param is not None else "cpu"
    dtype = str(param.dtype).replace("torch.", "") if param is not None else "float32"
    spec = ModelSpec(name=name, kind="object", path=name)
    return AttentionModel(spec, hf_model, tokenizer, name, device, dtype, owned=False)


def clear_model_cache() -> None:
    """Forget every loaded model (frees memory; the next :func:`load_model` reloads)."""
    with _CACHE_LOCK:
        _CACHE.clear()
