"""``KafkaPythonAdmin``: the ClusterAdmin on kafka-python, its reads and the executor's writes.

kafka-python (3.x) runs its network I/O on a background thread; each admin call sends at most one
request per broker (metadata and reassignments go to one broker, DescribeLogDirs to each broker).
Every call goes through ``_call``: retried on a dropped connection, bounded in time, and its
kafka-python exceptions translated by :mod:`ferry.kafka.client.errors`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import kafka.errors as kerrors
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

from ferry.errors import InputError, KafkaError
from ferry.kafka.admin import (
    BrokerDirs,
    Disks,
    LogOffsets,
    OngoingReassignment,
    PartitionHealth,
    ReplicaSizes,
    ReplicaTarget,
    Tiering,
    disks_of,
    replica_sizes,
)
from ferry.kafka.client import health, log_dirs, metadata, reassign, tiering
from ferry.kafka.client.configs import (
    RESOURCE_TYPES,
    any_broker_configs,
    own_broker_configs,
    own_value,
    per_request,
    side_by_side,
)
from ferry.kafka.client.connect import first_answering
from ferry.kafka.client.errors import RETRIED, bounded, error_text, needed_for, translated
from ferry.kafka.client.freeze_store import FreezeStore
from ferry.kafka.client.spread import to_one_that_answered
from ferry.kafka.config import ClientSettings, client_settings, parse_properties
from ferry.kafka.freeze import CONTROL_TOPIC, FreezeState
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import Broker, PartitionState, TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")

_READ_ATTEMPTS = 4
_RETRY_BACKOFF_S = 0.25
_REFRESH_WAIT_S = 5.0
_FORWARDED_FOR_S = 65.0
"""How long a config write that failed may still land: the broker it reached forwards it to the
controller and, through a controller failover, keeps trying for 60 s (Kafka's forwarding channel)."""


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
        self._unsettled_until = 0.0
        options = dict(settings.options) if settings else {}
        timeout_ms = int(timeout_s * 1000)
        options.setdefault("request_timeout_ms", timeout_ms)
        options.setdefault("client_id", "kafka-ferry")
        self._client: Any = self._call(
            f"connecting to {bootstrap}",
            lambda: first_answering(bootstrap.split(","), timeout_ms, **options),
        )
        self._freeze = FreezeStore(self._client, control_topic, timeout_s, self._call)

    def __enter__(self) -> KafkaPythonAdmin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections and I/O thread; safe to call twice."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- ClusterAdmin ----------------------------------------------------------------------------

    def describe_brokers(self, *, include_fenced: bool = False) -> tuple[Broker, ...]:
        """Registered brokers with racks (DescribeCluster v2 lists fenced ones too, KIP-1073)."""
        brokers = (
            Broker(int(b["broker_id"]), b.get("rack"), alive=not b.get("is_fenced", False))
            for b in metadata.describe_cluster(self._client, self._call)
        )
        return tuple(b for b in brokers if include_fenced or b.alive)

    def describe_partitions(self, topics: Collection[str] | None = None) -> tuple[PartitionState, ...]:
        """Replicas, leader and ISR of all partitions of ``topics`` (Metadata; :mod:`.metadata`)."""
        return metadata.describe_partitions(self._client, self._call, topics)

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        """Replica sizes per partition and broker (one DescribeLogDirs request per broker)."""
        return replica_sizes(self.describe_log_dirs(topics))

    def describe_disks(self) -> Mapping[int, Disks]:
        """Each live broker's log dirs (one DescribeLogDirs request per broker, for no partition)."""
        return {broker: disks_of(found) for broker, found in self.describe_log_dirs(()).items()}

    def describe_log_dirs(
        self, topics: Collection[str] | None = None, *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        """Every live broker's dirs and the replicas of ``topics`` in them (one DescribeLogDirs
        request per broker; with ``within_s``, only the brokers that answered within it)."""
        # Named explicitly: kafka-python's default is the brokers of its cached metadata, which lacks
        # a restarted broker until the periodic refresh minutes later, and its replicas would read as
        # empty. An unknown id fails the request instead, and _call refreshes and retries.
        live = [b.id for b in self.describe_brokers()]
        return log_dirs.describe_log_dirs(self._client, self._call, live, topics, within_s)

    def describe_partition_dirs(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[int, BrokerDirs]:
        """Every live broker's dirs and the replicas of ``partitions`` in them (one DescribeLogDirs
        request per broker naming them; with ``within_s``, only the brokers that answered within it)."""
        live = [b.id for b in self.describe_brokers()]
        return log_dirs.describe_partition_dirs(self._client, self._call, live, partitions, within_s)

    def list_reassignments(self, topics: Collection[str] | None = None) -> tuple[OngoingReassignment, ...]:
        """Ongoing reassignments (ListPartitionReassignments; :mod:`.metadata`)."""
        return metadata.list_reassignments(self._client, self._call, topics)

    def describe_min_insync(self, topics: Collection[str]) -> Mapping[str, int]:
        """Effective ``min.insync.replicas`` per topic (one DescribeConfigs request, hedged over
        brokers: :func:`~ferry.kafka.client.spread.first_answer`)."""
        if not topics:
            return {}
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, t, ["min.insync.replicas"]) for t in sorted(topics)
        ]
        described = self._call(
            "describing topic configs", partial(any_broker_configs, self._client, resources)
        )
        return {
            topic: int(configs["min.insync.replicas"]["value"])
            for topic, configs in described.get("topic", {}).items()
            if "min.insync.replicas" in configs
        }

    def describe_health(self, topics: Collection[str] | None = None) -> tuple[PartitionHealth, ...]:
        """Replicas, leader, ISR and ELR (DescribeTopicPartitions; :mod:`.health`)."""
        return health.describe_health(self._client, self._call, topics)

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        """Log end and local start offsets (ListOffsets; :mod:`.health`)."""
        return health.log_offsets(self._client, self._call, partitions, within_s)

    def describe_tiering(self, topics: Collection[str], brokers: Collection[int]) -> Tiering:
        """Tiered topics and KIP-1023 brokers (DescribeConfigs; :mod:`.tiering`)."""
        return tiering.describe_tiering(self._client, self._call, topics, brokers)

    def latest_tiered(self, partitions: Collection[TopicPartition]) -> Mapping[TopicPartition, int]:
        """The last uploaded offset per partition (ListOffsets; :mod:`.tiering`)."""
        return tiering.latest_tiered(self._client, self._call, partitions)

    # -- error translation -----------------------------------------------------------------------

    def _call(self, action: str, call: Callable[[], T]) -> T:
        with translated(action, self._bootstrap, self._timeout_s):
            for attempt in range(_READ_ATTEMPTS):
                try:
                    return bounded(call, self._timeout_s * 2 + 5, action)
                except RETRIED:
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
        results = self._call(
            "altering partition reassignments",
            lambda: reassign.alter_reassignments(self._client, targets, int(self._timeout_s * 1000)),
        )
        return {
            tp: error_text(results[tp]) if tp in results else "the controller did not answer"
            for tp in targets
        }

    def alter_replica_log_dirs(
        self, targets: Mapping[ReplicaTarget, str]
    ) -> Mapping[ReplicaTarget, str | None]:
        """AlterReplicaLogDirs (one request per broker of ``targets``)."""
        return log_dirs.alter_replica_log_dirs(self._client, self._call, targets)

    def describe_throttle_configs(self, keys: Collection[ConfigKey]) -> Mapping[ConfigKey, str]:
        """Values of ``keys`` set on the resource itself: one DescribeConfigs for the topics, hedged over
        brokers, and one per broker, to it, all at once."""
        if not keys:
            return {}
        wanted: dict[tuple[ResourceType, str], list[str]] = {}
        for key in keys:
            wanted.setdefault((key.resource_type, key.resource_name), []).append(key.key)
        resources = [
            ConfigResource(RESOURCE_TYPES[rtype], name, sorted(names))
            for (rtype, name), names in wanted.items()
        ]
        topics = [r for r in resources if r.resource_type == ConfigResourceType.TOPIC]
        brokers = [r for r in resources if r.resource_type == ConfigResourceType.BROKER]
        described = self._call(
            "describing throttle configs",
            lambda: (
                (any_broker_configs(self._client, topics) if topics else {})
                | own_broker_configs(self._client, brokers)
            ),
        )
        return {key: value for key in keys if (value := own_value(described, key)) is not None}

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
            ConfigResource(RESOURCE_TYPES[rtype], name, configs) for (rtype, name), configs in grouped.items()
        ]
        # Incremental: a plain AlterConfigs would reset every entry it does not name.
        calls = [partial(self._alter_config_group, group) for group in per_request(resources)]
        sent: list[float] = []

        def attempt() -> Any:
            sent.append(time.monotonic())
            return side_by_side(calls)

        try:
            results = self._call("altering configs", attempt)
        except KafkaError:
            self._may_land(sent)
            raise
        failed = [
            f"{rtype} {name}: {result}"
            for rtype, by_name in results.items()
            for name, result in by_name.items()
            if result != "OK"
        ]
        if len(sent) > 1:  # an earlier attempt went unanswered (a refusal is an answer: final)
            self._may_land(sent[:-1])
        denied = [f for f in failed if "AuthorizationFailed" in f]
        if denied and len(denied) == len(failed):
            where = ", ".join(sorted(f.split(":", 1)[0] for f in denied))
            raise KafkaError(
                f"not authorized: altering configs of {where} needs {needed_for('altering configs')}",
                hint="throttles are configs: without that ACL ferry cannot throttle, so it moves nothing",
            )
        if failed:
            raise KafkaError(f"altering configs failed: {'; '.join(sorted(failed))}")

    def config_writes_settle_in(self) -> float:
        """Seconds until no config write that failed can land any more (0 when none can)."""
        return max(0.0, self._unsettled_until - time.monotonic())

    def _may_land(self, sent: list[float]) -> None:
        """A write sent at these times failed: any of them may still land, until a broker that
        took it has given up forwarding it (counted from its sending, the last one the latest)."""
        if sent:
            self._unsettled_until = max(self._unsettled_until, sent[-1] + _FORWARDED_FOR_S)

    def _alter_config_group(self, group: list[ConfigResource]) -> Any:
        """One IncrementalAlterConfigs request: a broker's own configs to that broker, topic
        configs to a broker that answered the poll a moment ago (any broker forwards them; the
        broker kafka-python picks may be a stopped one with nothing in flight)."""
        client = self._client
        if group[0].resource_type == ConfigResourceType.BROKER:
            # raise_on_unknown=False: throttle rates are not listed among a broker's dynamic configs.
            return client.alter_configs(group, raise_on_unknown=False, incremental=True)
        answer = to_one_that_answered(client, client._alter_configs_request(group, incremental=True))
        return client._alter_configs_process_responses(answer.responses)

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
                f"electing preferred leaders failed: {error_text(kerrors.for_code(response.error_code))}"
            )
        answers: dict[TopicPartition, str | None] = {tp: "the controller did not answer" for tp in partitions}
        for result in response.replica_election_results:
            for part in result.partition_result:
                error = kerrors.for_code(part.error_code)
                ok = error is kerrors.NoError or error is kerrors.ElectionNotNeededError
                answers[TopicPartition(result.topic, part.partition_id)] = None if ok else error_text(error)
        return answers

    # -- the freeze switch (ferry.kafka.freeze) --------------------------------------------------

    def read_freeze(self, *, within_s: float | None = None) -> FreezeState | None:
        """The latest freeze record: the control topic read from its start up to its end offset."""
        return self._freeze.read_freeze(within_s)

    def write_freeze(self, state: FreezeState) -> None:
        """Create the control topic when missing, then produce ``state`` with acks=all."""
        self._freeze.write_freeze(state)
