"""The first answer of several brokers asked the same thing: taken as soon as one succeeds."""

from __future__ import annotations

from kafka.errors import KafkaTimeoutError, NodeNotReadyError
from kafka.future import Future

from ferry.kafka.client.health import first_of


def test_the_first_success_is_taken_while_others_hang_or_fail() -> None:
    hung, failing, answering = Future(), Future(), Future()
    first = first_of([hung, failing, answering])
    failing.failure(NodeNotReadyError(2))
    assert not first.is_done  # one failure of three: the others may still answer
    answering.success("page")
    assert first.succeeded() and first.value == "page"
    hung.success("late")  # an answer after the first changes nothing
    assert first.value == "page"


def test_it_fails_once_every_broker_asked_failed() -> None:
    a, b = Future(), Future()
    first = first_of([a, b])
    a.failure(NodeNotReadyError(1))
    assert not first.is_done
    b.failure(KafkaTimeoutError("timed out"))
    assert first.failed() and isinstance(first.exception, KafkaTimeoutError)
