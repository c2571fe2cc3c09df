"""A ferry JSON file's text: read from disk and decoded, each failure one line naming the file
(and for a syntax error the line and column)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from ferry.errors import InputError


def read_bytes(path: str | Path) -> bytes:
    """The content of ``path``; an unreadable file is an InputError naming it."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def decode_json(text: str | bytes, source: str) -> Any:
    """Parse JSON text, turning a syntax error into an InputError with line and column.

    orjson first: it decodes a 1M-partition snapshot in 1.3 s where the standard library takes
    2.2 s (`benchmarks/snapshot_load.py`). Text it refuses is decoded again by the standard
    library, whose errors this reports as before (orjson's name no line and column in the same
    words), and which accepts what orjson alone refuses (lone surrogate escapes). An integer
    beyond 64 bits becomes a float in orjson: it is then refused as not an integer."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text: {exc.reason}") from None
    except RecursionError:
        # Python's decoder recurses per level: a file of nested brackets exhausts the stack long
        # before its size matters. No ferry file nests more than a few levels.
        raise InputError(f"{source}: not valid ferry input: JSON nested too deeply") from None
    except ValueError as exc:
        raise InputError(f"{source}: not valid JSON: {exc}") from None


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity, which are not JSON and which Kafka's parser refuses.
    raise ValueError(f"{name} is not allowed in JSON")
