"""Requests sent so that one hanging broker cannot hold the reading or the write that needs them.

A broker process that is stopped (SIGSTOP, a long GC pause, a frozen VM) keeps its connections
open and answers nothing; kafka-python waits for it until the request times out (30 s by default),
and a run's poll waits with it. Three ways around that:

* a question any broker can answer (metadata, the ISRs, the ongoing reassignments, which brokers
  forward to the controller) goes to one broker, and to others as well when it has not answered
  within :data:`HEDGE_S`; the first answer is taken (:func:`first_answer`);
* a question each broker answers for itself (DescribeLogDirs) goes to all of them at once, and
  what has come back within a bound is taken (:func:`answers_within`); the caller keeps its last
  figures for a broker that stayed silent;
* a write any broker forwards to the controller goes to one broker only, the one that answered
  the last hedged question (:func:`to_one_that_answered`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any
from weakref import WeakKeyDictionary

import kafka.errors as kerrors
from kafka.future import Future

ASKED = 3
"""Brokers asked in all: two may hang and the reading still goes on."""
HEDGE_S = 0.5
"""Seconds the first broker asked has to answer before the others are asked too. Asking all at
once from the start cost every answer three times over (a Metadata answer of 20,000 partitions is
decoded once per broker that sends it: a poll's measurement took 0.51 s against 0.33 s)."""

_ANSWERED: WeakKeyDictionary[Any, int] = WeakKeyDictionary()
"""Per kafka-python client, the broker whose answer :func:`first_answer` last took."""

SILENT = (
    kerrors.KafkaConnectionError,
    kerrors.NodeNotReadyError,
    kerrors.RequestTimedOutError,
    kerrors.KafkaTimeoutError,
)
"""Failures that mean a broker did not answer (rather than answered no)."""


def first_answer(client: Any, request: Callable[[], Any]) -> Any:
    """``request()`` sent to one broker, and after :data:`HEDGE_S` without its answer to up to
    :data:`ASKED` - 1 others as well; the first answer."""
    manager = client._manager
    brokers = [b.node_id for b in manager.cluster.brokers()]
    # The least loaded first: a broker that holds requests unanswered (stopped) is not it.
    first = manager.least_loaded_node()
    others = random.sample([b for b in brokers if b != first], min(ASKED - 1, max(0, len(brokers) - 1)))

    def send(node: int) -> Future:
        sent = manager.send(request(), node_id=node)
        sent.add_callback(lambda _: _ANSWERED.__setitem__(client, node))
        return sent

    async def ask() -> Any:
        asked = send(first)
        try:
            return await manager.wait_for(asked, HEDGE_S * 1000)
        except SILENT:
            pass  # no answer yet, or none coming: ask the others too
        if not others:
            return await asked
        return await first_of([asked, *(send(node) for node in others)])

    return manager.run(ask)


def to_one_that_answered(client: Any, request: Any) -> Any:
    """``request`` sent to the broker that last answered one of :func:`first_answer`'s questions
    (else the least busy), and its answer.

    For a write any broker forwards to the controller (AlterPartitionReassignments, a topic's
    configs): it cannot be asked of several brokers, since a stopped one would apply its copy late,
    when it is back, over whatever was decided meanwhile. kafka-python sends the first to the one
    broker it once took for the controller, for the client's whole life (a random broker under
    KRaft), however long that broker has been silent, and the second to a broker with nothing in
    flight, which a stopped one can be; a run's poll asks :func:`first_answer`'s questions first,
    so the broker chosen here answered a moment ago.
    """
    manager = client._manager
    live = {b.node_id for b in manager.cluster.brokers()}
    node = _ANSWERED.get(client)
    if node not in live:
        node = manager.least_loaded_node()

    async def ask() -> Any:
        return await manager.send(request, node_id=node)

    return manager.run(ask)


def answers_within(
    client: Any, requests: Mapping[int, Sequence[Any]], within_s: float
) -> dict[int, list[Any]]:
    """Each broker's answers to its requests, all sent at once, of the brokers that answered every
    one within ``within_s``; a broker that did not (or could not be reached) is left out.

    Raises:
        the failure of a broker that answered with an error other than not answering.
    """
    manager = client._manager

    async def ask() -> dict[int, list[Future]]:
        futures = {
            broker: [manager.send(request, node_id=broker) for request in asked]
            for broker, asked in requests.items()
        }
        # On the deadline the brokers still out are silent; their requests run on, unread.
        with suppress(kerrors.KafkaTimeoutError):
            await manager.wait_for(
                all_settled([f for sent in futures.values() for f in sent]), within_s * 1000
            )
        return futures

    return answered(manager.run(ask))


def answered(futures: Mapping[int, Sequence[Future]]) -> dict[int, list[Any]]:
    """The values of the brokers whose futures all succeeded; a failure other than :data:`SILENT`
    is raised."""
    values: dict[int, list[Any]] = {}
    for broker, sent in futures.items():
        for future in sent:
            if future.is_done and future.failed() and not isinstance(future.exception, SILENT):
                raise future.exception
        if all(f.is_done and f.succeeded() for f in sent):
            values[broker] = [f.value for f in sent]
    return values


def first_of(futures: Sequence[Future]) -> Future:
    """A future that takes the first of ``futures`` to succeed, or fails once all have failed
    (with the last failure)."""
    first, failed = Future(), [0]

    def succeeded(value: Any) -> None:
        if not first.is_done:
            first.success(value)

    def failure(exc: Exception) -> None:
        failed[0] += 1
        if failed[0] == len(futures) and not first.is_done:
            first.failure(exc)

    for future in futures:
        future.add_callback(succeeded)
        future.add_errback(failure)
    return first


def all_settled(futures: Sequence[Future]) -> Future:
    """A future that succeeds (with None) once every one of ``futures`` has succeeded or failed."""
    settled, left = Future(), [len(futures)]

    def one(_: Any) -> None:
        left[0] -= 1
        if left[0] == 0 and not settled.is_done:
            settled.success(None)

    if not futures:
        return settled.success(None)
    for future in futures:
        future.add_callback(one)
        future.add_errback(one)
    return settled
