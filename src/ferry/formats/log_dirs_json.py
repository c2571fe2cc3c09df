"""The log-dir fields of the snapshot JSON (JBOD): a broker's ``log_dirs`` and a partition's
``replica_dirs``.

::

    {"id": 1, "rack": "r0",
     "log_dirs": [{"path": "/data/a", "total_bytes": 1000, "usable_bytes": 600,
                   "offline": false, "cordoned": false}, ...]}
    {"topic": "t", "partition": 0, "replicas": [1, 2], "replica_dirs": {"1": "/data/a", "2": "/data/b"}}

In a dir only ``path`` is required (``total_bytes``, ``usable_bytes``: unknown when absent;
``offline``, ``cordoned``: false when absent). ``replica_dirs`` names the dir of each replica
where known. Both are optional; ``ferry snapshot`` writes them from DescribeLogDirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ferry.formats._problems import (
    INT64_MAX,
    Problems,
    as_array,
    as_bool,
    as_int,
    as_object,
    as_str,
    check_fields,
    replica_keyed,
)
from ferry.model import Broker, LogDir, PartitionState

_DIR_OPTIONAL = ("total_bytes", "usable_bytes", "offline", "cordoned")


def dump_log_dirs(broker: Broker) -> list[dict[str, Any]]:
    """A broker's dirs as JSON objects, unknown and false fields left out."""
    out = []
    for d in broker.log_dirs:
        entry: dict[str, Any] = {"path": d.path}
        for key, value in (("total_bytes", d.total_bytes), ("usable_bytes", d.usable_bytes)):
            if value is not None:
                entry[key] = value
        for key, flag in (("offline", d.offline), ("cordoned", d.cordoned)):
            if flag:
                entry[key] = True
        out.append(entry)
    return out


def dump_replica_dirs(partition: PartitionState) -> dict[str, str]:
    """The dir of each replica where known, keyed by broker id (JSON keys are strings)."""
    return {str(b): d for b, d in partition.replica_dirs}


def parse_log_dirs(value: object, path: str, problems: Problems) -> tuple[LogDir, ...] | None:
    """A broker's ``log_dirs`` (``()`` when absent); None after recording a problem."""
    if value is None:
        return ()
    items = as_array(value, path, problems)
    if items is None:
        return None
    dirs = [_parse_dir(item, f"{path}[{i}]", problems) for i, item in enumerate(items)]
    paths = [d.path for d in dirs if d is not None]
    if len(set(paths)) != len(paths):
        problems.add(path, "a log dir is listed twice")
        return None
    if any(d is None for d in dirs):
        return None
    return tuple(sorted((d for d in dirs if d is not None), key=lambda d: d.path))


def _parse_dir(value: object, path: str, problems: Problems) -> LogDir | None:
    obj = as_object(value, path, problems)
    if obj is None or not check_fields(obj, path, problems, required=("path",), optional=_DIR_OPTIONAL):
        return None
    where = as_str(obj["path"], f"{path}.path", problems)
    sizes = [
        None if obj.get(key) is None else as_int(obj[key], f"{path}.{key}", problems, maximum=INT64_MAX)
        for key in ("total_bytes", "usable_bytes")
    ]
    flags = [
        False if obj.get(key) is None else as_bool(obj[key], f"{path}.{key}", problems)
        for key in ("offline", "cordoned")
    ]
    bad_size = any(
        obj.get(key) is not None and n is None
        for key, n in zip(("total_bytes", "usable_bytes"), sizes, strict=True)
    )
    if where is None or bad_size or None in flags:
        return None
    return LogDir(where, sizes[0], sizes[1], offline=bool(flags[0]), cordoned=bool(flags[1]))


def parse_replica_dirs(
    value: object, path: str, replicas: Sequence[int] | None, problems: Problems
) -> tuple[tuple[int, str], ...]:
    """A partition's ``replica_dirs`` as (broker, dir) by broker id; ``()`` when absent or invalid."""
    found = replica_keyed(value, path, replicas, problems, lambda where, at: as_str(where, at, problems))
    return tuple(sorted(found.items()))
