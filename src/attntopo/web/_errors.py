"""The explorer's error answers: always JSON ``{"error": "one line"}``.

A private module below :mod:`attntopo.web.app` and :mod:`attntopo.web.api`.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi.responses import JSONResponse

__all__ = ["JobError", "error_response", "one_line", "validation_message"]


class JobError(Exception):
    """A request that cannot run now: ``status`` 503 (busy) or 504 (timeout)."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def one_line(msg: Any, limit: int = 400) -> str:
    s = re.sub(r"\s*\n\s*", " ", str(msg)).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def error_response(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": one_line(message)}, status_code=status, headers=headers)


def _field_name(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts)


def validation_message(errors: list[dict], max_chars: int) -> tuple[int, str]:
    """``(status, one line)`` for pydantic's errors: 400 for malformed JSON, else 422."""
    if not errors:
        return 422, "invalid request"
    e = errors[0]
    kind = e.get("type", "")
    loc = tuple(e.get("loc", ()))
    name = _field_name(loc)
    ctx = e.get("ctx") or {}
    if kind == "json_invalid":
        pos = loc[1] if len(loc) > 1 else None
        where = f" at character {pos}" if isinstance(pos, int) else ""
        return (
            400,
            f"malformed JSON in the request body{where}: {ctx.get('error', 'cannot be parsed')}",
        )
    if loc == ("body",) or not name:
        if kind == "missing":
            return 400, "the request needs a JSON body (Content-Type: application/json)"
        if kind in ("model_attributes_type", "dict_type", "model_type"):
            return 400, (
                "the request body must be a JSON object (send Content-Type: application/json), "
                "see /docs for its fields"
            )
        name = ""
    if kind == "missing":
        msg = f"missing field {name!r}"
    elif kind == "extra_forbidden":
        msg = f"unknown field {name!r}; see /docs for the fields of this request"
    elif kind == "string_too_long":
        got = e.get("input")
        n = len(got) if isinstance(got, str) else None
        limit = ctx.get("max_length", max_chars)
        msg = (
            (
                f"{name} is too long: {n} characters; this server accepts at most {limit} "
                f"(attntopo serve --max-chars)"
            )
            if n is not None
            else f"{name} is too long (at most {limit} characters)"
        )
    elif kind == "string_too_short" and ctx.get("min_length") == 1:
        msg = f"{name} is empty: give at least one word"
    else:
        text = str(e.get("msg", "invalid value"))
        text = re.sub(r"^(Value error|Assertion failed), ", "", text)
        if not name or text.startswith(name):
            msg = text
        else:
            msg = f"{name}: {text[:1].lower() + text[1:]}"
    more = len(errors) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return 422, msg
