"""Shared checks for the JSON readers: collect every problem, then raise one InputError.

A reader never stops at the first bad value: it records ``FILE: JSON.path: message`` for each one
and keeps going, so a user fixes a hand-edited file in one pass instead of one run per mistake.
The typed getters below return ``None`` after recording a problem; callers skip whatever depends on
that value instead of reporting knock-on errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ferry.errors import InputError
from ferry.formats.json_text import decode_json
from ferry.model import TopicPartition

T = TypeVar("T")

# Kafka stores broker ids and partition numbers as int32; sizes are int64.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class Problems:
    """Collects problems found in one file, all prefixed with the file name."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        """Record ``message`` about the value at JSON ``path`` (empty path: the whole file)."""
        where = f"{self.source}: {path}" if path else self.source
        self.items.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        """Raise one InputError holding every recorded problem, if there is any."""
        raise_problems(self.items)


def raise_problems(problems: Sequence[str]) -> None:
    """Raise an InputError whose message is the first problem and whose ``problems`` are all."""
    if not problems:
        return
    raise InputError.of(problems)


def read_root(data: object, problems: Problems) -> Mapping[str, Any] | None:
    """The top-level object of a version 1 document given as JSON text or decoded JSON.

    None (with the problem recorded) when it is not an object or not version 1: the rest of such a
    document would only produce noise. A syntax error raises at once, as :func:`decode_json` does.
    """
    decoded = decode_json(data, problems.source) if isinstance(data, str | bytes) else data
    if not isinstance(decoded, dict):
        problems.add("", f"expected a JSON object at the top level, got {describe(decoded)}")
        return None
    return decoded if check_version(decoded, problems) else None


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    # bool before int: Python's bool is an int, JSON's boolean is not.
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    for python_type, name in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def describe(value: object) -> str:
    """A short description of a bad value: its JSON type and, for scalars, the value itself."""
    if isinstance(value, list | dict) or value is None:
        return type_name(value)
    return f"{type_name(value)} {json.dumps(value)}"


def as_object(value: object, path: str, problems: Problems) -> Mapping[str, Any] | None:
    """``value`` if it is a JSON object, else record a problem and return None."""
    if isinstance(value, dict):
        return value
    problems.add(path, f"expected an object, got {describe(value)}")
    return None


def as_array(value: object, path: str, problems: Problems) -> list[Any] | None:
    """``value`` if it is a JSON array, else record a problem and return None."""
    if isinstance(value, list):
        return value
    problems.add(path, f"expected an array, got {describe(value)}")
    return None


def as_int(
    value: object, path: str, problems: Problems, *, minimum: int = 0, maximum: int = INT32_MAX
) -> int | None:
    """``value`` if it is an integer within bounds, else record a problem and return None.

    ``true``/``false`` are refused although Python treats bool as int: ``"partition": true`` is a
    mistake, not partition 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        problems.add(path, f"expected an integer, got {describe(value)}")
        return None
    if value < minimum:
        what = "a non-negative integer" if minimum == 0 else f"an integer >= {minimum}"
        problems.add(path, f"expected {what}, got {value}")
        return None
    if value > maximum:
        problems.add(path, f"{value} is larger than the maximum {maximum}")
        return None
    return value


def as_str(value: object, path: str, problems: Problems) -> str | None:
    """``value`` if it is a non-empty string, else record a problem and return None."""
    if not isinstance(value, str):
        problems.add(path, f"expected a string, got {describe(value)}")
        return None
    if not value:
        problems.add(path, "must not be empty")
        return None
    return value


def as_id_list(value: object, path: str, problems: Problems) -> tuple[int, ...] | None:
    """A JSON array of broker ids without duplicates, else record problems and return None."""
    items = as_array(value, path, problems)
    if items is None:
        return None
    ids = [as_int(item, f"{path}[{i}]", problems) for i, item in enumerate(items)]
    checked = [i for i in ids if i is not None]
    if len(checked) != len(ids):
        return None
    duplicates = sorted({i for i in checked if checked.count(i) > 1})
    if duplicates:
        problems.add(path, f"{brokers_phrase(duplicates)} listed more than once")
        return None
    return tuple(checked)


def as_names(value: object, path: str, problems: Problems) -> tuple[str, ...]:
    """An optional JSON array of names (``()`` when absent or after recording a problem)."""
    items = [] if value is None else as_array(value, path, problems) or []
    names = [as_str(item, f"{path}[{i}]", problems) for i, item in enumerate(items)]
    return tuple(sorted({n for n in names if n is not None}))


def replica_keyed(
    value: object,
    path: str,
    replicas: Sequence[int] | None,
    problems: Problems,
    parse: Callable[[object, str], T | None],
) -> dict[int, T]:
    """An optional JSON object keyed by broker id (``{"1": ..., "2": ...}``), each key one of
    ``replicas`` and each value read by ``parse(value, path)``; ``{}`` when absent or invalid,
    the readable entries otherwise (a problem is recorded for each other one)."""
    if value is None:
        return {}
    obj = as_object(value, path, problems)
    if obj is None:
        return {}
    found: dict[int, T] = {}
    for key, item in obj.items():
        if not key.isdigit():
            problems.add(f"{path}.{key}", "expected a broker id as the key")
            continue
        if replicas is not None and int(key) not in replicas:
            problems.add(f"{path}.{key}", f"broker {key} is not one of replicas {list(replicas)}")
        checked = parse(item, f"{path}.{key}")
        if checked is not None:
            found[int(key)] = checked
    return found


