"""Reads spread over brokers: the first answer of several asked the same thing, taken as soon as
one succeeds; and every broker's own answer, of those that answered in time."""

from __future__ import annotations

import pytest
from kafka.errors import ClusterAuthorizationFailedError, KafkaTimeoutError, NodeNotReadyError
from kafka.future import Future

from ferry.kafka.client.spread import all_settled, answered, first_of


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


def test_all_settled_waits_for_every_success_and_failure() -> None:
    a, b = Future(), Future()
    settled = all_settled([a, b])
    a.success("dirs")
    assert not settled.is_done
    b.failure(NodeNotReadyError(2))
    assert settled.succeeded()
    assert all_settled([]).succeeded()


def test_the_answers_are_those_in_by_the_deadline_and_silence_is_no_error() -> None:
    quick, hung, unreachable, timed_out = Future(), Future(), Future(), Future()
    quick.success("dirs of 1")
    unreachable.failure(NodeNotReadyError(3))
    timed_out.failure(KafkaTimeoutError("timed out"))
    assert answered({1: [quick], 2: [hung], 3: [unreachable], 4: [timed_out]}) == {1: ["dirs of 1"]}
    assert answered({1: [quick, hung]}) == {}  # a broker counts once it answered all it was asked


def test_a_broker_that_answers_no_fails_the_read() -> None:
    denied = Future().failure(ClusterAuthorizationFailedError("DESCRIBE on CLUSTER"))
    with pytest.raises(ClusterAuthorizationFailedError):
        answered({1: [Future().success("dirs")], 2: [denied]})
