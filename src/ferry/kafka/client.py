"""``KafkaPythonAdmin``: the ClusterAdmin on kafka-python, the only module importing ``kafka``.

kafka-python (3.x) runs its network I/O on a background thread; each admin call sends at most one
request per broker (metadata and reassignments go to one broker, DescribeLogDirs to each broker).
Every kafka-python exception is turned into a one-line :class:`~ferry.errors.KafkaError` here, so
nothing above this module needs to know kafka-python's error classes.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import kafka.errors as kerrors
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.consumer import KafkaConsumer
from kafka.producer import KafkaProducer
from kafka.structs import TopicPartition as KafkaTopicPartition

from ferry.errors import InputError, KafkaError, PreconditionError
from ferry.kafka.admin import OngoingReassignment, ReplicaSizes
from ferry.kafka.config import ClientSettings, client_settings, parse_properties
from ferry.kafka.freeze import CONTROL_TOPIC, FREEZE_KEY, FreezeState, decode_freeze, encode_freeze
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import Broker, PartitionState, TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")

_READ_ATTEMPTS = 4
_RETRY_BACKOFF_S = 0.25
_REFRESH_WAIT_S = 5.0
# A broker down, not yet reachable, or not yet back in the client's metadata after a restart.
_RETRIED = (kerrors.KafkaConnectionError, kerrors.NodeNotReadyError, kerrors.UnknownBrokerIdError)
_CHECK_HINT = "check --bootstrap-server, that the brokers run, and security.protocol"


def load_command_config(path: Path | None) -> ClientSettings:
    """Read a ``--command-config`` file (None: no file) and map it, warning about unknown keys.

    Raises:
        InputError: the file is unreadable or holds an invalid or unsupported setting.
    """
    if path is None:
        return ClientSettings({})
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise InputError(f"{path}: cannot read command config ({reason})") from exc
    settings = client_settings(parse_properties(text, str(path)), str(path))
    for key in settings.unknown_keys:
        log.warning("%s: ignoring unknown client property %r", path, key)
    return settings


class KafkaPythonAdmin:
    """A :class:`~ferry.kafka.admin.ClusterAdmin` over one kafka-python ``KafkaAdminClient``.

    Args:
        bootstrap: ``host:port[,host:port...]``, as Kafka's ``--bootstrap-server``.
        settings: mapped ``--command-config`` options.
        timeout_s: bound for connecting and for each call.
        control_topic: where the freeze flag lives (tests give each run its own).

    Raises:
        KafkaError: the bootstrap servers cannot be reached or authentication fails.
        InputError: kafka-python rejects the client configuration.
    """

    def __init__(
        self,
        bootstrap: str,
        settings: ClientSettings | None = None,
        *,
        timeout_s: float = 30.0,
        control_topic: str = CONTROL_TOPIC,
    ) -> None:
        self._bootstrap = bootstrap
        self._timeout_s = timeout_s
        self._control_topic = control_topic
        self._consumer: Any = None
        options = dict(settings.options) if settings else {}
        timeout_ms = int(timeout_s * 1000)
        options.setdefault("request_timeout_ms", timeout_ms)
        options.setdefault("client_id", "kafka-ferry")
        # The freeze flag's consumer and producer connect as the admin client does.
        self._options = {"bootstrap_servers": bootstrap.split(","), **options}
        self._client: Any = self._call(
            f"connecting to {bootstrap}",
            lambda: _new_admin_client(
                bootstrap_servers=bootstrap.split(","), bootstrap_timeout_ms=timeout_ms, **options
            ),
        )

    def __enter__(self) -> KafkaPythonAdmin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections and I/O thread; safe to call twice."""
        client, self._client = self._client, None
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
        if client is not None:
            client.close()

    # -- ClusterAdmin ----------------------------------------------------------------------------

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        """Registered brokers with racks (DescribeCluster v2 lists fenced ones too, KIP-1073)."""
        cluster = self._call("describing the cluster", lambda: self._client.describe_cluster())
        brokers = (
            Broker(int(b["broker_id"]), b.get("rack"), alive=not b.get("is_fenced", False))
            for b in cluster["brokers"]
        )
        return tuple(b for b in brokers if include_fenced or b.alive)

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        """Replicas, leader and ISR of all partitions of ``topics`` (one Metadata request)."""
        wanted = None if topics is None else sorted(topics)
        described = self._call("describing topics", lambda: self._client.describe_topics(wanted))
        states: list[PartitionState] = []
        for topic in described:
            _raise_for(topic["error_code"], "describing topics", topic["name"])
            states.extend(_partition_state(topic["name"], p) for p in topic["partitions"])
        return tuple(states)

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        """Replica sizes per partition and broker (one DescribeLogDirs request per broker)."""
        wanted = None if topics is None else sorted(topics)
        # Named explicitly: kafka-python's default is the brokers of its cached metadata, which lacks
        # a restarted broker until the periodic refresh minutes later, and its replicas would read as
        # empty. An unknown id fails the request instead, and _call refreshes and retries.
        live = sorted(b.id for b in self.describe_brokers())
        replies = self._call(
            "describing log dirs",
            lambda: self._client.describe_log_dirs(topic_partitions=wanted, brokers=live),
        )
        sizes: dict[TopicPartition, dict[int, int]] = {}
        for reply in replies:
            for tp, size in _log_dir_sizes(reply["log_dirs"]):
                per_broker = sizes.setdefault(tp, {})
                per_broker[reply["broker"]] = per_broker.get(reply["broker"], 0) + size
        return sizes

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        """Ongoing reassignments (one ListPartitionReassignments request to the controller)."""
        listed = self._call(
            "listing partition reassignments",
            lambda: self._client.list_partition_reassignments(),
        )
        return tuple(
            OngoingReassignment(
                TopicPartition(tp.topic, tp.partition),
                tuple(r["replicas"]),
                tuple(r["adding_replicas"]),
                tuple(r["removing_replicas"]),
            )
            for tp, r in sorted(listed.items())
            if topics is None or tp.topic in topics
        )

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        """Effective ``min.insync.replicas`` per topic (one DescribeConfigs request)."""
        if not topics:
            return {}
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, t, ["min.insync.replicas"]) for t in sorted(topics)
        ]
        # 'all', not 'modified': a cluster- or broker-level value binds the topic just as well.
        described = self._call(
            "describing topic configs",
            lambda: self._client.describe_configs(resources, config_filter="all"),
        )
        return {
            topic: int(configs["min.insync.replicas"]["value"])
            for topic, configs in described.get("topic", {}).items()
            if "min.insync.replicas" in configs
        }

    # -- error translation -----------------------------------------------------------------------

    def _call(self, action: str, call: Callable[[], T]) -> T:
        with _translated(action, self._bootstrap, self._timeout_s):
            for attempt in range(_READ_ATTEMPTS):
                try:
                    return _bounded(call, self._timeout_s * 2 + 5, action)
                except (
                    kerrors.KafkaConnectionError,
                    kerrors.NodeNotReadyError,
                    kerrors.UnknownBrokerIdError,
                ):
                    # kafka-python sends to one broker and does not fail over when it is down;
                    # every call here is idempotent, so trying again (on another broker) is safe.
                    if attempt == _READ_ATTEMPTS - 1:
                        raise
                    self._refresh_metadata()
                    time.sleep(_RETRY_BACKOFF_S * (attempt + 1))
            raise AssertionError("unreachable")

    def _refresh_metadata(self) -> None:
        """Ask kafka-python for fresh cluster metadata before a retry.

        A broker that was down when the client last refreshed (a restart, a rolling upgrade) is
        missing from its metadata until the next periodic refresh, minutes later; a request that
        must go to that broker (its DescribeConfigs) fails with UnknownBrokerIdError until then.
        """
        client = getattr(self, "_client", None)  # None while the client itself is being created
        if client is None:
            return
        updated = client._manager.cluster.request_update()
        # Bounded: a retry sent before the refresh lands would fail the same way.
        deadline = time.monotonic() + min(self._timeout_s, _REFRESH_WAIT_S)
        while not updated.is_done and time.monotonic() < deadline:
            time.sleep(0.05)

    # -- writes used by the executor (ferry.execute) ---------------------------------------------
    # Each is idempotent (the same target, SET or DELETE sent twice ends the same), so _call's
    # retry on a dropped connection is as safe for them as for the reads above.

    def cluster_id(self) -> str | None:
        """The cluster id from DescribeCluster."""
        cluster = self._call("describing the cluster", lambda: self._client.describe_cluster())
        value = cluster.get("cluster_id")
        return str(value) if value else None

    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> Mapping[TopicPartition, str | None]:
        """Submit or cancel (None) reassignments in one AlterPartitionReassignments request."""
        if not targets:
            return {}
        request = {
            KafkaTopicPartition(tp.topic, tp.partition): None if r is None else [int(b) for b in r]
            for tp, r in targets.items()
        }
        results = self._call(
            "altering partition reassignments",
            lambda: self._client.alter_partition_reassignments(request),
        )
        answers: dict[TopicPartition, str | None] = {}
        for tp in targets:
            key = KafkaTopicPartition(tp.topic, tp.partition)
            answers[tp] = _error_text(results[key]) if key in results else "the controller did not answer"
        return answers

    def describe_throttle_configs(self, keys: Collection[ConfigKey]) -> Mapping[ConfigKey, str]:
        """Values of ``keys`` set on the resource itself (one DescribeConfigs per broker/for topics)."""
        if not keys:
            return {}
        wanted: dict[tuple[ResourceType, str], list[str]] = {}
        for key in keys:
            wanted.setdefault((key.resource_type, key.resource_name), []).append(key.key)
        resources = [
            ConfigResource(_RESOURCE_TYPES[rtype], name, sorted(names))
            for (rtype, name), names in wanted.items()
        ]
        described = self._call(
            "describing throttle configs",
            lambda: self._client.describe_configs(resources, config_filter="all"),
        )
        return {key: value for key in keys if (value := _own_value(described, key)) is not None}

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        """SET or DELETE (None) config entries with IncrementalAlterConfigs.

        Raises:
            KafkaError: a broker refused an entry; the message names the resource.
        """
        if not writes:
            return
        grouped: dict[tuple[ResourceType, str], dict[str, Any]] = {}
        for key, value in writes.items():
            op = (AlterConfigOp.DELETE, None) if value is None else (AlterConfigOp.SET, value)
            grouped.setdefault((key.resource_type, key.resource_name), {})[key.key] = op
        resources = [
            ConfigResource(_RESOURCE_TYPES[rtype], name, configs)
            for (rtype, name), configs in grouped.items()
        ]
        # incremental=True: a plain AlterConfigs would reset every entry it does not name;
        # raise_on_unknown=False: throttle rates are not listed among a broker's dynamic configs.
        calls = [
            partial(self._client.alter_configs, group, raise_on_unknown=False, incremental=True)
            for group in _per_request(resources)
        ]
        results = self._call("altering configs", lambda: _side_by_side(calls))
        failed = [
            f"{rtype} {name}: {result}"
            for rtype, by_name in results.items()
            for name, result in by_name.items()
            if result != "OK"
        ]
        if failed:
            raise KafkaError(f"altering configs failed: {'; '.join(sorted(failed))}")

    def elect_preferred_leaders(
        self, partitions: Collection[TopicPartition]
    ) -> Mapping[TopicPartition, str | None]:
        """Preferred-leader election for ``partitions`` (one ElectLeaders request to the controller)."""
        if not partitions:
            return {}
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        response = self._call(
            "electing preferred leaders",
            lambda: self._client.elect_leaders(0, by_topic, raise_errors=False),
        )
        if getattr(response, "error_code", 0):
            raise KafkaError(
                f"electing preferred leaders failed: {_error_text(kerrors.for_code(response.error_code))}"
            )
        answers: dict[TopicPartition, str | None] = {tp: "the controller did not answer" for tp in partitions}
        for result in response.replica_election_results:
            for part in result.partition_result:
                error = kerrors.for_code(part.error_code)
                ok = error is kerrors.NoError or error is kerrors.ElectionNotNeededError
                answers[TopicPartition(result.topic, part.partition_id)] = None if ok else _error_text(error)
        return answers

    # -- the freeze switch (ferry.kafka.freeze) --------------------------------------------------

    def read_freeze(self) -> FreezeState | None:
        """The latest freeze record: the control topic read from its start up to its end offset."""
        if not self._control_topic_exists():
            return None
        return self._freeze_call("reading the freeze flag", self._read_latest_freeze)

    def write_freeze(self, state: FreezeState) -> None:
        """Create the control topic when missing, then produce ``state`` with acks=all."""
        if not self._control_topic_exists():
            self._freeze_call("creating the control topic", self._create_control_topic)
        value = encode_freeze(state)
        self._freeze_call("writing the freeze flag", lambda: self._produce_freeze(value))

    def _freeze_call(self, action: str, call: Callable[[], T]) -> T:
        try:
            return self._call(f"{action} ({self._control_topic})", call)
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
            (topic,) = self._client.describe_topics([self._control_topic])
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
            stale, self._consumer = self._consumer, None
            with suppress(Exception):
                stale.close()
            try:
                return self._scan_freeze(self._freeze_consumer(), budget_s)
            except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError) as second:
                # Both causes in the message: "timed out" alone says nothing about where.
                causes = f"{_first_line(first)}; then {_first_line(second)}"
                raise kerrors.KafkaTimeoutError(causes) from second

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


