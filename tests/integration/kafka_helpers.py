"""Test-only helpers that create topics and produce data with kafka-python directly, and stop
brokers of the sandbox for a few seconds.

Tests may import kafka-python; the rule that only ferry.kafka.client does applies to src/.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import NodeNotReadyError, UnknownBrokerIdError
from kafka.producer import KafkaProducer

from ferry.sandbox import Sandbox

TopicSpec = Mapping[str, object]
T = TypeVar("T")


def create_topics(bootstrap: str, topics: Mapping[str, TopicSpec], timeout_s: float = 30.0) -> None:
    """Create ``topics`` ({name: {num_partitions, replication_factor | assignments, configs}}).

    Right after a cluster starts, the first metadata a client gets can name a controller it lists
    no address for (kafka-python raises UnknownBrokerIdError before sending anything): asked
    again with a fresh client, until ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
        try:
            client.create_topics(dict(topics), timeout_ms=15000)
            return
        except (UnknownBrokerIdError, NodeNotReadyError):
            if time.monotonic() > deadline:
                raise
        finally:
            client.close()
        time.sleep(0.5)


def produce(
    bootstrap: str,
    topic: str,
    total_bytes: int,
    *,
    record_bytes: int = 10_000,
    partition: int | None = None,
    prefix: bytes = b"",
) -> None:
    """Write ``total_bytes`` of incompressible records to ``topic`` (or one partition of it),
    acknowledged by all ISR; each record starts with ``prefix``."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=15000)
    try:
        for _ in range(total_bytes // record_bytes):
            producer.send(topic, prefix + os.urandom(record_bytes), partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


@contextmanager
def producing(
    bootstrap: str, topic: str, bytes_per_s: int, *, record_bytes: int = 10_000, prefix: bytes = b""
) -> Iterator[None]:
    """While the block runs, a thread writes ``bytes_per_s`` of incompressible records to
    ``topic`` (acks=all), paced to the second; stopped and flushed when the block ends."""
    stop = threading.Event()

    def run() -> None:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=15000
        )
        try:
            started, sent = time.monotonic(), 0
            while not stop.is_set():
                due = int((time.monotonic() - started) * bytes_per_s)
                while sent < due:
                    producer.send(topic, prefix + os.urandom(record_bytes))
                    sent += record_bytes
                stop.wait(0.05)
            producer.flush(timeout=30)
        finally:
            producer.close(timeout=10)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=60)


def wait_until(
    check: Callable[[], bool], timeout_s: float, what: str, shown: Callable[[], object] | None = None
) -> None:
    """Poll ``check`` every 0.5 s; fail the test if it stays false for ``timeout_s`` (saying what
    ``shown`` returns then, if given)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            last = f"; last seen: {shown()}" if shown is not None else ""
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}{last}")
        time.sleep(0.5)


def racks_of(replicas: Sequence[int], racks: Mapping[int, str | None]) -> list[str | None]:
    return [racks[b] for b in replicas]


STOPPED_S = 4.0
"""How long two brokers stay stopped: well under Kafka's 9-second broker session timeout, so the
controller does not fence them and the cluster is as it was for the tests after this one."""


@contextmanager
def stopped(sandbox: Sandbox, brokers: Sequence[int], for_s: float = STOPPED_S) -> Iterator[None]:
    """``brokers`` stopped with SIGSTOP (their connections stay open, nothing answers) for
    ``for_s`` at most; resumed when the block ends."""
    pids = [pid for b in brokers if (pid := sandbox.state().node(b).pid) is not None]
    assert len(pids) == len(brokers)

    def resume() -> None:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)

    timer = threading.Timer(for_s, resume)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        resume()


def timed(read: Callable[[], T]) -> tuple[T, float]:
    started = time.monotonic()
    value = read()
    return value, time.monotonic() - started


def topic_config_per_broker(bootstrap: str, topic: str, key: str) -> dict[int, str | None]:
    """The value of a topic's config ``key`` as each broker describes it from its own copy of the
    cluster's metadata (None where unset): which broker lags when a read-back disagrees."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        manager = client._manager
        request = client._describe_configs_request([ConfigResource(ConfigResourceType.TOPIC, topic, [key])])

        async def ask(node: int) -> object:
            return await manager.send(request, node_id=node)

        seen: dict[int, str | None] = {}
        for broker in sorted(b.node_id for b in manager.cluster.brokers()):
            described = client._describe_configs_process_responses([manager.run(ask, broker)], "all")
            entry = described.get("topic", {}).get(topic, {}).get(key) or {}
            own = entry.get("config_source") == "DYNAMIC_TOPIC_CONFIG"
            seen[broker] = entry.get("value") if own else None
        return seen
    finally:
        client.close()
