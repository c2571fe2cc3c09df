"""Prometheus metrics of a request: served while ``ferry execute`` runs (``--metrics-port``), or
written once by ``ferry progress`` for node-exporter's textfile collector (``--metrics-textfile``).

The values come from what the executor and ``ferry progress`` measure anyway (the executor's
progress events, one DescribeLogDirs round per poll): a scrape never adds an Admin API call.

Metrics, every one labelled by ``request``:

* ``ferry_bytes_copied`` / ``ferry_bytes_total`` — bytes the adding replicas hold / must hold;
* ``ferry_broker_bytes_copied`` / ``ferry_broker_bytes_total`` — the same per receiving ``broker``;
* ``ferry_moves`` — partition moves by ``state``: ``done``, ``in_flight``, ``pending``;
* ``ferry_eta_seconds`` — seconds left (absent while there is no rate yet);
* ``ferry_throttle_bytes_per_second`` — the request's replication throttle (0: none);
* ``ferry_frozen`` — 1 while the cluster is frozen and no new move is submitted;
* ``ferry_broker_silent`` — per ``broker`` of the moves, 1 while it did not answer the last
  measurement of its log dirs within 3 s (stopped, stalled: its bytes are held at their last
  figures, and no throttle is written to it), 0 once it answers;
* with ``--pace auto``: ``ferry_pace_throttle_bytes_per_second`` per ``broker`` and ``role``
  (leader, follower), ``ferry_pace_concurrency`` per ``broker``, ``ferry_pace_state`` per
  ``broker``, ``role`` and ``state`` (1 for the rule that made the last decision, 0 for the
  others: back-off, floor, ceiling, raise, hold...), and ``ferry_held_under_min_isr``, the moving
  partitions under min ISR that hold new moves back.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, start_http_server, write_to_textfile

from ferry.errors import UsageError
from ferry.execute.events import (
    Event,
    HeldUnderMinIsr,
    Listener,
    PaceDecided,
    ProgressUpdate,
    SubmissionPaused,
    SubmissionResumed,
)
from ferry.execute.pace.controller import State, broker_concurrency
from ferry.execute.progress import Estimate, ReplicaProgress, by_broker, total

_MOVE_STATES = ("done", "in_flight", "pending")


class RequestMetrics:
    """The gauges of one request, in a registry of their own (no process or platform metrics).

    Made before the request exists (so a port that cannot be bound fails before anything is
    recorded); :meth:`start` names the request, and events before it are ignored."""

    def __init__(self) -> None:
        self.request = ""
        self.registry = CollectorRegistry(auto_describe=True)

        def gauge(name: str, text: str, *labels: str) -> Gauge:
            return Gauge(name, text, ["request", *labels], registry=self.registry)

        self.copied = gauge("ferry_bytes_copied", "Bytes the adding replicas hold")
        self.total = gauge("ferry_bytes_total", "Bytes the adding replicas must hold")
        self.broker_copied = gauge(
            "ferry_broker_bytes_copied", "Bytes copied to a receiving broker", "broker"
        )
        self.broker_total = gauge(
            "ferry_broker_bytes_total", "Bytes a receiving broker must receive", "broker"
        )
        self.moves = gauge("ferry_moves", "Partition moves by state", "state")
        self.eta = gauge("ferry_eta_seconds", "Seconds left at the measured rate")
        self.throttle = gauge("ferry_throttle_bytes_per_second", "Replication throttle (0: none)")
        self.frozen = gauge("ferry_frozen", "1 while the cluster is frozen")
        self.pace_rate = gauge(
            "ferry_pace_throttle_bytes_per_second", "Throttle set by --pace auto", "broker", "role"
        )
        self.pace_concurrency = gauge(
            "ferry_pace_concurrency", "Moves in flight allowed by --pace auto", "broker"
        )
        self.pace_state = gauge(
            "ferry_pace_state", "1 for the rule of the last --pace auto decision", "broker", "role", "state"
        )
        self.held = gauge("ferry_held_under_min_isr", "Moving partitions under min ISR, holding new moves")
        self.silent = gauge(
            "ferry_broker_silent", "1 while a broker of the moves did not answer in time", "broker"
        )
        self._silent_seen: set[int] = set()

    def start(self, request_id: int, throttle: int | None) -> None:
        """From now on the metrics are those of request ``request_id``."""
        self.request = str(request_id)
        self.throttle.labels(self.request).set(throttle or 0)
        self.set_frozen(False)

    def record(
        self,
        replicas: Iterable[ReplicaProgress],
        estimate: Estimate,
        *,
        done: int,
        in_flight: int,
        moves: int,
        silent: frozenset[int] = frozenset(),
    ) -> None:
        """One measurement: bytes per request and receiving broker, moves by state, the ETA, and
        which brokers did not answer it (``silent``; one that was silent before and is not now: 0)."""
        self._record_silent(silent)
        replicas = list(replicas)
        overall = total(replicas)
        self.copied.labels(self.request).set(overall.done)
        self.total.labels(self.request).set(overall.total)
        for broker, progress in by_broker(replicas).items():
            self.broker_copied.labels(self.request, str(broker)).set(progress.done)
            self.broker_total.labels(self.request, str(broker)).set(progress.total)
        counts = (done, in_flight, max(0, moves - done - in_flight))
        for state, count in zip(_MOVE_STATES, counts, strict=True):
            self.moves.labels(self.request, state).set(count)
        if estimate.eta_s is not None:
            self.eta.labels(self.request).set(estimate.eta_s)
            return
        with suppress(KeyError):
            self.eta.remove(self.request)  # no rate yet, or nothing left: no ETA to show

    def _record_silent(self, silent: frozenset[int]) -> None:
        self._silent_seen |= silent
        for broker in self._silent_seen:
            self.silent.labels(self.request, str(broker)).set(1 if broker in silent else 0)

    def set_frozen(self, frozen: bool) -> None:
        self.frozen.labels(self.request).set(1 if frozen else 0)

    def listen(self, event: Event) -> None:
        """Follow the executor's events (a :data:`~ferry.execute.events.Listener`)."""
        if not self.request:
            return
        if isinstance(event, ProgressUpdate):
            self.record(
                event.replicas,
                event.estimate,
                done=event.moves_done,
                in_flight=event.in_flight,
                moves=event.moves_total,
                silent=event.silent,
            )
        elif isinstance(event, SubmissionPaused | SubmissionResumed):
            self.set_frozen(isinstance(event, SubmissionPaused))
        elif isinstance(event, PaceDecided):
            self.record_pace(event)
        elif isinstance(event, HeldUnderMinIsr):
            self.held.labels(self.request).set(len(event.partitions))

    def record_pace(self, event: PaceDecided) -> None:
        """Each broker's paced throttle per role, its concurrency, and the rule behind it."""
        for (broker, role), pace in event.decisions.items():
            labels = (self.request, str(broker), role.value)
            self.pace_rate.labels(*labels).set(pace.rate)
            for state in State:
                self.pace_state.labels(*labels, state.value).set(1 if state is pace.state else 0)
        for broker, allowed in broker_concurrency(event.decisions).items():
            self.pace_concurrency.labels(self.request, str(broker)).set(allowed)

    def write_textfile(self, path: Path) -> None:
        """Write the metrics in the text format, atomically (node-exporter may read at any time)."""
        try:
            write_to_textfile(str(path), self.registry)
        except OSError as exc:
            raise UsageError(f"--metrics-textfile {path}: cannot write: {exc.strerror or exc}") from None