def _new_admin_client(**config: Any) -> Any:
    """``KafkaAdminClient(**config)``, closed again if its constructor fails.

    kafka-python 3.0 starts its I/O thread and opens sockets before bootstrapping in ``__init__``
    and does not release them when bootstrap fails; with nothing returned, the caller could never
    close them. Building the object in two steps keeps a handle to close.
    """
    client = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        client.__init__(**config)
    except BaseException as exc:
        auth_failure = _auth_failure(client)
        if hasattr(client, "_net"):
            # close() returns early unless _closed is False, which __init__ sets only on success.
            client._closed = False
            with suppress(Exception):
                client.close()
        if isinstance(exc, kerrors.KafkaTimeoutError):
            if auth_failure is None and _sasl_refused(config):
                auth_failure = kerrors.SaslAuthenticationFailedError(
                    "the brokers accept connections but ended every SASL login "
                    "(wrong username or password, or a listener without SASL)"
                )
            if auth_failure is not None:
                raise auth_failure from exc
        raise
    return client


def _sasl_refused(config: Mapping[str, Any]) -> bool:
    """Whether a SASL client that could not bootstrap can reach the brokers over TCP at all.

    A Kafka broker answers a failed SASL login with an error response and closes the connection
    at once; kafka-python 3.0 reads the response and the close in one go and drops the response,
    so the only trace it keeps is a bootstrap timeout. Reachable brokers plus a SASL login that
    never completes means the login was refused.
    """
    if not str(config.get("security_protocol", "")).startswith("SASL_"):
        return False
    return any(_accepts_connections(address, 2.0) for address in config["bootstrap_servers"])


