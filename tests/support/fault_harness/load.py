"""Client load with sequence numbers: idempotent acks=all producers and a consumer per topic."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

RATE_PER_TOPIC = 100  # messages per second and topic
PAYLOAD = b"x" * 200
FILL = b"fill"  # the prefix of bulk records written before the run, not counted


@dataclass(frozen=True, slots=True)
class LoadTally:
    """What the clients saw: messages acknowledged, and those consumed not exactly once."""

    acked: int
    lost: int
    duplicated: int
    unacked: int


@dataclass
class _Topic:
    name: str
    acked: set[int] = field(default_factory=set)
    failed: set[int] = field(default_factory=set)
    consumed: Counter[int] = field(default_factory=Counter)


class SequencedLoad:
    """One producer thread and one consumer thread per topic, from :meth:`start` to :meth:`stop`.

    A message's value is its sequence number in the topic (and filler); the producer numbers
    them 0, 1, 2... and keeps the numbers the brokers acknowledged.
    """

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        self._bootstrap = bootstrap
        self._topics = [_Topic(t) for t in topics]
        self._producing = threading.Event()
        self._consuming = threading.Event()
        self._ends: dict[str, dict[TopicPartition, int]] = {}
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def start(self) -> None:
        self._producing.set()
        self._consuming.set()
        for topic in self._topics:
            for target in (self._produce, self._consume):
                thread = threading.Thread(target=self._guarded, args=(target, topic), daemon=True)
                thread.start()
                self._threads.append(thread)

    def stop(self, drain_timeout_s: float = 120.0) -> LoadTally:
        """Stop producing, flush, let the consumers read up to the end offsets, and tally."""
        self._producing.clear()
        deadline = time.monotonic() + drain_timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._consuming.clear()
        if any(t.is_alive() for t in self._threads):
            self.errors.append("clients still running after the drain timeout")
        return self._tally()

    def _tally(self) -> LoadTally:
        acked = lost = duplicated = unacked = 0
        for topic in self._topics:
            acked += len(topic.acked)
            lost += len(topic.acked - topic.consumed.keys())
            duplicated += sum(1 for n in topic.consumed.values() if n > 1)
            unacked += len(topic.failed)
        return LoadTally(acked, lost, duplicated, unacked)

    def _guarded(self, target: Callable[[_Topic], None], topic: _Topic) -> None:
        try:
            target(topic)
        except Exception as exc:  # a client thread must report, not die silently
            self.errors.append(f"{topic.name}: {type(exc).__name__}: {exc}")

    def _produce(self, topic: _Topic) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self._bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            max_block_ms=60_000,
        )
        seq = 0
        try:
            while self._producing.is_set():
                self._send(producer, topic, seq)
                seq += 1
                time.sleep(1 / RATE_PER_TOPIC)
            producer.flush(timeout=150)
        finally:
            producer.close(timeout=10)
            self._ends[topic.name] = self._end_offsets(topic.name)

    @staticmethod
    def _send(producer: KafkaProducer, topic: _Topic, seq: int) -> None:
        try:
            future = producer.send(topic.name, value=b"%d:" % seq + PAYLOAD)
        except KafkaError:
            topic.failed.add(seq)
            return
        future.add_callback(lambda _meta: topic.acked.add(seq))
        future.add_errback(lambda _exc: topic.failed.add(seq))

    def _end_offsets(self, name: str) -> dict[TopicPartition, int]:
        consumer = KafkaConsumer(bootstrap_servers=self._bootstrap, enable_auto_commit=False)
        try:
            return dict(consumer.end_offsets(_partitions(consumer, name)))
        finally:
            consumer.close()

    def _consume(self, topic: _Topic) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=self._bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            group_id=None,
        )
        try:
            partitions = [
                TopicPartition(topic.name, p) for p in consumer.partitions_for_topic(topic.name) or ()
            ]
            consumer.assign(partitions)
            consumer.seek_to_beginning()
            while self._consuming.is_set() and not self._read_to_end(consumer, topic.name):
                for records in consumer.poll(timeout_ms=500).values():
                    for record in records:
                        if record.value is None or record.value.startswith(FILL):
                            continue
                        topic.consumed[int(record.value.split(b":", 1)[0])] += 1
        finally:
            consumer.close()

    def _read_to_end(self, consumer: KafkaConsumer, name: str) -> bool:
        ends = self._ends.get(name)
        return ends is not None and all(consumer.position(tp) >= end for tp, end in ends.items())


def _partitions(consumer: KafkaConsumer, topic: str) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
