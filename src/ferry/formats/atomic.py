"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Each file is written to a temporary file in the same directory (so the final rename never crosses
file systems), flushed and fsynced, then moved over the target with ``os.replace`` (pip's
``adjacent_tmp_file`` + ``replace``). :func:`write_files_atomic` writes every temporary file first
and renames only when all of them are on disk, so a failure while writing (disk full, permissions)
leaves none of the targets touched.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def dumps_json(value: Any) -> str:
    """``value`` as JSON text: two-space indent and a trailing newline, keys in insertion order."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def dumps_rows(doc: Mapping[str, Any]) -> str:
    """JSON text of an object of lists with one list item per line: diff- and grep-friendly, and
    written by the C encoder (``indent`` makes :mod:`json` fall back to Python: seconds for a plan
    of a million partitions)."""
    return join_rows(
        {
            key: [json.dumps(item, ensure_ascii=False) for item in value]
            if isinstance(value, list)
            else json.dumps(value, ensure_ascii=False)
            for key, value in doc.items()
        }
    )


def join_rows(fields: Mapping[str, str | list[str]]) -> str:
    """:func:`dumps_rows`'s text from its fields already encoded: a value's JSON text, or a list
    of its items' JSON texts (one per line)."""
    lines = []
    for key, value in fields.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"  {item}" for item in value)
            lines.append(f" {json.dumps(key)}: [\n{items}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {'[]' if isinstance(value, list) else value}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; the directory must exist."""
    write_files_atomic({path: text})


def write_json_atomic(path: Path, value: Any) -> None:
    """Write ``value`` as JSON (see :func:`dumps_json`) to ``path`` atomically."""
    write_text_atomic(path, dumps_json(value))


def write_files_atomic(files: Mapping[Path, str]) -> None:
    """Write several UTF-8 text files so that either all of them appear or none does.

    Raises:
        OSError: a file could not be written. The renames start only once every temporary file
            is on disk, so the targets are untouched then, and no temporary file is left.
    """
    for path in files:
        # os.replace cannot put a file over a directory; finding that out halfway through the
        # renames would leave some targets new and some old, so check before writing anything.
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    temps: dict[Path, Path] = {}
    mode = 0o666 & ~_current_umask()
    try:
        for path, text in files.items():
            temps[path] = _write_temp(path, text, mode)
        for path, temp in temps.items():
            os.replace(temp, path)
    finally:
        # After a successful run every temp has been renamed away; after a failure none remain.
        for temp in temps.values():
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
    for directory in {path.parent for path in files}:
        _fsync_directory(directory)


def _write_temp(path: Path, text: str, mode: int) -> Path:
    """Write ``text`` to a fresh temporary file next to ``path`` and fsync it."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            # mkstemp creates the file private (0600); give it the mode a plain open() would.
            os.chmod(temp, mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _current_umask() -> int:
    # os.umask can only be read by setting it; the CLI is single-threaded, so the swap is safe.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _fsync_directory(directory: Path) -> None:
    # Makes the renames themselves durable on POSIX; Windows cannot open a directory for this.
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