def _auth_failure(client: Any) -> Exception | None:
    """The SASL or authorization failure kafka-python met while bootstrapping, if any.

    kafka-python 3.0 retries a bootstrap broker that refuses the credentials until the bootstrap
    timeout and then reports only "Unable to bootstrap", which reads like an unreachable cluster.
    Its connection manager keeps the real cause per broker; surfacing it turns the misleading
    timeout into "authentication failed".
    """
    failures = getattr(getattr(client, "_manager", None), "_auth_failures", None)
    if not failures:
        return None
    failure = next(iter(failures.values()))
    return failure if isinstance(failure, Exception) else None


def _partition_state(topic: str, p: Mapping[str, Any]) -> PartitionState:
    leader = int(p["leader_id"])
    return PartitionState(
        TopicPartition(topic, int(p["partition_index"])),
        tuple(int(r) for r in p["replica_nodes"]),
        leader=leader if leader >= 0 else None,
        isr=tuple(int(r) for r in p["isr_nodes"]),
    )


def _log_dir_sizes(log_dirs: list[Mapping[str, Any]]) -> Iterator[tuple[TopicPartition, int]]:
    for log_dir in log_dirs:
        # An offline log dir reports an error and no sizes; its replicas are simply not counted.
        if log_dir["error_code"] != 0:
            continue
        for topic in log_dir["topics"]:
            for part in topic["partitions"]:
                # A "future" replica is an intra-broker copy in progress, not a second replica.
                if not part.get("is_future_key", False):
                    yield (
                        TopicPartition(topic["name"], part["partition_index"]),
                        part["partition_size"],
                    )