def add_metrics_port_options(parser: argparse.ArgumentParser) -> None:
    """``--metrics-port`` and ``--metrics-address`` of the verbs that run a request."""
    parser.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics of the request on http://ADDRESS:PORT/metrics while it runs "
        "(bytes copied and total per request and receiving broker, moves done / in flight / pending, "
        "ETA, throttle, frozen; with --pace auto each broker's throttle per role, its moves allowed "
        "and the rule that set them)",
    )
    parser.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address --metrics-port listens on (default: 127.0.0.1; 0.0.0.0 for every interface)",
    )


@contextmanager
def served(args: argparse.Namespace) -> Iterator[RequestMetrics | None]:
    """While the block runs, metrics served on ``--metrics-port`` (``None`` without the option).

    The port is bound at once, before any request is recorded; the server stops when the block
    ends, however it ends.
    """
    if args.metrics_port is None:
        yield None
        return
    if not 0 < args.metrics_port < 65536:
        raise UsageError(f"--metrics-port: expected a port between 1 and 65535, got {args.metrics_port}")
    metrics = RequestMetrics()
    try:
        server, thread = start_http_server(args.metrics_port, args.metrics_address, metrics.registry)
    except OSError as exc:
        where = f"{args.metrics_address}:{args.metrics_port}"
        raise UsageError(f"--metrics-port: cannot listen on {where}: {exc.strerror or exc}") from None
    try:
        yield metrics
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def tee(*listeners: Listener | None) -> Listener:
    """One listener that hands every event to each of ``listeners`` (``None`` ones skipped)."""
    chosen = [listener for listener in listeners if listener is not None]

    def listen(event: Event) -> None:
        for listener in chosen:
            listener(event)

    return listen
