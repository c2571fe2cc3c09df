"""How KafkaPythonAdmin sends a throttle change: one request per broker, all at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType

from ferry.kafka.client.configs import per_request, side_by_side


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