def _raise_for(error_code: int, action: str, topic: str) -> None:
    if error_code == 0:
        return
    error = kerrors.for_code(error_code)
    if error is kerrors.UnknownTopicOrPartitionError:
        raise PreconditionError(f"topic {topic!r} does not exist", hint="check --topics")
    raise KafkaError(f"{action} failed: {error.__name__} ({error.description})")


@contextmanager
def _translated(action: str, bootstrap: str, timeout_s: float) -> Iterator[None]:
    """Turn kafka-python exceptions into one-line ferry errors."""
    try:
        yield
    except kerrors.KafkaConfigurationError as exc:
        raise InputError(f"invalid client configuration: {exc}") from exc
    except kerrors.SaslAuthenticationFailedError as exc:
        raise KafkaError(
            f"authentication failed at {bootstrap}: {_reason(exc)}",
            hint="check sasl.mechanism and sasl.jaas.config in --command-config",
        ) from exc
    except kerrors.AuthorizationError as exc:
        raise KafkaError(
            f"not authorized: {action}: {type(exc).__name__}",
            hint="the principal needs Describe on the cluster and topics",
        ) from exc
    except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError, TimeoutError) as exc:
        if action.startswith("connecting"):
            raise KafkaError(
                f"cannot reach bootstrap server {bootstrap} within {timeout_s:g} s",
                hint=_CHECK_HINT,
            ) from exc
        detail = f" ({_reason(exc)})" if exc.args and str(exc.args[0]).strip() else ""
        raise KafkaError(f"timed out {action} after {timeout_s:g} s{detail}") from exc
    except kerrors.KafkaError as exc:
        raise KafkaError(f"{action} failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    except OSError as exc:
        raise KafkaError(f"{action} failed: {exc}", hint=_CHECK_HINT) from exc


def _reason(exc: BaseException) -> str:
    """The message a kafka-python error was raised with, without its ``[Error N] Name:`` prefix."""
    first = exc.args[0] if exc.args else None
    return first.splitlines()[0] if isinstance(first, str) and first.strip() else _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _bounded(call: Callable[[], T], timeout_s: float, action: str) -> T:
    """Run ``call`` with a hard deadline: kafka-python bounds each request, not a whole call.

    A daemon thread runs it, so a wedged client cannot keep the process alive either.
    """
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller's thread below
            error.append(exc)

    worker = threading.Thread(target=target, name=f"ferry-kafka: {action}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"{action} did not finish within {timeout_s:g} s")
    if error:
        raise error[0]
    return result[0]


def _per_request(resources: Sequence[ConfigResource]) -> list[list[ConfigResource]]:
    """The resources grouped by the broker that takes them: one group per broker, one for topics.

    A broker's own configs go to that broker; topic configs go to any broker, which forwards them
    to the controller, so they travel together.
    """
    brokers = [[r] for r in resources if r.resource_type == ConfigResourceType.BROKER]
    others = [r for r in resources if r.resource_type != ConfigResourceType.BROKER]
    return brokers + ([others] if others else [])


def _side_by_side(
    calls: Sequence[Callable[[], Mapping[str, Mapping[str, Any]]]],
) -> dict[str, dict[str, Any]]:
    """Run ``calls`` at the same time, one thread each, and merge their per-resource results.

    kafka-python sends a multi-broker config change one broker after the other; a throttle change
    touches every broker a move involves, and it is on the path from a run's start to its first
    move and from its last move to its end: side by side it takes one round trip, not one per
    broker (docs/benchmarks.md, execute session 4: start to first submission 0.48 → 0.28-0.34 s).
    The client's I/O thread is safe to call from several threads at once.
    """
    if len(calls) == 1:
        answers = [calls[0]()]
    else:
        with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="ferry-kafka-configs") as pool:
            answers = [f.result() for f in [pool.submit(call) for call in calls]]
    merged: dict[str, dict[str, Any]] = {}
    for answer in answers:
        for rtype, by_name in answer.items():
            merged.setdefault(rtype, {}).update(by_name)
    return merged


def ready_brokers(bootstrap: str, *, timeout_s: float = 3.0) -> frozenset[int]:
    """Ids of the registered, unfenced brokers, or an empty set while the cluster is unreachable.

    This is the readiness probe of :class:`ferry.sandbox.Sandbox`: it never raises a KafkaError.
    """
    # A plain TCP check first: while the brokers start, it fails fast and quietly, where
    # kafka-python would wait out its bootstrap timeout.
    if not any(_accepts_connections(address, timeout_s) for address in bootstrap.split(",")):
        return frozenset()
    try:
        with KafkaPythonAdmin(bootstrap, timeout_s=timeout_s) as admin:
            return frozenset(b.id for b in admin.describe_brokers())
    except KafkaError:
        return frozenset()


def _accepts_connections(address: str, timeout_s: float) -> bool:
    host, _, port = address.strip().rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


# -- helpers of the executor's writes (appended) ---------------------------------------------------

_RESOURCE_TYPES = {
    ResourceType.TOPIC: ConfigResourceType.TOPIC,
    ResourceType.BROKER: ConfigResourceType.BROKER,
}

# The config sources that mean "set on this very resource"; a cluster-wide broker default or a
# static server.properties value is not ours to restore or delete.
_OWN_SOURCES = {
    ResourceType.TOPIC: "DYNAMIC_TOPIC_CONFIG",
    ResourceType.BROKER: "DYNAMIC_BROKER_CONFIG",
}


def _own_value(described: Mapping[str, Any], key: ConfigKey) -> str | None:
    entry = described.get(key.resource_type.value, {}).get(key.resource_name, {}).get(key.key)
    if not entry or entry.get("config_source") != _OWN_SOURCES[key.resource_type]:
        return None
    value = entry.get("value")
    return None if value is None else str(value)


def _error_text(error: Any) -> str | None:
    """None for success, else ``Name: description`` of a kafka-python error class or instance."""
    if error is None or error is kerrors.NoError:
        return None
    cls = error if isinstance(error, type) else type(error)
    description = getattr(cls, "description", "") or ""
    return f"{cls.__name__}: {description}" if description else cls.__name__
