"""Snapshots by path: a JSON file or a Parquet snapshot directory, and fleet folders of them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ferry.errors import InputError
from ferry.formats.atomic import write_json_atomic
from ferry.formats.parquet import (
    PARTITIONS_FILE,
    is_parquet_snapshot,
    load_parquet_snapshot,
    write_parquet_snapshot,
)
from ferry.formats.snapshot_json import dump_snapshot, load_snapshot
from ferry.model import ClusterSnapshot


def load_any(path: Path) -> ClusterSnapshot:
    """A snapshot JSON file or a Parquet snapshot directory, validated.

    Raises:
        InputError: unreadable or invalid, or neither kind of snapshot.
    """
    if path.is_dir():
        if not is_parquet_snapshot(path):
            raise InputError(
                f"{path}: a directory but not a Parquet snapshot (no brokers.parquet and partitions.parquet)"
            )
        return load_parquet_snapshot(path)
    return load_snapshot(path)


def fleet_members(folder: Path) -> list[tuple[str, Path]]:
    """The snapshots of a fleet folder, as (cluster name, path), sorted by name.

    Every ``*.json`` file and every Parquet snapshot directory directly in ``folder`` is one cluster,
    named after it (file name without ``.json``).

    Raises:
        InputError: not a directory, no snapshot in it, or two snapshots with the same name.
    """
    if not folder.is_dir():
        raise InputError(f"--fleet {folder}: not a directory")
    members: dict[str, Path] = {}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix == ".json":
            name = entry.stem
        elif entry.is_dir() and is_parquet_snapshot(entry):
            name = entry.name
        else:
            continue
        if name in members:
            raise InputError(f"--fleet {folder}: two snapshots are named {name} ({members[name]}, {entry})")
        members[name] = entry
    if not members:
        raise InputError(f"--fleet {folder}: no snapshot JSON file or Parquet snapshot directory in it")
    return sorted(members.items())


def partitions_about(path: Path) -> int:
    """About how many partitions the snapshot at ``path`` holds, without reading it: the row count
    of a Parquet snapshot's footer, or the ``"topic"`` keys of a JSON file, counted in chunks.

    For deciding where to plan a cluster, not for planning: 0 where the file cannot be read (reading
    it for real reports why).
    """
    try:
        if path.is_dir():
            return int(pq.read_metadata(path / PARTITIONS_FILE).num_rows)
        count, tail = 0, b""
        with path.open("rb") as file:
            while chunk := file.read(_CHUNK):
                # A key split across two chunks is counted once: in the tail it was cut from.
                joined = tail + chunk
                count += joined.count(_TOPIC_KEY)
                tail = joined[-(len(_TOPIC_KEY) - 1) :]
        return count
    except (OSError, pa.ArrowException):
        return 0


_TOPIC_KEY = b'"topic"'
_CHUNK = 1 << 22


def write_any(snapshot: ClusterSnapshot, path: Path) -> str:
    """Write ``snapshot`` as JSON if ``path`` ends in ``.json``, else as a Parquet snapshot directory.

    Returns the format written, ``"json"`` or ``"parquet"``.
    """
    if path.suffix == ".json":
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, dump_snapshot(snapshot))
        return "json"
    write_parquet_snapshot(snapshot, path)
    return "parquet"
