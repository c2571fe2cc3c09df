"""The brokers of a snapshot JSON: ``{"id": 1, "rack": "r0", ...}``, with the fields a live
cluster adds (``alive``, ``capacity_bytes``, ``cordoned``, ``cordoned_log_dirs``, ``log_dirs``,
``fetch_last_tiered``: KIP-1023 on),
and the rule that racks are given for every broker or none."""

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
    brokers_phrase,
    check_fields,
)
from ferry.formats.log_dirs_json import dump_log_dirs, parse_log_dirs
from ferry.model import Broker


def dump_broker(b: Broker) -> dict[str, Any]:
    """A broker as JSON, unknown and default fields left out."""
    out: dict[str, Any] = {"id": b.id}
    if b.rack is not None:
        out["rack"] = b.rack
    if not b.alive:
        out["alive"] = False
    if b.capacity_bytes is not None:
        out["capacity_bytes"] = b.capacity_bytes
    if b.cordoned:
        out["cordoned"] = True
    if b.cordoned_log_dirs:
        out["cordoned_log_dirs"] = list(b.cordoned_log_dirs)
    if b.fetch_last_tiered:
        out["fetch_last_tiered"] = True
    if b.log_dirs:
        out["log_dirs"] = dump_log_dirs(b)
    return out


def parse_brokers(value: object, problems: Problems) -> tuple[list[Broker], frozenset[int] | None]:
    """The valid brokers, and the ids the list names.

    The ids are None when some entry's id cannot be read: partitions are then not checked against
    them, so a broken broker entry is not blamed a second time on every partition that uses it.
    """
    items = as_array(value, "brokers", problems)
    if items is None:
        return [], None
    brokers: list[Broker] = []
    first_seen: dict[int, int] = {}
    readable = True
    for i, item in enumerate(items):
        broker_id, broker = _parse_broker(item, f"brokers[{i}]", problems)
        if broker_id is None:
            readable = False
        elif broker_id in first_seen:
            also = first_seen[broker_id]
            problems.add(f"brokers[{i}].id", f"duplicate broker id {broker_id} (also brokers[{also}])")
        else:
            first_seen[broker_id] = i
            brokers += [broker] if broker is not None else []
    _check_racks(brokers, problems)
    return brokers, frozenset(first_seen) if readable else None


def _parse_broker(value: object, path: str, problems: Problems) -> tuple[int | None, Broker | None]:
    """The entry's id if readable, and the broker if the whole entry is valid."""
    obj = as_object(value, path, problems)
    optional = (
        "rack",
        "alive",
        "capacity_bytes",
        "cordoned",
        "cordoned_log_dirs",
        "log_dirs",
        "fetch_last_tiered",
    )
    if obj is None or not check_fields(obj, path, problems, required=("id",), optional=optional):
        return None, None
    broker_id = as_int(obj["id"], f"{path}.id", problems)
    rack = obj.get("rack")
    alive = True if obj.get("alive") is None else as_bool(obj["alive"], f"{path}.alive", problems)
    capacity = _capacity(obj.get("capacity_bytes"), f"{path}.capacity_bytes", problems)
    cordoned, tiered = (
        False if obj.get(key) is None else as_bool(obj[key], f"{path}.{key}", problems)
        for key in ("cordoned", "fetch_last_tiered")
    )
    bad_rack = rack is not None and as_str(rack, f"{path}.rack", problems) is None
    dirs = _paths(obj.get("cordoned_log_dirs"), f"{path}.cordoned_log_dirs", problems)
    log_dirs = parse_log_dirs(obj.get("log_dirs"), f"{path}.log_dirs", problems)
    if (
        bad_rack
        or alive is None
        or capacity is False
        or cordoned is None
        or tiered is None
        or dirs is None
        or log_dirs is None
        or broker_id is None
    ):
        return broker_id, None
    return broker_id, Broker(broker_id, rack, alive, capacity or None, cordoned, dirs, log_dirs, tiered)


def _paths(value: object, path: str, problems: Problems) -> tuple[str, ...] | None:
    """Log dir paths (an array of non-empty strings), ``()`` if absent, ``None`` if invalid."""
    if value is None:
        return ()
    items = as_array(value, path, problems)
    if items is None:
        return None
    paths = [as_str(item, f"{path}[{i}]", problems) for i, item in enumerate(items)]
    return None if any(p is None for p in paths) else tuple(p for p in paths if p is not None)


def _capacity(value: object, path: str, problems: Problems) -> int | bool | None:
    """A broker's disk capacity in bytes, ``None`` if absent, ``False`` if invalid (a problem is
    recorded)."""
    if value is None:
        return None
    size = as_int(value, path, problems, minimum=1, maximum=INT64_MAX)
    return False if size is None else size


def _check_racks(brokers: Sequence[Broker], problems: Problems) -> None:
    # Kafka refuses rack-aware assignment when only some brokers have a rack; so do we, rather than
    # guess whether the rackless ones share a rack.
    # A dead broker that is no longer registered has no known rack; it is only ever a source of
    # moves, never a target, so its missing rack cannot break the rule and is accepted.
    without = [b.id for b in brokers if b.rack is None and b.alive]
    if without and len(without) < len(brokers):
        verb = "has" if len(without) == 1 else "have"
        problems.add(
            "brokers",
            f"{brokers_phrase(without)} {verb} no rack while the others do; give every broker a rack or none",
        )
