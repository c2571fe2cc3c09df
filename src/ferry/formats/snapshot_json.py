"""ClusterSnapshot <-> the cluster snapshot JSON, version 1.

::

    {"version": 1,
     "brokers": [{"id": 1, "rack": "r1"}, ...],
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                     "leader": 1, "isr": [1, 2, 3], "size_bytes": 1234}, ...]}

``rack``, ``leader``, ``isr`` and ``size_bytes`` are optional (``null`` counts as absent); a
``leader`` of -1 means the partition has no leader, as Kafka reports it. Every problem is reported
with the file and the JSON path of the offending value, e.g.
``snapshot.json: partitions[12].replicas: broker 9 is not in brokers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ferry.formats._problems import (
    INT64_MAX,
    Problems,
    as_array,
    as_id_list,
    as_int,
    as_object,
    as_replicas,
    as_str,
    brokers_phrase,
    check_duplicate_tp,
    check_fields,
    check_version,
    decode_json,
    describe,
    read_bytes,
)
from ferry.model import Broker, ClusterSnapshot, PartitionState, TopicPartition

_PARTITION_OPTIONAL = ("leader", "isr", "size_bytes")


def load_snapshot(path: str | Path) -> ClusterSnapshot:
    """Read and validate a snapshot JSON file; errors name the file as given in ``path``.

    Raises:
        InputError: the file cannot be read, is not JSON, or is not a valid snapshot.
    """
    return parse_snapshot(read_bytes(path), str(path))


def parse_snapshot(data: object, source: str) -> ClusterSnapshot:
    """Validate a snapshot and build the ClusterSnapshot.

    Args:
        data: JSON text (``str`` or ``bytes``) or an already decoded JSON value.
        source: the name problems are reported under, usually the file name.

    Raises:
        InputError: listing every problem found, each as ``source: JSON.path: message``.
    """
    decoded = decode_json(data, source) if isinstance(data, str | bytes) else data
    problems = Problems(source)
    brokers, partitions = _parse_root(decoded, problems)
    problems.raise_if_any()
    return ClusterSnapshot.of(brokers, partitions)


def _parse_root(decoded: object, problems: Problems) -> tuple[list[Broker], list[PartitionState]]:
    """The valid brokers and partitions; every problem found on the way is recorded."""
    if not isinstance(decoded, dict):
        problems.add("", f"expected a JSON object at the top level, got {describe(decoded)}")
        return [], []
    if not check_version(decoded, problems):
        return [], []
    check_fields(decoded, "", problems, required=("version", "brokers", "partitions"))
    brokers, known = _parse_brokers(decoded["brokers"], problems) if "brokers" in decoded else ([], None)
    partitions = _parse_partitions(decoded["partitions"], known, problems) if "partitions" in decoded else []
    return brokers, partitions


def dump_snapshot(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The snapshot as JSON-ready data; optional fields that are unknown are left out."""
    brokers: list[dict[str, Any]] = []
    for b in snapshot.brokers:
        brokers.append({"id": b.id} if b.rack is None else {"id": b.id, "rack": b.rack})
    return {
        "version": 1,
        "brokers": brokers,
        "partitions": [_dump_partition(p) for p in snapshot.partitions],
    }


def _dump_partition(p: PartitionState) -> dict[str, Any]:
    out: dict[str, Any] = {
        "topic": p.tp.topic,
        "partition": p.tp.partition,
        "replicas": list(p.replicas),
    }
    if p.leader is not None:
        out["leader"] = p.leader
    if p.isr is not None:
        out["isr"] = list(p.isr)
    if p.size_bytes is not None:
        out["size_bytes"] = p.size_bytes
    return out


def _parse_brokers(value: object, problems: Problems) -> tuple[list[Broker], frozenset[int] | None]:
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
    if obj is None or not check_fields(obj, path, problems, required=("id",), optional=("rack",)):
        return None, None
    broker_id = as_int(obj["id"], f"{path}.id", problems)
    rack = obj.get("rack")
    if rack is not None and as_str(rack, f"{path}.rack", problems) is None:
        return broker_id, None
    return broker_id, None if broker_id is None else Broker(broker_id, rack)


def _check_racks(brokers: Sequence[Broker], problems: Problems) -> None:
    # Kafka refuses rack-aware assignment when only some brokers have a rack; so do we, rather than
    # guess whether the rackless ones share a rack.
    without = [b.id for b in brokers if b.rack is None]
    if without and len(without) < len(brokers):
        verb = "has" if len(without) == 1 else "have"
        problems.add(
            "brokers",
            f"{brokers_phrase(without)} {verb} no rack while the others do; give every broker a rack or none",
        )


def _parse_partitions(
    value: object, known: frozenset[int] | None, problems: Problems
) -> list[PartitionState]:
    items = as_array(value, "partitions", problems)
    if items is None:
        return []
    partitions: list[PartitionState] = []
    first_seen: dict[TopicPartition, int] = {}
    for i, item in enumerate(items):
        if check_duplicate_tp(item, i, first_seen, problems):
            continue
        state = _parse_partition(item, f"partitions[{i}]", known, problems)
        if state is not None:
            partitions.append(state)
    return partitions


def _parse_partition(
    value: object, path: str, known: frozenset[int] | None, problems: Problems
) -> PartitionState | None:
    obj = as_object(value, path, problems)
    required = ("topic", "partition", "replicas")
    if obj is None or not check_fields(obj, path, problems, required=required, optional=_PARTITION_OPTIONAL):
        return None
    before = len(problems.items)
    topic = as_str(obj["topic"], f"{path}.topic", problems)
    number = as_int(obj["partition"], f"{path}.partition", problems)
    replicas = as_replicas(obj["replicas"], f"{path}.replicas", known, problems)
    leader = _parse_leader(obj, path, replicas, problems)
    isr = _parse_isr(obj, path, replicas, problems)
    size = obj.get("size_bytes")
    if size is not None:
        size = as_int(size, f"{path}.size_bytes", problems, maximum=INT64_MAX)
    if len(problems.items) > before or topic is None or number is None or replicas is None:
        return None
    return PartitionState(TopicPartition(topic, number), replicas, leader, isr, size)


def _parse_leader(
    obj: Mapping[str, Any], path: str, replicas: tuple[int, ...] | None, problems: Problems
) -> int | None:
    value = obj.get("leader")
    if value is None:
        return None
    # -1 is how Kafka reports a partition without a leader.
    leader = as_int(value, f"{path}.leader", problems, minimum=-1)
    if leader is not None and leader >= 0 and replicas is not None and leader not in replicas:
        problems.add(f"{path}.leader", f"leader {leader} is not one of replicas {list(replicas)}")
    return leader


def _parse_isr(
    obj: Mapping[str, Any], path: str, replicas: tuple[int, ...] | None, problems: Problems
) -> tuple[int, ...] | None:
    value = obj.get("isr")
    if value is None:
        return None
    isr = as_id_list(value, f"{path}.isr", problems)
    if isr is None or replicas is None:
        return isr
    for broker_id in isr:
        if broker_id not in replicas:
            problems.add(f"{path}.isr", f"broker {broker_id} is in isr but not in replicas")
    return isr
