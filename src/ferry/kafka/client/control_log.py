"""One partition's records written and read at its leader, through the admin client's connections.

The freeze flag lives in a one-partition topic (:mod:`ferry.kafka.freeze`). A kafka-python producer
or consumer for it opens clients of its own, and their metadata requests may go to any broker of
the bootstrap list: a stopped broker (SIGSTOP, a frozen VM) then holds a write or a read for the
client's connection set-up (10 s in kafka-python 3.0, not a setting its producer and consumer take),
on the bad day an operator reaches for the freeze switch. Here the partition's leader is read from
whichever broker answers first (:func:`~ferry.kafka.client.spread.first_answer`), and the Produce and
Fetch requests go to that leader alone, over the connections the admin client already has; a
write that the leader does not take (it moved, it is stopped) is sent again to the leader read
anew, until the caller's deadline.

A read ends at the offset the leader gives through ListOffsets, not at the high watermark of a
fetch answer: a follower serves a consumer's fetch from its own, trailing high watermark (Fetch
v11 on, KIP-392), and a leader just elected can answer a fetch before its high watermark reaches
the records it holds. Either would return the flag as it was before the last write. ListOffsets is
answered by the leader alone, and not until its high watermark has caught up (KIP-207).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import kafka.errors as kerrors
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record import MemoryRecords, MemoryRecordsBuilder

from ferry.kafka.client.metadata import metadata_request
from ferry.kafka.client.spread import SILENT, first_answer

_T = TypeVar("_T")

PARTITION = 0
"""The control topic's one partition."""

FETCH_BYTES = 1 << 20
"""Bytes one fetch may return: a compacted control topic holds a few records of a few hundred
bytes; a larger log is read in several fetches."""

_PRODUCE_VERSIONS = 9
"""Highest Produce version asked for: v13 names topics by id (as kafka-python's own producer,
which stops at 9)."""
_FETCH_VERSIONS = 10
"""Highest Fetch version asked for: from v11 a fetch carries the client's rack, and a follower
answers it (KIP-392); up to v10 only the leader does."""
_EARLIEST = -2
"""ListOffsets' timestamp for the log start offset."""
_LATEST = -1
"""ListOffsets' timestamp for the end offset: the leader's high watermark."""
_RESEND_S = 0.25
"""Pause before a write or a read is sent again to the leader read anew."""
_MOVED = (
    kerrors.NotLeaderForPartitionError,
    kerrors.LeaderNotAvailableError,
    kerrors.FencedLeaderEpochError,
)
"""The broker asked no longer leads (metadata named it before an election), or there is no
leader now."""

RESENT = (*SILENT, *_MOVED, kerrors.NotEnoughReplicasError)
"""A leader that did not answer, or no longer leads: the request goes again to the one the
metadata names next. ``NotEnoughReplicasError``: the ISR is short for a moment (a broker just
stopped); an ``acks=all`` write succeeds once the controller has shrunk it."""

REREAD = (*_MOVED, kerrors.OffsetNotAvailableError)
"""A read no broker answered as leader: the leader moved, or was just elected and its high
watermark has not caught up with the records it holds (OFFSET_NOT_AVAILABLE from ListOffsets v5
on, LEADER_NOT_AVAILABLE before). Asked again of the leader read anew; a silent leader is not."""


