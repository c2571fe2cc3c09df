"""Log dirs through one kafka-python admin client: what DescribeLogDirs shows of every broker's
dirs and replicas, and AlterReplicaLogDirs, which moves replicas between them (KIP-113)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

import kafka.errors as kerrors
from kafka.protocol.admin import DescribeLogDirsRequest
from kafka.structs import TopicPartitionReplica

from ferry.kafka.admin import NOT_THERE_YET, BrokerDirs, ReplicaDir, ReplicaTarget
from ferry.kafka.client.errors import Call, error_text
from ferry.kafka.client.metadata import describe_partitions
from ferry.kafka.client.spread import answers_within
from ferry.model import LogDir, TopicPartition

_NOT_THERE_YET = (kerrors.ReplicaNotAvailableError, kerrors.NotLeaderForPartitionError)
"""The answers of a broker that does not hold the replica yet (it records the preferred dir)."""


def describe_log_dirs(
    client: Any,
    call: Call,
    brokers: Collection[int],
    topics: Collection[str] | None,
    within_s: float | None = None,
) -> dict[int, BrokerDirs]:
    """Every broker's dirs and the replicas of ``topics`` in them (None: all; empty: none).

    With ``within_s``, the brokers are asked at once and those that have not answered by then are
    left out (:func:`ferry.kafka.client.spread.answers_within`); without it, every one must answer.
    """
    if within_s is not None:
        return _answered_within(client, call, brokers, _topic_partitions(client, call, topics), within_s)
    # kafka-python reads an empty mapping as "no partition" and None as "every partition".
    wanted: dict[str, list[int]] | list[str] | None = None
    if topics is not None:
        wanted = sorted(topics) if topics else {}
    return _all_answered(client, call, brokers, wanted)


def describe_partition_dirs(
    client: Any,
    call: Call,
    brokers: Collection[int],
    partitions: Collection[TopicPartition],
    within_s: float | None = None,
) -> dict[int, BrokerDirs]:
    """Every broker's dirs and the replicas of exactly ``partitions`` in them: no Metadata read to
    list a topic's partitions, and answers the size of what is asked, not of whole topics.

    ``within_s`` as for :func:`describe_log_dirs`."""
    grouped = _by_topic(set(partitions))
    if within_s is not None:
        return _answered_within(client, call, brokers, sorted(grouped.items()), within_s)
    return _all_answered(client, call, brokers, grouped)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partition numbers per topic, in order, as a DescribeLogDirs request names them."""
    grouped: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def _topic_partitions(
    client: Any, call: Call, topics: Collection[str] | None
) -> list[tuple[str, list[int]]] | None:
    """The partitions of ``topics`` as a DescribeLogDirs request names them (None: every one)."""
    if topics is None:
        return None
    found = describe_partitions(client, call, topics) if topics else ()
    return sorted(_by_topic(state.tp for state in found).items())


def _all_answered(
    client: Any, call: Call, brokers: Collection[int], wanted: dict[str, list[int]] | list[str] | None
) -> dict[int, BrokerDirs]:
    """kafka-python's DescribeLogDirs of ``wanted``, every broker waited for."""
    replies = call(
        "describing log dirs",
        lambda: client.describe_log_dirs(topic_partitions=wanted, brokers=sorted(brokers)),
    )
    return {int(reply["broker"]): broker_dirs(reply["log_dirs"]) for reply in replies}


def _answered_within(
    client: Any,
    call: Call,
    brokers: Collection[int],
    wanted: list[tuple[str, list[int]]] | None,
    within_s: float,
) -> dict[int, BrokerDirs]:
    # A request object per broker: kafka-python fixes its version on the first send.
    requests = {broker: [DescribeLogDirsRequest(topics=wanted)] for broker in sorted(brokers)}
    replies = call("describing log dirs", lambda: answers_within(client, requests, within_s))
    return {broker: broker_dirs([r.to_dict() for r in reply.results]) for broker, [reply] in replies.items()}


def broker_dirs(results: list[Mapping[str, Any]]) -> BrokerDirs:
    """One broker's DescribeLogDirs results as its dirs and the replicas in them."""
    dirs: list[LogDir] = []
    current: dict[TopicPartition, tuple[str, int]] = {}
    future: dict[TopicPartition, tuple[str, int]] = {}
    for result in results:
        path = result["log_dir"]
        dirs.append(_log_dir(result))
        # An offline dir reports an error and no replicas: the broker serves none from it.
        for tp, size, is_future in _replicas(result):
            (future if is_future else current)[tp] = (path, size)
    replicas = {
        tp: ReplicaDir(path, size, *future.get(tp, (None, 0))) for tp, (path, size) in current.items()
    }
    return BrokerDirs(tuple(sorted(dirs, key=lambda d: d.path)), replicas)


def _log_dir(result: Mapping[str, Any]) -> LogDir:
    # -1: a broker before DescribeLogDirs v4 (Kafka 3.3) does not say.
    total, usable = result.get("total_bytes", -1), result.get("usable_bytes", -1)
    return LogDir(
        result["log_dir"],
        total if total >= 0 else None,
        usable if usable >= 0 else None,
        offline=result["error_code"] != 0,
        cordoned=bool(result.get("is_cordoned", False)),
    )


def _replicas(result: Mapping[str, Any]) -> Iterator[tuple[TopicPartition, int, bool]]:
    if result["error_code"] != 0:
        return
    for topic in result["topics"]:
        for part in topic["partitions"]:
            tp = TopicPartition(topic["name"], part["partition_index"])
            yield tp, part["partition_size"], bool(part.get("is_future_key", False))


def alter_replica_log_dirs(
    client: Any, call: Call, targets: Mapping[ReplicaTarget, str]
) -> dict[ReplicaTarget, str | None]:
    """AlterReplicaLogDirs for ``targets`` (see ``ClusterAdmin.alter_replica_log_dirs``)."""
    if not targets:
        return {}
    wanted = {
        TopicPartitionReplica(tp.topic, tp.partition, broker): path for (tp, broker), path in targets.items()
    }
    answers = call("moving replicas between log dirs", lambda: client.alter_replica_log_dirs(wanted))
    said: dict[ReplicaTarget, str | None] = dict.fromkeys(targets, "the broker did not answer")
    for tpr, error in answers.items():
        key = (TopicPartition(tpr.topic, tpr.partition), tpr.broker_id)
        said[key] = _answer(error)
    return said


def _answer(error: Any) -> str | None:
    if error is kerrors.NoError:
        return None
    if isinstance(error, type) and issubclass(error, _NOT_THERE_YET):
        return NOT_THERE_YET
    return error_text(error)
