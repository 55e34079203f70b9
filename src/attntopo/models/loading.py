"""Loading weights and tokenizers: eager attention always, safetensors/GGUF only by default,
GGUF converted once and cached, one load per process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import warnings
from pathlib import Path
from urllib.parse import urlparse

from .._progress import NO_PROGRESS, Reporter
from ..errors import (
    MissingDependencyError,
    ModelLoadError,
    ModelNotFoundError,
    UnsafeWeightsError,
)
from .specs import ModelSpec, packaged_aliases

__all__ = ["cache_dir", "load_hf", "gguf_converted_folder"]

log = logging.getLogger("attntopo")
_CONVERT_LOCK = threading.Lock()


def cache_dir() -> Path:
    """The user cache folder of attntopo (``$ATTNTOPO_CACHE_DIR`` overrides)."""
    env = os.environ.get("ATTNTOPO_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("attntopo"))


@contextlib.contextmanager
def _quiet_transformers():
    """Silence progress bars and advisory warnings of transformers while loading."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    prev_bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)
        if prev_bars:
            hf_logging.enable_progress_bar()


def _offline_message(spec: ModelSpec, why: str) -> str:
    aliases = ", ".join(packaged_aliases()) or "none installed"
    return (
        f"cannot load {spec.name!r} from the Hugging Face hub ({why}); packaged aliases that work "
        f"offline: {aliases}; or pass a local folder"
    )


