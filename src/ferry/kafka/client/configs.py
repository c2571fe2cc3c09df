"""Config writes and reads of KafkaPythonAdmin: resources grouped per broker, sent side by side; topic
configs read from whichever broker answers first, a broker's from that broker, every resource's
error code checked."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kafka.errors as kerrors
from kafka.admin import ConfigResource, ConfigResourceType

from ferry.kafka.client.spread import first_answer
from ferry.kafka.resources import ConfigKey, ResourceType

RESOURCE_TYPES = {
    ResourceType.TOPIC: ConfigResourceType.TOPIC,
    ResourceType.BROKER: ConfigResourceType.BROKER,
}

# The config sources that mean "set on this very resource"; a cluster-wide broker default or a
# static server.properties value is not ours to restore or delete.
_OWN_SOURCES = {
    ResourceType.TOPIC: "DYNAMIC_TOPIC_CONFIG",
    ResourceType.BROKER: "DYNAMIC_BROKER_CONFIG",
}


def own_value(described: Mapping[str, Any], key: ConfigKey) -> str | None:
    """The value of ``key`` set on the resource itself, None when unset there or only inherited."""
    entry = described.get(key.resource_type.value, {}).get(key.resource_name, {}).get(key.key)
    if not entry or entry.get("config_source") != _OWN_SOURCES[key.resource_type]:
        return None
    value = entry.get("value")
    return None if value is None else str(value)


def any_broker_configs(client: Any, resources: Sequence[ConfigResource]) -> dict[str, dict[str, Any]]:
    """Topics' configs, every source, as kafka-python's ``describe_configs`` gives them, asked as
    the other reads any broker answers are (hedged over brokers:
    :func:`~ferry.kafka.client.spread.first_answer`); kafka-python's own call sends the request to
    one broker, a stopped one too. 'all', not 'modified': a cluster- or broker-level value binds
    the topic just as well. Each resource's error is checked (:func:`checked`)."""
    return checked(client, [first_answer(client, lambda: client._describe_configs_request(resources))])


def own_broker_configs(client: Any, resources: Sequence[ConfigResource]) -> dict[str, dict[str, Any]]:
    """Brokers' configs, each asked of that broker (only it answers for its own), all at once;
    each resource's error checked (:func:`checked`)."""
    manager = client._manager

    async def ask() -> list[Any]:
        sent = [manager.send(client._describe_configs_request([r]), node_id=int(r.name)) for r in resources]
        return [await answer for answer in sent]

    return checked(client, manager.run(ask) if resources else [])


def checked(client: Any, responses: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """DescribeConfigs ``responses`` read as kafka-python's ``describe_configs`` reads them, once
    each resource's error code has been checked.

    kafka-python's reading drops that code, so a resource refused (no DESCRIBE_CONFIGS on it) or
    not served read as one with no configs set: a throttle an operator had set before a run as
    unset (and deleted, not restored, at its end), a topic's ``min.insync.replicas`` as 1 (and the
    check that refuses a move below it as passed). A topic that no longer exists has no configs
    and is left out.

    Raises:
        kafka.errors.BrokerResponseError: the first other error, naming its resource.
    """
    gone: set[tuple[int, str]] = set()
    for response in responses:
        for result in response.results:
            error = kerrors.for_code(result.error_code)
            if error is kerrors.NoError:
                continue
            if error is kerrors.UnknownTopicOrPartitionError:
                gone.add((result.resource_type, result.resource_name))
                continue
            kind = ConfigResourceType(result.resource_type).name.lower()
            detail = result.error_message or error.description
            raise error(f"{kind} {result.resource_name}: {detail}")
    described: dict[str, dict[str, Any]] = client._describe_configs_process_responses(
        responses, config_filter="all"
    )
    for rtype, name in gone:
        described.get(ConfigResourceType(rtype).name.lower(), {}).pop(name, None)
    return described


def per_request(resources: Sequence[ConfigResource]) -> list[list[ConfigResource]]:
    """The resources grouped by the broker that takes them: one group per broker, one for topics.

    A broker's own configs go to that broker; topic configs go to any broker, which forwards them
    to the controller, so they travel together.
    """
    brokers = [[r] for r in resources if r.resource_type == ConfigResourceType.BROKER]
    others = [r for r in resources if r.resource_type != ConfigResourceType.BROKER]
    return brokers + ([others] if others else [])


def side_by_side(
    calls: Sequence[Callable[[], Mapping[str, Mapping[str, Any]]]],
) -> dict[str, dict[str, Any]]:
    """Run ``calls`` at the same time, one thread each, and merge their per-resource results.

    kafka-python sends a multi-broker config change one broker after the other; a throttle change
    touches every broker a move involves, and it is on the path from a run's start to its first
    move and from its last move to its end: side by side it takes one round trip, not one per
    broker (docs/benchmarks.md, "Execute throughput": start to first submission 0.48 → 0.28-0.34 s).
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
