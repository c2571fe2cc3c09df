"""How well a throttled ``ferry execute`` uses its throttle, next to Kafka's own reassign tool.

Starts its own local sandbox (1 controller + 4 brokers, always stopped at the end), creates two
identical topics on brokers 1 and 2 (RF 1, PARTITIONS partitions of about MIB MiB each, written
by Kafka's ProducerPerformance from the same jars, uncompressed), then moves each to brokers 3 and
4 under the same throttle: one with ferry's executor (in process, listening to its events), the
other with ``org.apache.kafka.tools.reassign.ReassignPartitionsCommand --execute --throttle`` polled with
``--verify`` until it reports completion. Figures:

* utilisation: per receiving broker, its copy rate between 10 % and 90 % of its bytes, divided
  by the throttle (Kafka throttles each broker's follower fetches at that rate); the mean.
* completion / ideal: wall time from the first submission to the run's end (ferry: run() returns,
  after the last move ended and the leader election; Kafka: the first --verify saying complete)
  divided by bytes into the busiest new broker / throttle.
* ETA error at 25, 50 and 75 %: |ETA at the first progress event past that point - time actually
  left until the last byte arrived| / time actually left (ferry only: Kafka's tool has no ETA).
  The last byte's arrival is seen by a sampler reading the receiving brokers' sizes every 0.2 s;
  the "end at poll" columns use the first of ferry's own 1 s progress events showing every byte
  instead (the first published definition, up to a poll late).

Usage::

    .venv/bin/python benchmarks/execute_throughput.py                       # 4 x 40 MiB, 4 MiB/s
    .venv/bin/python benchmarks/execute_throughput.py --mib 10 --throttle-mib 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ferry.execute.batching import Limits
from ferry.execute.events import Event, ProgressUpdate
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.progress import by_broker
from ferry.formats import load_reassignment
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.kafka.snapshot import collect
from ferry.model import Plan, TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars
from sigterm import exit_on_sigterm

MIB = 1024 * 1024
RECORD_BYTES = 10_000

# (seconds since start, bytes on each receiving broker)
Trace = list[tuple[float, dict[int, int]]]


@dataclass(frozen=True)
class Result:
    tool: str
    seconds: float
    trace: Trace
    totals: dict[int, int]
    eta_errors: dict[int, float | None]
    # ferry only: (seconds, bytes per receiving broker, bytes of all, rate, ETA) per progress event
    events: list[tuple[float, dict[int, int], int, int, float | None, float | None]] = field(
        default_factory=list
    )
    # ferry only: the ETA errors against the end as ferry's 1 s polls saw it
    eta_errors_at_poll: dict[int, float | None] = field(default_factory=dict)
    # ferry only: seconds since start of each phase (first event of a kind, last byte, ...)
    phases: dict[str, float] = field(default_factory=dict)


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--mib", type=int, default=40, help="MiB per partition")
    parser.add_argument("--throttle-mib", type=float, default=4.0, help="throttle, MiB/s")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--events", type=Path, help="also write ferry's progress events here (to study the ETA offline)"
    )
    args = parser.parse_args()
    throttle = int(args.throttle_mib * MIB)
    lib = ensure_jars()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ferry-bench-exec-") as tmp:
        sandbox = Sandbox(Path(tmp) / "sandbox")
        try:
            state = sandbox.up(ClusterSpec(brokers=4, racks=2), lib, ready_brokers, timeout_s=180)
            bs = state.bootstrap
            targets = {p: [3 + p % 2] for p in range(args.partitions)}
            with KafkaPythonAdmin(bs, timeout_s=30) as admin:
                for topic in ("bench-ferry", "bench-kafka"):
                    _create_and_fill(lib, bs, topic, args.partitions, args.mib * MIB)
                ferry = _run_ferry(admin, bs, Path(tmp), targets, throttle)
                kafka = _run_kafka(admin, lib, bs, Path(tmp), targets, throttle)
        finally:
            sandbox.down()
    load_after = os.getloadavg()
    figures = [_figures(r, throttle) for r in (ferry, kafka)]
    _print_table(figures, args, load_before, load_after)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if args.events:
        args.events.write_text(json.dumps(ferry.events))
    return 0


def _create_and_fill(lib: Path, bs: str, topic: str, partitions: int, per_partition: int) -> None:
    """The topic on brokers 1 and 2 (RF 1), written by Kafka's ProducerPerformance (fast, uncompressed)."""
    assignment = ",".join(str(1 + p % 2) for p in range(partitions))
    _java(
        lib,
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        bs,
        "--create",
        "--topic",
        topic,
        "--replica-assignment",
        assignment,
    )
    # Null keys: the sticky partitioner spreads batches over the partitions, not exactly evenly;
    # the figures use the bytes each partition really has.
    records = partitions * per_partition // RECORD_BYTES
    _java(
        lib,
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(RECORD_BYTES),
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={bs}",
        "acks=1",
        "compression.type=none",
        "batch.size=262144",
        "linger.ms=5",
    )