def _hub_reachable(timeout: float = 2.0) -> bool:
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    u = urlparse(endpoint)
    host = u.hostname or "huggingface.co"
    port = u.port or (443 if u.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _hub_cached(spec: ModelSpec) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return False
    try:
        hit = try_to_load_from_cache(spec.path, "config.json", revision=spec.revision)
    except Exception:  # noqa: BLE001 - malformed ids are handled by the hub call itself
        return False
    return isinstance(hit, str)


def _check_hub(spec: ModelSpec) -> None:
    """Fail fast (instead of minutes of retries) when a hub id cannot possibly load."""
    if _hub_cached(spec):
        return
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        raise ModelNotFoundError(
            _offline_message(spec, "HF_HUB_OFFLINE is set and it is not cached")
        )
    if not _hub_reachable():
        raise ModelNotFoundError(
            _offline_message(spec, "the hub is unreachable and it is not cached")
        )


def _file_fingerprint(path: Path) -> str:
    """Cheap content fingerprint: size plus hashes of the first and last 4 MiB."""
    import transformers

    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    h.update(transformers.__version__.encode())
    with open(path, "rb") as f:
        h.update(f.read(4 << 20))
        if size > 8 << 20:
            f.seek(-(4 << 20), os.SEEK_END)
            h.update(f.read(4 << 20))
    return h.hexdigest()[:16]


def gguf_converted_folder(spec: ModelSpec, *, reporter: Reporter = NO_PROGRESS) -> Path:
    """Return a folder with the GGUF model dequantized to float32 safetensors, converting once.

    The first call dequantizes the GGUF file with transformers (tens of seconds) and stores
    ``model.safetensors`` + ``config.json`` + tokenizer files under :func:`cache_dir`; later
    calls (in any process) find the folder and return at once.  Writes go to a temporary
    folder that is renamed into place, under a file lock, so parallel processes are safe.
    A conversion reports its stages to ``reporter`` (and adds their units to its total):
    ``"reading GGUF tokenizer"``, ``"reading GGUF model"``, ``"dequantizing GGUF"`` (one
    unit per tensor), ``"building model"``, ``"saving converted model"``.
    """
    try:
        import accelerate  # noqa: F401
        import gguf  # noqa: F401
    except ImportError as e:
        raise MissingDependencyError(
            f"loading GGUF models needs the packages 'gguf' and 'accelerate' ({e.name} is "
            "missing): pip install 'attntopo[gguf]'"
        ) from None
    src = Path(spec.path) / str(spec.gguf_file)
    if not src.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {src}")
    key = f"{src.stem}-{_file_fingerprint(src)}"
    root = cache_dir() / "models"
    target = root / key
    marker = target / "attntopo-conversion.json"
    if marker.is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    import fcntl

    with _CONVERT_LOCK, open(root / f"{key}.lock", "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        try:
            if marker.is_file():
                return target
            log.info("converting %s to safetensors (once; cached in %s)", src.name, target)
            _convert_gguf(src, target, reporter)
        finally:
            fcntl.flock(lockf, fcntl.LOCK_UN)
    return target


@contextlib.contextmanager
def _gguf_tensor_progress(reporter: Reporter):
    """Count the tensors transformers dequantizes, instead of its own tqdm bar on stderr.

    transformers' GGUF reader wraps its loop over the file's tensors in ``tqdm`` (the name
    imported into ``transformers.modeling_gguf_pytorch_utils``); for the duration of the
    block that name is a counter: the tensors are added to ``reporter``'s total when the loop
    starts, each one advances it, and the stage becomes ``"building model"`` when it ends.
    Where transformers has no such name the block changes nothing.
    """
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # pragma: no cover - transformers without GGUF support
        yield
        return
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:  # pragma: no cover - a transformers that no longer uses tqdm there
        yield
        return

    def counted(iterable, *args, **kwargs):
        try:
            reporter.add_total(len(iterable))
        except TypeError:  # pragma: no cover - not sized: count without a total
            pass
        reporter.stage("dequantizing GGUF")
        for item in iterable:
            yield item
            reporter.advance()
        reporter.stage("building model")

    gguf_utils.tqdm = counted
    try:
        yield
    finally:
        gguf_utils.tqdm = original


def _convert_gguf(src: Path, target: Path, reporter: Reporter = NO_PROGRESS) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModel, AutoTokenizer

    reporter.add_total(3)  # tokenizer, model (plus its tensors, added when known), saving
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with _quiet_transformers(), _gguf_tensor_progress(reporter):
            reporter.stage("reading GGUF tokenizer")
            tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
            reporter.advance()
            reporter.stage("reading GGUF model")
            model = AutoModel.from_pretrained(
                str(src.parent),
                gguf_file=src.name,
                attn_implementation="eager",
                dtype=torch.float32,
            )
            reporter.advance()
        reporter.stage("saving converted model")
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        cfg = model.config.to_dict()
        cfg.pop("quantization_config", None)
        cfg["architectures"] = [type(model).__name__]
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2, default=str))
        tok.save_pretrained(str(tmp))
        import transformers

        (tmp / "attntopo-conversion.json").write_text(
            json.dumps({"source": str(src), "transformers": transformers.__version__}, indent=2)
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        reporter.advance()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_description(spec: ModelSpec, *, trust_remote_code: bool = False):
    """``(config, tokenizer, source)`` of a model, without its weights.

    A GGUF file is read for its configuration and tokenizer only (transformers parses its
    metadata; no tensor is dequantized, nothing is converted).  The model class is the one
    :func:`load_hf` would instantiate (``AutoModel``'s for the configuration), named.
    Raises the typed errors of :mod:`attntopo.errors` with one-line messages.
    """
    from transformers import AutoConfig, AutoTokenizer

    if spec.kind == "hub":
        _check_hub(spec)
    common: dict = dict(trust_remote_code=trust_remote_code)
    if spec.revision:
        common["revision"] = spec.revision
    if spec.is_gguf:
        common["gguf_file"] = spec.gguf_file
    try:
        with _quiet_transformers():
            config = AutoConfig.from_pretrained(spec.path, **common)
            tokenizer = AutoTokenizer.from_pretrained(spec.path, **common)
    except (OSError, EnvironmentError, ValueError) as e:
        msg = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        if spec.kind == "hub":
            raise ModelNotFoundError(_offline_message(spec, msg[:160])) from None
        raise ModelLoadError(
            f"could not read {spec.name!r}'s configuration and tokenizer: {msg}"
        ) from None
    return config, tokenizer, spec.path


def model_class_name(config) -> str:
    """The class :func:`load_hf`'s ``AutoModel`` makes for ``config`` ("unknown" if none)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    name = MODEL_MAPPING_NAMES.get(getattr(config, "model_type", ""), "unknown")
    return name if isinstance(name, str) else str(name[0])


def load_hf(
    spec: ModelSpec,
    *,
    dtype: str,
    device: str,
    allow_pickle: bool,
    trust_remote_code: bool,
    reporter: Reporter = NO_PROGRESS,
):
    """Load ``(model, tokenizer, source_folder_or_id)`` with eager attention.

    A GGUF file converted now reports its stages to ``reporter`` (:func:`gguf_converted_folder`);
    loading the weights is stage ``"loading model"`` (its unit is the caller's).
    Raises the typed errors of :mod:`attntopo.errors` with one-line messages.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch_dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[
        dtype
    ]
    if spec.kind == "hub":
        _check_hub(spec)
    path = str(gguf_converted_folder(spec, reporter=reporter)) if spec.is_gguf else spec.path
    reporter.stage("loading model")
    common = dict(trust_remote_code=trust_remote_code)
    if spec.revision:
        common["revision"] = spec.revision
    try:
        with _quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(path, **common)
            model = AutoModel.from_pretrained(
                path,
                attn_implementation="eager",
                dtype=torch_dtype,
                use_safetensors=None if allow_pickle else True,
                **common,
            )
    except (OSError, EnvironmentError) as e:
        msg = str(e)
        local = Path(path)
        if (
            local.is_dir()
            and not allow_pickle
            and any(
                (local / f).exists() for f in ("pytorch_model.bin", "pytorch_model.bin.index.json")
            )
        ):
            raise UnsafeWeightsError(
                f"{spec.name!r} has only pickle weights (pytorch_model.bin); pass "
                "allow_pickle=True only if you trust its source"
            ) from None
        if not allow_pickle and "safetensors" in msg.lower():
            raise UnsafeWeightsError(
                f"{spec.name!r} offers no safetensors weights; pass allow_pickle=True only if you "
                f"trust its source"
            ) from None
        if spec.kind == "hub":
            raise ModelNotFoundError(_offline_message(spec, msg.splitlines()[0][:160])) from None
        raise ModelLoadError(f"could not load {spec.name!r}: {msg.splitlines()[0][:200]}") from None
    except ValueError as e:
        if "trust_remote_code" in str(e):
            raise ModelLoadError(
                f"{spec.name!r} needs custom code from its repository; pass trust_remote_code=True "
                f"only if you trust it"
            ) from None
        raise ModelLoadError(
            f"could not load {spec.name!r}: {str(e).splitlines()[0][:200]}"
        ) from None
    model.eval()
    model.requires_grad_(False)
    if device != "cpu":
        model.to(device)
    return model, tokenizer, path
