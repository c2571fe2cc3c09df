"""Requests sent so that one hanging broker cannot hold the reading that needs them.

A broker process that is stopped (SIGSTOP, a long GC pause, a frozen VM) keeps its connections
open and answers nothing; kafka-python waits for it until the request times out (30 s by default),
and a run's poll waits with it. Two ways around that, for reads only:

* a question any broker can answer (metadata, the ISRs, the ongoing reassignments, which brokers
  forward to the controller) goes to :data:`ASKED` brokers at once, and the first answer is taken
  (:func:`first_answer`);
* a question each broker answers for itself (DescribeLogDirs) goes to all of them at once, and
  what has come back within a bound is taken (:func:`answers_within`); the caller keeps its last
  figures for a broker that stayed silent.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any

import kafka.errors as kerrors
from kafka.future import Future

ASKED = 3
"""Brokers asked at once: two may hang and the reading still goes on."""

SILENT = (
    kerrors.KafkaConnectionError,
    kerrors.NodeNotReadyError,
    kerrors.RequestTimedOutError,
    kerrors.KafkaTimeoutError,
)
"""Failures that mean a broker did not answer (rather than answered no)."""


def first_answer(client: Any, request: Callable[[], Any]) -> Any:
    """``request()`` sent to up to :data:`ASKED` brokers at once; the first answer."""
    manager = client._manager
    brokers = [b.node_id for b in manager.cluster.brokers()]
    asked = random.sample(brokers, min(ASKED, len(brokers))) or [None]  # None: kafka-python picks

    async def ask() -> Any:
        return await first_of([manager.send(request(), node_id=node) for node in asked])

    return manager.run(ask)


def answers_within(client: Any, requests: Mapping[int, Any], within_s: float) -> dict[int, Any]:
    """Each broker's answer to its request, all sent at once, of the brokers that answered within
    ``within_s``; a broker that did not (or could not be reached) is left out.

    Raises:
        the failure of a broker that answered with an error other than not answering.
    """
    manager = client._manager

    async def ask() -> dict[int, Future]:
        futures = {broker: manager.send(request, node_id=broker) for broker, request in requests.items()}
        # On the deadline the brokers still out are silent; their requests run on, unread.
        with suppress(kerrors.KafkaTimeoutError):
            await manager.wait_for(all_settled(list(futures.values())), within_s * 1000)
        return futures

    return answered(manager.run(ask))


def answered(futures: Mapping[int, Future]) -> dict[int, Any]:
    """The values of the futures that succeeded; a failure other than :data:`SILENT` is raised."""
    values: dict[int, Any] = {}
    for broker, future in futures.items():
        if not future.is_done:
            continue
        if future.succeeded():
            values[broker] = future.value
        elif not isinstance(future.exception, SILENT):
            raise future.exception
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
