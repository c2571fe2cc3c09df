"""Driving a request from the command line: its id first, progress while it runs, how it ended.

``ferry execute`` and ``ferry rollback`` start requests, ``ferry resume`` continues one; all three
report through the listener :func:`progress_listener` picks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from ferry.cli.exec_render import event_line
from ferry.cli.interrupts import Interrupts
from ferry.cli.live_progress import LiveProgress
from ferry.cli.metrics import RequestMetrics, tee
from ferry.execute.events import (
    ClusterUnreachable,
    Event,
    HeldUnderMinIsr,
    Listener,
    ProgressUpdate,
    SubmissionPaused,
    SubmissionResumed,
)
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState
from ferry.kafka.admin import ClusterAdmin

_PROGRESS_EVERY_S = 5.0


def run_request(
    admin: ClusterAdmin,
    journal: Journal,
    request_id: int,
    moves: int,
    *,
    wait: bool,
    command: str,
    metrics: RequestMetrics | None = None,
) -> None:
    """Print the new request's id, drive it to its end, and say how it ended; ``metrics`` (of
    ``--metrics-port``) follow the run."""
    print(request_id, flush=True)
    print(f"ferry {command}: request {request_id}: {moves} move(s), journal {journal.path}", file=sys.stderr)
    with Interrupts() as interrupts, progress_listener(wait) as shown:
        listener = with_metrics(shown, metrics, journal, request_id)
        Executor(admin, journal, listener=listener, shield=interrupts.shielded).run(request_id)
    request = journal.request(request_id)
    note = f" ({request.note})" if request.note and request.state is not RequestState.DONE else ""
    print(f"ferry {command}: request {request_id}: {request.state}{note}", file=sys.stderr)


def with_metrics(
    listener: Listener, metrics: RequestMetrics | None, journal: Journal, request_id: int
) -> Listener:
    """``listener``, and ``metrics`` following request ``request_id`` if there are any."""
    if metrics is None:
        return listener
    metrics.start(request_id, journal.request(request_id).options.throttle)
    return tee(listener, metrics.listen)


@contextmanager
def progress_listener(wait: bool) -> Iterator[Listener]:
    """The listener for ``--wait``: live bars when stderr is a terminal, else log lines.

    Without ``--wait`` only pauses for a freeze (and their end) are shown. The bars are stopped
    when the block ends, however it ends, so the terminal is left clean for the final message or
    error.
    """
    if not wait:
        yield freeze_notices
    elif sys.stderr.isatty():
        with LiveProgress(Console(stderr=True)) as live:
            yield live
    else:
        yield listener_for(True)


def listener_for(verbose: bool) -> Listener:
    """Plain progress lines on stderr (one every few seconds) and a line per other event."""
    last_progress = [0.0]
    paused = [False]

    def listen(event: Event) -> None:
        if not verbose:
            return
        if isinstance(event, SubmissionPaused | SubmissionResumed):
            paused[0] = isinstance(event, SubmissionPaused)
        if isinstance(event, HeldUnderMinIsr):
            paused[0] = bool(event.partitions)
        if isinstance(event, ProgressUpdate):
            # One progress line every few seconds is enough for a log; the rest are every poll.
            # The last one (nothing in flight) is shown at once, unless a freeze holds the rest.
            now = time.monotonic()
            if now - last_progress[0] < _PROGRESS_EVERY_S and (event.in_flight or paused[0]):
                return
            last_progress[0] = now
        line = event_line(event)
        if line:
            print(line, file=sys.stderr, flush=True)

    return listen


def freeze_notices(event: Event) -> None:
    """A line for a pause (cluster frozen) or its end, and for a poll that could not reach the
    cluster, even without ``--wait``.

    An executor that stopped submitting without a word would look hung.
    """
    if isinstance(event, SubmissionPaused | SubmissionResumed | ClusterUnreachable | HeldUnderMinIsr):
        print(event_line(event), file=sys.stderr, flush=True)