def _java(lib: Path, main_class: str, *args: str, timeout_s: float = 300) -> str:
    command = ["java", "-Xmx512m", "-cp", f"{lib}/*", main_class, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def _plan_file(directory: Path, topic: str, targets: Mapping[int, Sequence[int]]) -> Path:
    path = directory / f"{topic}.json"
    parts = [{"topic": topic, "partition": p, "replicas": list(r)} for p, r in targets.items()]
    path.write_text(json.dumps({"version": 1, "partitions": parts}))
    return path


def _run_ferry(
    admin: KafkaPythonAdmin, bs: str, tmp: Path, targets: Mapping[int, Sequence[int]], throttle: int
) -> Result:
    totals = _totals(admin, "bench-ferry", targets)
    reassignment = load_reassignment(_plan_file(tmp, "bench-ferry", targets))
    plan = Plan.of(reassignment.to_moves(collect(admin, ["bench-ferry"]).snapshot, "bench-ferry"))
    trace: Trace = []
    etas: list[tuple[float, float, float | None]] = []  # (t, fraction, eta)
    events: list[tuple[float, dict[int, int], int, int, float | None, float | None]] = []
    start = time.monotonic()

    phases: dict[str, float] = {}

    def listen(event: Event) -> None:
        kind = type(event).__name__
        phases.setdefault(f"first {kind}", time.monotonic() - start)
        phases[f"last {kind}"] = time.monotonic() - start
        if isinstance(event, ProgressUpdate):
            now = time.monotonic() - start
            trace.append((now, {b: p.done for b, p in by_broker(event.replicas).items()}))
            etas.append((now, event.progress.fraction, event.estimate.eta_s))
            events.append(
                (
                    now,
                    trace[-1][1],
                    event.progress.done,
                    event.progress.total,
                    event.estimate.rate,
                    event.estimate.eta_s,
                )
            )

    with Journal.open(tmp / "journal.sqlite") as journal:
        options = ExecuteOptions(throttle=throttle, limits=Limits(5, None), poll_interval_s=1.0)
        executor = Executor(admin, journal, listener=listen)
        request = executor.prepare(plan, bootstrap=bs, options=options)
        start = time.monotonic()
        with _Sampler(bs, "bench-ferry", targets, start) as sampler:
            executor.run(request)
            seconds = time.monotonic() - start
    # The ETA is checked against when the last byte arrived: seen within 0.2 s by the sampler,
    # within a poll (1 s) by ferry's own events (the definition of the first published run).
    end = _first_complete(sampler.trace, totals) or seconds
    end_at_poll = _first_complete(trace, totals) or seconds
    errors = {pct: _eta_error(etas, pct / 100, end) for pct in (25, 50, 75)}
    errors_at_poll = {pct: _eta_error(etas, pct / 100, end_at_poll) for pct in (25, 50, 75)}
    phases |= {"last byte": end, "last byte at poll": end_at_poll, "run returned": seconds}
    return Result("ferry execute", seconds, trace, totals, errors, events, errors_at_poll, phases)


class _Sampler:
    """Bytes on the receiving brokers every 0.2 s, on its own thread and client, while a run lasts."""

    def __init__(self, bs: str, topic: str, targets: Mapping[int, Sequence[int]], start: float) -> None:
        self._admin = KafkaPythonAdmin(bs, timeout_s=10)
        self._topic, self._targets, self._start = topic, targets, start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.trace: Trace = []

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            done = _new_bytes(self._admin, self._topic, self._targets)
            self.trace.append((time.monotonic() - self._start, done))

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        self._admin.close()


def _run_kafka(
    admin: KafkaPythonAdmin,
    lib: Path,
    bs: str,
    tmp: Path,
    targets: Mapping[int, Sequence[int]],
    throttle: int,
) -> Result:
    plan = _plan_file(tmp, "bench-kafka", targets)
    tool = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    common = ["--bootstrap-server", bs, "--reassignment-json-file", str(plan)]
    totals = _totals(admin, "bench-kafka", targets)
    trace: Trace = []
    start = time.monotonic()
    _java(lib, tool, *common, "--execute", "--throttle", str(throttle))
    while time.monotonic() - start < 1800:
        trace.append((time.monotonic() - start, _new_bytes(admin, "bench-kafka", targets)))
        if "still in progress" not in _java(lib, tool, *common, "--verify"):
            break
    seconds = time.monotonic() - start
    return Result("Kafka ReassignPartitionsCommand", seconds, trace, totals, {})


def _totals(admin: KafkaPythonAdmin, topic: str, targets: Mapping[int, Sequence[int]]) -> dict[int, int]:
    """Bytes each new broker has to receive: the source replica's size, before the move."""
    sizes = admin.describe_replica_sizes([topic])
    totals: dict[int, int] = {}
    for p, replicas in targets.items():
        totals[replicas[0]] = totals.get(replicas[0], 0) + max(sizes[TopicPartition(topic, p)].values())
    return totals


def _new_bytes(admin: KafkaPythonAdmin, topic: str, targets: Mapping[int, Sequence[int]]) -> dict[int, int]:
    sizes = admin.describe_replica_sizes([topic])
    done: dict[int, int] = {}
    for p, replicas in targets.items():
        b = replicas[0]
        done[b] = done.get(b, 0) + sizes.get(TopicPartition(topic, p), {}).get(b, 0)
    return done


def _first_complete(trace: Trace, totals: Mapping[int, int]) -> float | None:
    for t, done in trace:
        if all(done.get(b, 0) >= total for b, total in totals.items()):
            return t
    return None


def _eta_error(
    etas: Sequence[tuple[float, float, float | None]], fraction: float, end: float
) -> float | None:
    for t, f, eta in etas:
        if f >= fraction and eta is not None and end > t:
            return abs(eta - (end - t)) / (end - t)
    return None


def _utilisation(trace: Trace, totals: Mapping[int, int], throttle: int) -> float | None:
    """Mean over receiving brokers of (bytes copied between 10 % and 90 %) / time / throttle."""
    rates = []
    for broker, total in totals.items():
        t10 = _crossing(trace, broker, 0.1 * total)
        t90 = _crossing(trace, broker, 0.9 * total)
        if t10 is None or t90 is None or t90 <= t10:
            continue
        rates.append((t90[1] - t10[1]) / (t90[0] - t10[0]) / throttle)
    return sum(rates) / len(rates) if rates else None


def _crossing(trace: Trace, broker: int, level: float) -> tuple[float, int] | None:
    for t, done in trace:
        if done.get(broker, 0) >= level:
            return t, done[broker]
    return None


def _figures(result: Result, throttle: int) -> dict[str, object]:
    busiest = max(result.totals.values())
    ideal = busiest / throttle
    return {
        "tool": result.tool,
        "moved_mib": round(sum(result.totals.values()) / MIB, 1),
        "busiest_broker_mib": round(busiest / MIB, 1),
        "ideal_s": round(ideal, 1),
        "completion_s": round(result.seconds, 1),
        "completion_over_ideal": round(result.seconds / ideal, 3),
        "utilisation": _round(_utilisation(result.trace, result.totals, throttle)),
        "eta_error": {f"{k}%": _round(v) for k, v in result.eta_errors.items()},
        "eta_error_end_at_poll": {f"{k}%": _round(v) for k, v in result.eta_errors_at_poll.items()},
        "samples": len(result.trace),
        "phases_s": {k: round(v, 3) for k, v in sorted(result.phases.items(), key=lambda kv: kv[1])},
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _print_table(
    figures: Sequence[Mapping[str, object]],
    args: argparse.Namespace,
    before: tuple[float, ...],
    after: tuple[float, ...],
) -> None:
    print(
        f"{args.partitions} partitions x ~{args.mib} MiB, RF 1, brokers 1,2 -> 3,4;"
        f" throttle {args.throttle_mib} MiB/s"
    )
    print(f"load average before {before[0]:.2f}, after {after[0]:.2f} (1 min), cores {os.cpu_count()}")
    print()
    print(
        "| tool | moved MiB | busiest new broker MiB | ideal s | completion s | completion / ideal"
        " | utilisation | ETA error 25 % | 50 % | 75 % | end at poll: 25 % | 50 % | 75 % |"
    )
    print("| --- |" + " ---: |" * 12)
    for f in figures:
        eta, at_poll = f["eta_error"], f["eta_error_end_at_poll"]
        assert isinstance(eta, dict) and isinstance(at_poll, dict)
        cells = [
            f["tool"],
            f["moved_mib"],
            f["busiest_broker_mib"],
            f["ideal_s"],
            f["completion_s"],
            f["completion_over_ideal"],
            f["utilisation"],
            *(eta.get(k, "-") for k in ("25%", "50%", "75%")),
            *(at_poll.get(k, "-") for k in ("25%", "50%", "75%")),
        ]
        print("| " + " | ".join("-" if c is None else str(c) for c in cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
