"""The ``--capacity`` file: each broker's disk capacity in bytes, as one JSON object.

    {"1": 2000000000000, "2": 2000000000000, "3": 4000000000000}

Keys are broker ids (JSON keys are strings), values whole numbers of bytes > 0: the size of the
log directories' disks, as ``df`` gives it for the volume. With it the byte balance evens the
fraction of each disk in use rather than the bytes, so a bigger disk takes a bigger share.
"""

from __future__ import annotations

from pathlib import Path

from ferry.formats._problems import INT64_MAX, Problems, as_int, describe
from ferry.formats.json_text import decode_json, read_bytes


def load_capacity(path: Path) -> dict[int, int]:
    """Read and check a capacity file (see the module docstring).

    Raises:
        InputError: unreadable, not JSON, or a key or value that is not a broker id and a size;
            every problem is listed, each naming the file and the key.
    """
    return parse_capacity(read_bytes(path), str(path))


def parse_capacity(data: str | bytes, source: str) -> dict[int, int]:
    """:func:`load_capacity` on text already read; ``source`` names it in messages."""
    problems = Problems(source)
    decoded = decode_json(data, source)
    if not isinstance(decoded, dict):
        problems.add(
            "",
            f'expected a JSON object of broker id to bytes, e.g. {{"1": 2000000000000}}, '
            f"got {describe(decoded)}",
        )
        problems.raise_if_any()
    capacity: dict[int, int] = {}
    for key, value in decoded.items():
        if not key.isascii() or not key.isdigit():
            problems.add(key, "expected a broker id as the key")
            continue
        size = as_int(value, key, problems, minimum=1, maximum=INT64_MAX)
        if size is not None:
            capacity[int(key)] = size
    if not decoded:
        problems.add("", "no broker listed")
    problems.raise_if_any()
    return capacity