@dataclass(frozen=True, slots=True)
class Record:
    """One record read back: its offset, key, value and timestamp (ms)."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


def exists(client: Any, topic: str) -> bool:
    """Whether ``topic`` exists, from the first broker to answer."""
    return _described(client, topic) is not None


def leader(client: Any, topic: str) -> int | None:
    """The leader of the topic's partition, from the first broker to answer; ``None`` when the topic
    does not exist.

    Raises:
        kafka.errors.LeaderNotAvailableError: the partition has no leader now.
        kafka.errors.KafkaError: the answer's error for the topic (not authorized, ...).
    """
    found = _described(client, topic)
    if found is None:
        return None
    (partition,) = [p for p in found["partitions"] if p["partition_index"] == PARTITION]
    _raise(partition["error_code"])
    node = int(partition["leader_id"])
    if node < 0:
        raise kerrors.LeaderNotAvailableError(f"{topic}-{PARTITION} has no leader")
    return node


def _described(client: Any, topic: str) -> dict[str, Any] | None:
    """The topic's metadata (None: no such topic). Any broker answers: asked as a poll's other
    such reads are, so a stopped one kafka-python happens to pick holds nothing."""
    answer = first_answer(client, partial(metadata_request, [topic])).to_dict()
    (found,) = answer["topics"]
    error = kerrors.for_code(found["error_code"])
    if error is kerrors.UnknownTopicOrPartitionError:
        return None
    if error is not kerrors.NoError:
        raise error()
    return dict(found)


def append(client: Any, topic: str, key: bytes, value: bytes, within_s: float) -> None:
    """Write one record with ``acks=all`` to the partition's leader, sent again to the leader read
    anew while it does not take it, for at most ``within_s`` seconds.

    A write sent again after a silent leader may land twice: the same record twice says the
    same thing, so no producer id is spent on it.

    Raises:
        kafka.errors.KafkaTimeoutError: no leader took it within ``within_s``.
        kafka.errors.KafkaError: the leader refused it (not authorized, record too large, ...).
    """
    batch = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=len(key) + len(value) + 1024)
    batch.append(timestamp=int(time.time() * 1000), key=key, value=value)
    batch.close()
    records = batch.buffer()

    def send(node: int, deadline: float) -> bool:
        wait_ms = _left_ms(deadline)
        request = ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=wait_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[
                        ProduceRequest.TopicProduceData.PartitionProduceData(index=PARTITION, records=records)
                    ],
                )
            ],
            max_version=_PRODUCE_VERSIONS,
        )
        answer = _ask(client, node, request, wait_ms)
        (partition,) = answer.responses[0].partition_responses
        _raise(partition.error_code)
        return True

    if _at_leader(client, topic, within_s, RESENT, "took the write", send) is None:
        raise kerrors.UnknownTopicOrPartitionError(topic)


def read(client: Any, topic: str, within_s: float) -> list[Record] | None:
    """Every record of the partition from its log start to its end offset at the leader, read
    within ``within_s`` seconds; ``None`` when the topic does not exist. A broker that no longer
    leads, or has not caught up with its election, is followed by the leader read anew (``REREAD``).

    Raises:
        kafka.errors.KafkaTimeoutError: the leader did not answer, or no broker could answer as
            leader, within ``within_s``.
        kafka.errors.KafkaError: the leader refused the read (not authorized, ...).
    """

    def read_at(node: int, deadline: float) -> list[Record]:
        return _read_at(client, node, topic, deadline)

    return _at_leader(client, topic, within_s, REREAD, "answered the read", read_at)


def _read_at(client: Any, node: int, topic: str, deadline: float) -> list[Record]:
    end = _offset(client, node, topic, _LATEST, deadline)
    found: list[Record] = []
    offset = 0
    while offset < end:
        answer = _ask(client, node, _fetch(topic, offset), _left_ms(deadline))
        partition = answer.responses[0].partitions[0]
        if partition.error_code == kerrors.OffsetOutOfRangeError.errno:
            offset = _offset(client, node, topic, _EARLIEST, deadline)  # records deleted before 0
            continue
        _raise(partition.error_code)
        offset = _records(partition.records, found, offset)
        if offset < end and time.monotonic() > deadline:
            raise kerrors.KafkaTimeoutError(f"read {topic} only up to offset {offset} of {end}")
    return [r for r in found if r.offset < end]


def _at_leader(
    client: Any,
    topic: str,
    within_s: float,
    again: tuple[type[Exception], ...],
    what: str,
    act: Callable[[int, float], _T],
) -> _T | None:
    """``act(leader, deadline)`` until it returns, asked again of the leader read anew while it
    raises one of ``again``, for at most ``within_s`` seconds; ``None`` when the topic does not
    exist. ``what`` ends the timeout's message: no leader of the topic ...

    Raises:
        kafka.errors.KafkaTimeoutError: no leader did it within ``within_s``.
    """
    deadline = time.monotonic() + within_s
    while True:
        try:
            node = leader(client, topic)
            return None if node is None else act(node, deadline)
        except again as exc:
            if time.monotonic() + _RESEND_S >= deadline:
                raise kerrors.KafkaTimeoutError(f"no leader of {topic} {what}: {exc}") from exc
            time.sleep(_RESEND_S)


def _fetch(topic: str, offset: int) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,  # what is there now, up to the end offset read before
        min_bytes=0,
        max_bytes=FETCH_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,  # no fetch session: each read stands alone
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchTopic.FetchPartition(
                        partition=PARTITION,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=FETCH_BYTES,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
        max_version=_FETCH_VERSIONS,
    )


def _records(data: Any, found: list[Record], offset: int) -> int:
    """Append the data records of a fetch answer to ``found``; the offset to fetch next."""
    if not data:
        return offset
    for batch in MemoryRecords(bytes(data)):
        if not getattr(batch, "is_control_batch", False):  # transaction markers are no records
            found.extend(Record(r.offset, r.key, r.value, r.timestamp) for r in batch if r.offset >= offset)
        offset = max(offset, batch.next_offset)
    return offset


def _offset(client: Any, node: int, topic: str, timestamp: int, deadline: float) -> int:
    """The offset ListOffsets gives for ``timestamp`` (``_EARLIEST``, ``_LATEST``) at ``node``."""
    partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=PARTITION, current_leader_epoch=-1, timestamp=timestamp
    )
    wait_ms = _left_ms(deadline)
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])],
        timeout_ms=wait_ms,
        min_version=1,
    )
    (answer,) = _ask(client, node, request, wait_ms).topics[0].partitions
    _raise(answer.error_code)
    return int(answer.offset)


def _ask(client: Any, node: int, request: Any, wait_ms: int) -> Any:
    manager = client._manager

    async def ask() -> Any:
        sent = manager.send(request, node_id=node, request_timeout_ms=wait_ms)
        return await manager.wait_for(sent, wait_ms)

    return manager.run(ask)


def _raise(error_code: int) -> None:
    error = kerrors.for_code(error_code)
    if error is not kerrors.NoError:
        raise error()


def _left_ms(deadline: float) -> int:
    return max(1, int((deadline - time.monotonic()) * 1000))