def as_replicas(
    value: object, path: str, known: frozenset[int] | None, problems: Problems
) -> tuple[int, ...] | None:
    """A non-empty replica list without duplicates whose brokers are all in ``known``.

    ``known`` is None when the broker list itself could not be read; membership is not checked then.
    """
    replicas = as_id_list(value, path, problems)
    if replicas is None:
        return None
    if not replicas:
        problems.add(path, "must list at least one replica")
        return None
    unknown = [b for b in replicas if known is not None and b not in known]
    for broker_id in unknown:
        problems.add(path, f"broker {broker_id} is not in brokers")
    return None if unknown else replicas


def brokers_phrase(ids: Sequence[int]) -> str:
    """``broker 3`` or ``brokers 3, 4``, for messages."""
    listed = ", ".join(str(i) for i in ids)
    return f"broker {listed}" if len(ids) == 1 else f"brokers {listed}"


def check_duplicate_tp(
    item: object, index: int, first_seen: dict[TopicPartition, int], problems: Problems
) -> bool:
    """Record a problem if ``partitions[index]`` repeats a topic-partition; return whether it does.

    Looks at the raw ``topic`` and ``partition`` only, so a duplicate is reported even when either
    entry has other problems.
    """
    if not isinstance(item, dict):
        return False
    topic, number = item.get("topic"), item.get("partition")
    if not isinstance(topic, str) or isinstance(number, bool) or not isinstance(number, int):
        return False
    tp = TopicPartition(topic, number)
    if tp in first_seen:
        also = first_seen[tp]
        problems.add(f"partitions[{index}]", f"duplicate topic-partition {tp} (also partitions[{also}])")
        return True
    first_seen[tp] = index
    return False


def check_fields(
    obj: Mapping[str, Any],
    path: str,
    problems: Problems,
    *,
    required: Sequence[str],
    optional: Sequence[str] = (),
) -> bool:
    """Record missing required fields and unknown fields; return whether all required are there.

    Unknown fields are refused rather than ignored so a misspelt optional field (``size`` for
    ``size_bytes``) cannot silently turn into "unknown".
    """
    missing = [key for key in required if key not in obj]
    for key in missing:
        problems.add(path, f"missing field '{key}'")
    known = set(required) | set(optional)
    for key in obj:
        if key not in known:
            expected = ", ".join(f"'{k}'" for k in (*required, *optional))
            problems.add(_join(path, key), f"unknown field (expected one of {expected})")
    return not missing


def check_version(obj: Mapping[str, Any], problems: Problems) -> bool:
    """Record a problem unless ``version`` is 1, the only version this ferry reads.

    Returns whether the version is usable; when it is not, the caller stops there because the
    rest of a file of another version would only produce noise.
    """
    if "version" not in obj:
        problems.add("", "missing field 'version' (expected 1)")
        return False
    version = obj["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        problems.add("version", f"expected an integer, got {describe(version)}")
        return False
    if version != 1:
        problems.add("version", f"unsupported version {version} (this ferry reads version 1)")
        return False
    return True


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parse_partition_list(
    value: object,
    problems: Problems,
    parse_one: Callable[[object, str], T | None],
    plain: Callable[[object], tuple[TopicPartition, T] | None] | None = None,
) -> list[T]:
    """Parse the ``partitions`` array of a snapshot or reassignment file, one entry at a time.

    A repeated topic-partition is reported once and not parsed again, so its other fields are not
    blamed twice; ``parse_one(item, path)`` returns None after recording the entry's problems.
    ``plain(item)``, where given, reads an entry that has no problem at all quickly (its
    topic-partition and what ``parse_one`` would give), or says ``None``: then ``parse_one`` does.
    """
    items = as_array(value, "partitions", problems)
    if items is None:
        return []
    parsed: list[T] = []
    first_seen: dict[TopicPartition, int] = {}
    for i, item in enumerate(items):
        quick = plain(item) if plain is not None else None
        if quick is not None and quick[0] not in first_seen:
            first_seen[quick[0]] = i
            parsed.append(quick[1])
            continue
        if check_duplicate_tp(item, i, first_seen, problems):
            continue
        entry = parse_one(item, f"partitions[{i}]")
        if entry is not None:
            parsed.append(entry)
    return parsed


def as_bool(value: object, path: str, problems: Problems) -> bool | None:
    """``value`` if it is ``true`` or ``false``, else record a problem and return None."""
    if isinstance(value, bool):
        return value
    problems.add(path, f"expected true or false, got {describe(value)}")
    return None


@dataclass(frozen=True, slots=True)
class PartitionEntry:
    """The fields every ``partitions[]`` entry has, read; the caller reads the rest from ``obj``.

    ``tp`` and ``replicas`` are None when unreadable; :meth:`valid` tells whether the entry (and
    whatever the caller read after it) produced no problem at all.
    """

    obj: Mapping[str, Any]
    tp: TopicPartition | None
    replicas: tuple[int, ...] | None
    problems_before: int

    def valid(self, problems: Problems) -> bool:
        return (
            len(problems.items) == self.problems_before and self.tp is not None and self.replicas is not None
        )


def parse_partition_entry(
    value: object,
    path: str,
    problems: Problems,
    *,
    known: frozenset[int] | None,
    optional: Sequence[str],
) -> PartitionEntry | None:
    """Read ``topic``, ``partition`` and ``replicas`` of one entry; None if it is not even an object
    with those fields (the problem is recorded)."""
    obj = as_object(value, path, problems)
    required = ("topic", "partition", "replicas")
    if obj is None or not check_fields(obj, path, problems, required=required, optional=optional):
        return None
    before = len(problems.items)
    topic = as_str(obj["topic"], f"{path}.topic", problems)
    number = as_int(obj["partition"], f"{path}.partition", problems)
    replicas = as_replicas(obj["replicas"], f"{path}.replicas", known, problems)
    tp = None if topic is None or number is None else TopicPartition(topic, number)
    return PartitionEntry(obj, tp, replicas, before)
