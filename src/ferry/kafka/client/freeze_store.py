"""The freeze switch's store: the control topic read with a plain consumer, written with acks=all.

What the record means is :mod:`ferry.kafka.freeze`'s; this module only moves it. The store shares
the admin client's connection settings and its error translation and retries (``guarded``), so a
missing ACL or an unreachable broker reads the same as for any other admin call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from functools import partial
from typing import Any, Protocol, TypeVar

import kafka.errors as kerrors
from kafka.consumer import KafkaConsumer
from kafka.producer import KafkaProducer
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.errors import KafkaError
from ferry.kafka.client.errors import first_line
from ferry.kafka.client.metadata import metadata_request
from ferry.kafka.client.spread import first_answer
from ferry.kafka.freeze import FREEZE_KEY, FreezeState, decode_freeze, encode_freeze

T = TypeVar("T")


class Guarded(Protocol):
    """The admin client's ``_call``: run one call with retries and kafka-python errors translated."""

    def __call__(self, action: str, call: Callable[[], T]) -> T: ...


class FreezeStore:
    """Reads and writes the freeze record in ``control_topic`` for one admin client.

    Args:
        client: the connected kafka-python ``KafkaAdminClient``.
        options: the consumer and producer settings (bootstrap servers, security, timeouts).
        control_topic: where the freeze flag lives.
        timeout_s: bound for each call.
        guarded: runs a call with retries and error translation.
    """

    def __init__(
        self,
        client: Any,
        options: Mapping[str, Any],
        control_topic: str,
        timeout_s: float,
        guarded: Guarded,
    ) -> None:
        self._client = client
        self._options = options
        self._control_topic = control_topic
        self._timeout_s = timeout_s
        self._guarded = guarded
        self._consumer: Any = None

    def close(self) -> None:
        """Close the kept consumer, if one was opened; safe to call twice."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def read_freeze(self, within_s: float | None = None) -> FreezeState | None:
        """The latest freeze record: the control topic read from its start up to its end offset.

        With ``within_s``, read once within that many seconds, without the retries; a leader that
        has not answered by then fails the read with a transient :class:`KafkaError`.
        """
        if not self._control_topic_exists():
            return None
        if within_s is not None:
            return self._freeze_call("reading the freeze flag", lambda: self._read_within(within_s))
        return self._freeze_call("reading the freeze flag", self._read_latest_freeze)

    def _read_within(self, within_s: float) -> FreezeState | None:
        try:
            return self._scan_freeze(self._freeze_consumer(), within_s)
        except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError) as exc:
            # The next read starts from a new consumer, none of this one's fetch state (see below).
            self._drop_consumer()
            where = f"reading the freeze flag ({self._control_topic})"
            raise KafkaError(
                f"{where}: no answer within {within_s:g} s: {first_line(exc)}", transient=True
            ) from exc

    def write_freeze(self, state: FreezeState) -> None:
        """Create the control topic when missing, then produce ``state`` with acks=all."""
        if not self._control_topic_exists():
            self._freeze_call("creating the control topic", self._create_control_topic)
        value = encode_freeze(state)
        self._freeze_call("writing the freeze flag", lambda: self._produce_freeze(value))

    def _freeze_call(self, action: str, call: Callable[[], T]) -> T:
        try:
            return self._guarded(f"{action} ({self._control_topic})", call)
        except KafkaError as exc:
            if not exc.message.startswith("not authorized"):
                raise
            # The generic hint names cluster Describe; here the topic's own ACLs are missing.
            hint = (
                f"the principal needs Describe, Read and Write (Create, once) on topic {self._control_topic}"
            )
            raise KafkaError(exc.message, hint=hint) from exc

    def _control_topic_exists(self) -> bool:
        def describe() -> bool:
            # Any broker answers: asked as a poll's other such reads are, so a stopped one kafka-python
            # happens to pick does not hold a run's poll (kafka-python's own call waits for it).
            answer = first_answer(self._client, partial(metadata_request, [self._control_topic]))
            (topic,) = answer.to_dict()["topics"]
            error = kerrors.for_code(topic["error_code"])
            if error is kerrors.UnknownTopicOrPartitionError:
                return False
            if error is not kerrors.NoError:
                raise error()
            return True

        return self._freeze_call("describing the control topic", describe)

    def _create_control_topic(self) -> None:
        alive = [b for b in self._client.describe_cluster()["brokers"] if not b.get("is_fenced", False)]
        spec = {
            "num_partitions": 1,
            "replication_factor": max(1, min(3, len(alive))),
            "configs": {"cleanup.policy": "compact"},
        }
        timeout_ms = int(self._timeout_s * 1000)
        with suppress(kerrors.TopicAlreadyExistsError):  # another ferry was first: same topic
            self._client.create_topics({self._control_topic: spec}, timeout_ms=timeout_ms)
        self._client.wait_for_topics([self._control_topic], timeout_ms=timeout_ms)

    def _produce_freeze(self, value: bytes) -> None:
        timeout_ms = int(self._timeout_s * 1000)
        producer = KafkaProducer(
            **self._options,
            acks="all",
            # One record, rarely: a duplicate on retry says the same thing, so no producer id.
            enable_idempotence=False,
            allow_auto_create_topics=False,
            max_block_ms=timeout_ms,
            delivery_timeout_ms=self._options["request_timeout_ms"] + timeout_ms,
        )
        try:
            producer.send(self._control_topic, key=FREEZE_KEY, value=value, partition=0).get(
                timeout=self._timeout_s
            )
            producer.flush(timeout=self._timeout_s)
        finally:
            producer.close(timeout=self._timeout_s)

    def _read_latest_freeze(self) -> FreezeState | None:
        """The latest record, read by the kept consumer, or by a new one when that one stalls.

        kafka-python's consumer keeps fetch state between reads (an in-flight fetch, a position
        being reset); once in CI a kept consumer read nothing for the whole timeout right after
        another process was killed mid-move. A new consumer starts from none of that state, so
        each attempt gets half the budget and the second one starts clean.
        """
        budget_s = self._timeout_s / 2
        try:
            return self._scan_freeze(self._freeze_consumer(), budget_s)
        except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError) as first:
            self._drop_consumer()
            try:
                return self._scan_freeze(self._freeze_consumer(), budget_s)
            except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError) as second:
                # Both causes in the message: "timed out" alone says nothing about where.
                causes = f"{first_line(first)}; then {first_line(second)}"
                raise kerrors.KafkaTimeoutError(causes) from second

    def _drop_consumer(self) -> None:
        stale, self._consumer = self._consumer, None
        with suppress(Exception):
            stale.close()

    def _freeze_consumer(self) -> Any:
        if self._consumer is None:
            # No group: nothing to join or commit, and no group ACLs; kept for the next poll.
            self._consumer = KafkaConsumer(
                **self._options, group_id=None, enable_auto_commit=False, allow_auto_create_topics=False
            )
            self._consumer.assign([KafkaTopicPartition(self._control_topic, 0)])
        return self._consumer

    def _scan_freeze(self, consumer: Any, budget_s: float) -> FreezeState | None:
        """The control topic's last freeze record, read from its start to its end offset."""
        tp = KafkaTopicPartition(self._control_topic, 0)
        deadline = time.monotonic() + budget_s

        def left_ms() -> int:
            return max(1, int((deadline - time.monotonic()) * 1000))

        end = consumer.end_offsets([tp], timeout_ms=left_ms())[tp]
        consumer.seek_to_beginning(tp)
        latest: Any = None
        while (position := consumer.position(tp, timeout_ms=left_ms())) is None or position < end:
            if time.monotonic() > deadline:
                raise kerrors.KafkaTimeoutError(
                    f"read the freeze flag only up to offset {position} of {end} in {budget_s:g} s"
                )
            for record in consumer.poll(timeout_ms=min(200, left_ms())).get(tp, ()):
                if record.key == FREEZE_KEY:
                    latest = record
        return None if latest is None else decode_freeze(latest.value, latest.timestamp)
