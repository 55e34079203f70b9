"""The public API as the tests walk it: every public module of the package (no ``_`` in its
dotted name; ``cli`` and ``web`` are leaves with their own options and fields), every name in
its ``__all__`` (lazily loaded names included: ``getattr`` loads them), and the public methods of
the public classes."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

LEAVES = ("cli", "web")


def public_modules() -> list[str]:
    import attntopo

    names = ["attntopo"]
    for info in pkgutil.walk_packages(attntopo.__path__, "attntopo."):
        parts = info.name.split(".")[1:]
        if parts[0] in LEAVES or any(p.startswith("_") for p in parts):
            continue
        names.append(info.name)
    return names


def public_callables():
    """``(qualified name, object, class)`` of every public function, class and method, each once
    (a name re-exported by several modules counts under the first module that lists it);
    ``class`` is the class a method belongs to, None for a function or a class."""
    seen = set()
    for modname in public_modules():
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not callable(obj) or inspect.ismodule(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            qual = f"{modname}.{name}"
            yield qual, obj, None
            if inspect.isclass(obj):
                for mname, meth in vars(obj).items():
                    if mname.startswith("_") or isinstance(meth, property):
                        continue
                    if callable(meth) or isinstance(meth, (staticmethod, classmethod)):
                        yield f"{qual}.{mname}", getattr(obj, mname), obj


def signature(obj):
    """``inspect.signature`` or None where there is none to read (a builtin, a typing alias)."""
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None
