"""How KafkaPythonAdmin sends a throttle change (one request per broker, all at once) and reads
configs back (each resource's error code checked)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import kafka.errors as kerrors
import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import DescribeConfigsResponse

from ferry.kafka.client.configs import checked, own_value, per_request, side_by_side
from ferry.kafka.resources import ConfigKey, ResourceType

_RESULT = DescribeConfigsResponse.DescribeConfigsResult
_ENTRY = _RESULT.DescribeConfigsResourceResult
_LISTED = "leader.replication.throttled.replicas"


def test_each_broker_alone_and_the_topics_together() -> None:
    b1 = ConfigResource(ConfigResourceType.BROKER, "1", {})
    b3 = ConfigResource(ConfigResourceType.BROKER, "3", {})
    t = ConfigResource(ConfigResourceType.TOPIC, "t", {})
    u = ConfigResource(ConfigResourceType.TOPIC, "u", {})
    assert per_request([b1, t, b3, u]) == [[b1], [b3], [t, u]]
    assert per_request([t]) == [[t]]


def test_requests_goside_by_side_and_their_answers_merge() -> None:
    """Each call waits for all three to have started: sent one after another, they would time out."""
    started = threading.Barrier(3, timeout=5)

    def call(rtype: str, name: str) -> Callable[[], Mapping[str, Mapping[str, Any]]]:
        def send() -> Mapping[str, Mapping[str, Any]]:
            started.wait()
            return {rtype: {name: "OK"}}

        return send

    merged = side_by_side([call("broker", "1"), call("broker", "3"), call("topic", "t")])
    assert merged == {"broker": {"1": "OK", "3": "OK"}, "topic": {"t": "OK"}}
    assert side_by_side([lambda: {"topic": {"u": "OK"}}]) == {"topic": {"u": "OK"}}


def _answer(*results: tuple[int, str, int, str | None]) -> DescribeConfigsResponse:
    """A DescribeConfigs answer: per resource (type, name, error code, the listed replicas set on it)."""
    return DescribeConfigsResponse(
        version=4,
        throttle_time_ms=0,
        results=[
            _RESULT(
                error_code=code,
                error_message=None,
                resource_type=rtype,
                resource_name=name,
                configs=[]
                if value is None
                else [
                    _ENTRY(
                        name=_LISTED,
                        value=value,
                        read_only=False,
                        config_source=1,  # DYNAMIC_TOPIC_CONFIG
                        is_sensitive=False,
                        synonyms=[],
                        is_default=False,
                        config_type=7,
                        documentation=None,
                    )
                ],
            )
            for rtype, name, code, value in results
        ],
    )


TOPIC = ConfigResourceType.TOPIC.value


def test_a_resource_answered_with_an_error_is_an_error_not_a_resource_without_configs() -> None:
    """kafka-python's own reading gives the refused topic no configs: a throttle set there would
    read as unset."""
    answer = _answer((TOPIC, "t", 0, "0:1"), (TOPIC, "u", 29, None))
    assert (
        KafkaAdminClient._describe_configs_process_responses([answer], config_filter="all")["topic"]["u"]
        == {}
    )
    with pytest.raises(kerrors.TopicAuthorizationFailedError, match="topic u: "):
        checked(KafkaAdminClient, [answer])


def test_a_topic_gone_is_left_out_and_the_others_read() -> None:
    answer = _answer((TOPIC, "t", 0, "0:1"), (TOPIC, "gone", 3, None))
    described = checked(KafkaAdminClient, [answer])
    assert set(described["topic"]) == {"t"}
    assert own_value(described, ConfigKey(ResourceType.TOPIC, "t", _LISTED)) == "0:1"


def test_a_broker_answering_with_an_error_is_an_error_naming_it() -> None:
    answer = _answer((ConfigResourceType.BROKER.value, "2", 31, None))
    with pytest.raises(kerrors.ClusterAuthorizationFailedError, match="broker 2: "):
        checked(KafkaAdminClient, [answer])
