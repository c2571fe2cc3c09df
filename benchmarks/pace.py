"""Static throttles against ``--pace auto`` on the real sandbox, with real producers.

Starts its own sandbox (1 controller + 4 brokers on two racks, always stopped at the end). Each
run gets fresh topics, with Kafka's default segment size (1 GiB, ``--segment-mib``; the sandbox's
brokers default to 1 MiB, which made every copied partition hundreds of segments, rolled and
flushed while the move ran):

* ``moving``: PARTITIONS partitions, RF 2 on brokers 1 and 2, filled with MIB MiB each; the plan
  moves every partition to brokers 3 and 4 (each receives all of them); with ``--layout across``
  partition p lies on brokers p, p+1 and goes to p+2, p+3 (mod 4): every broker sends and receives;
* ``steady``: 4 partitions, RF 3 over all four brokers, min.insync.replicas 2, not moved: the
  partitions whose ISR a move must not shrink;
* ``seq``: 4 small partitions on brokers 1 and 2, moved to 3 and 4 in the same plan.

While the move runs: the fault harness's sequence-numbered producers (idempotent, ``acks=all``)
and a consumer on ``seq`` and ``steady`` (acknowledged messages lost; on small topics, so the
consumers are not reading hundreds of MB of filler), a bulk producer writing PRODUCE bytes/s
into ``moving`` (the produce rate a move must outrun; the rate it reached is printed), a latency
probe sending ``acks=all`` messages to ``steady`` 20 times a second (p50 / p99 during the move,
against the same probe idle for 10 s before it), and a sampler reading every partition's ISR
every 0.5 s (ISR shrinks of ``steady``, seconds any partition spent under min ISR). Runs:

* static throttles: far too low (half the produce rate into a receiving broker: it never catches
  up), right, and too high;
* ``--pace auto`` from the same far-too-low start, and from the default start (10 MB/s);
* ``--pace auto`` with trouble injected a third of the way: the receiving broker 3 paused with
  SIGSTOP for 20 s; the produce rate into the moving partitions raised fourfold.

A run that has not ended after LIMIT seconds is cancelled (``ferry cancel``) and counted as not
completed. Each run ends with the throttle configs of its topics and brokers read back (left).

Usage::

    .venv/bin/python benchmarks/pace.py                     # every run (about 15 minutes)
    .venv/bin/python benchmarks/pace.py --only static-right,auto-default
    .venv/bin/python benchmarks/pace.py --only static-high,auto-default --static 50000000,35000000
    .venv/bin/python benchmarks/pace.py --only auto-default,static-high,auto-default,static-high
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from support.fault_harness.load import FILL, SequencedLoad

from execute_throughput import _java as java
from ferry.errors import KafkaError
from ferry.execute.throttles import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars
from sigterm import exit_on_sigterm

MB = 1_000_000
MIB = 1024 * 1024
PERIOD_S = 15  # the controller's period: the shortest the design allows (15-30 s)
RECORD = 10_000  # bytes per record of the fill and of the bulk producer


@dataclass(frozen=True)
class Run:
    name: str
    options: tuple[str, ...]
    fault: str | None = None  # "pause" (SIGSTOP broker 3 for 20 s) or "surge" (produce x4)


@dataclass
class Outcome:
    run: Run
    seconds: float | None  # None: not completed within the limit
    latency_idle: tuple[float, float]
    latency_move: tuple[float, float]
    isr_shrinks: int
    under_min_s: float
    stalls: list[tuple[float, float]]  # (s into the move, ms) of the slowest sends, see _stalls
    lost: int
    acked: int
    left: int
    ferry_cpu_s: float  # user + system seconds of the ferry process (and a cancel's, if any)
    decisions: list[str] = field(default_factory=list)


class Probe:
    """``acks=all`` sends to one topic at a fixed rate, each timed from send to acknowledgement.

    It runs in a process of its own: in the harness's process the sequenced load's producer and
    consumer threads would add their waits for the interpreter lock to every reading."""

    def __init__(self, bootstrap: str, topic: str, per_s: float = 20.0) -> None:
        context = mp.get_context("spawn")
        self._stop = context.Event()
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_probe, args=(bootstrap, topic, 1.0 / per_s, self._stop, send), daemon=True
        )
        self.samples: list[tuple[float, float]] = []  # (sent at, seconds to ack), time.monotonic()

    def __enter__(self) -> Probe:
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._receive.poll(60):
            self.samples = self._receive.recv()
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=10)

    def between(self, start: float, end: float) -> tuple[float, float]:
        """p50 and p99 of the sends in [start, end), milliseconds."""
        got = sorted(s for at, s in self.samples if start <= at < end)
        if len(got) < 10:
            return (float("nan"), float("nan"))
        cuts = statistics.quantiles(got, n=100)
        return (cuts[49] * 1000, cuts[98] * 1000)


def _probe(bootstrap: str, topic: str, gap: float, stop: Any, out: Any) -> None:
    """The probe's process: send every ``gap`` seconds until ``stop``, then send the samples back
    (``time.monotonic`` is the system's monotonic clock, the same in every process)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    samples: list[tuple[float, float]] = []
    while not stop.wait(gap):
        sent = time.monotonic()
        # FILL-prefixed: the sequenced load's consumer of the same topic skips it.
        future = producer.send(topic, FILL + b"probe")
        future.add_callback(lambda _meta, at=sent: samples.append((at, time.monotonic() - at)))
    producer.flush(timeout=30)
    producer.close(timeout=10)
    out.send(samples)


class Bulk:
    """Kafka's ProducerPerformance writing ``rate`` bytes/s of 10 kB records into a topic
    (``acks=1``); :meth:`surge` starts a second one at three times that."""

    def __init__(self, lib: Path, bootstrap: str, topic: str, rate: int) -> None:
        self._lib, self._bootstrap, self._topic, self.rate = lib, bootstrap, topic, rate
        self._processes: list[subprocess.Popen[bytes]] = []

    def _start(self, rate: int) -> None:
        command = ["java", "-Xmx256m", "-cp", f"{self._lib}/*", "org.apache.kafka.tools.ProducerPerformance"]
        command += ["--topic", self._topic, "--num-records", str(10**9), "--record-size", str(RECORD)]
        command += ["--throughput", str(max(1, rate // RECORD)), "--producer-props"]
        command += [f"bootstrap.servers={self._bootstrap}", "acks=1", "compression.type=none", "linger.ms=5"]
        self._processes.append(
            subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )

    def surge(self) -> None:
        self._start(3 * self.rate)

    def __enter__(self) -> Bulk:
        self._start(self.rate)
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


class IsrWatch:
    """Every 0.5 s: ISR shrinks of the watched topic's partitions, and time under min ISR."""

    def __init__(self, bootstrap: str, watched: str, min_isr: int) -> None:
        self._admin = KafkaPythonAdmin(bootstrap, timeout_s=10)
        self._watched, self._min = watched, min_isr
        self._stop = threading.Event()
        self.shrinks, self.under_s = 0, 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last: dict[object, int] = {}
        while not self._stop.wait(0.5):
            try:
                health = self._admin.describe_health()
            except Exception:
                continue
            if any(len(h.isr) < self._min for h in health if h.tp.topic == self._watched):
                self.under_s += 0.5
            for h in health:
                if h.tp.topic != self._watched:
                    continue
                if h.tp in last and len(h.isr) < last[h.tp]:
                    self.shrinks += 1
                last[h.tp] = len(h.isr)

    def __enter__(self) -> IsrWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._admin.close()


def _ferry(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """``ferry ARGS`` in the background, its stderr to ``log`` (a pipe left unread would fill)."""
    command = [sys.executable, "-m", "ferry", *args]
    with log.open("wb") as err:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)


LAYOUTS = ("pair", "across")
"""Where ``moving`` lies and goes (``--layout``): ``pair``, every partition from brokers 1, 2 to 3, 4
(two leaders feed two receiving brokers); ``across``, partition p from brokers p, p+1 to p+2, p+3
(mod 4), so that every broker is a leader sending and a follower receiving at once."""


def _moving(layout: str, p: int) -> tuple[list[int], list[int]]:
    """Partition ``p`` of ``moving``: its replicas before and after the move."""
    if layout == "pair":
        return [1, 2], [3, 4]
    return [(p + k) % 4 + 1 for k in (0, 1)], [(p + k) % 4 + 1 for k in (2, 3)]


def _create(
    lib: Path,
    bootstrap: str,
    topics: tuple[str, str, str],
    partitions: int,
    mib: int,
    segment_mib: int,
    layout: str,
) -> None:
    moving, seq, steady = topics
    segments = {"segment.bytes": str(segment_mib * MIB)}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [
                NewTopic(
                    moving,
                    replica_assignments={p: _moving(layout, p)[0] for p in range(partitions)},
                    topic_configs=segments,
                ),
                NewTopic(seq, replica_assignments={p: [1, 2] for p in range(4)}, topic_configs=segments),
                NewTopic(
                    steady,
                    replica_assignments={
                        p: [(p % 4) + 1, ((p + 1) % 4) + 1, ((p + 2) % 4) + 1] for p in range(4)
                    },
                    topic_configs={"min.insync.replicas": "2", **segments},
                ),
            ]
        )
    finally:
        admin.close()
    time.sleep(2)
    records = partitions * mib * MIB // RECORD
    java(
        lib,
        "org.apache.kafka.tools.ProducerPerformance",
        *("--topic", moving, "--num-records", str(records), "--record-size", str(RECORD)),
        *("--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=1"),
        *("compression.type=none", "batch.size=262144", "linger.ms=5"),
        timeout_s=1800,
    )


def _delete(bootstrap: str, topics: Sequence[str]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_topics(list(topics))
    finally:
        admin.close()


@contextmanager
def _fault(kind: str | None, sandbox: Sandbox, bulk: Bulk, at_s: float) -> Iterator[None]:
    """Inject ``kind`` after ``at_s`` seconds, in a thread; undone when the block ends."""
    paused: list[int] = []

    def inject() -> None:
        time.sleep(at_s)
        if kind == "pause":
            pid = sandbox.state().node(3).pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            paused.append(pid)
            time.sleep(20)
            os.kill(pid, signal.SIGCONT)
            paused.remove(pid)
        elif kind == "surge":
            bulk.surge()

    thread = threading.Thread(target=inject, daemon=True)
    if kind:
        thread.start()
    try:
        yield
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)


def _plan(path: Path, moving: str, seq: str, partitions: int, layout: str) -> Path:
    """The plan file: every partition of ``moving`` to where the layout sends it, ``seq`` to 3, 4."""
    targets = [_moving(layout, p)[1] for p in range(partitions)]
    entries = [{"topic": moving, "partition": p, "replicas": to} for p, to in enumerate(targets)]
    entries += [{"topic": seq, "partition": p, "replicas": [3, 4]} for p in range(4)]
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return path


def run_one(
    run: Run,
    position: int,
    lib: Path,
    sandbox: Sandbox,
    bootstrap: str,
    work: Path,
    *,
    partitions: int,
    mib: int,
    produce: int,
    limit: float,
    segment_mib: int,
    layout: str,
) -> Outcome:
    # The position keeps a run named twice (--only) off the topics of the first, still being deleted.
    tag = f"{position}-{run.name}"
    moving, seq, steady = f"moving-{tag}", f"seq-{tag}", f"steady-{tag}"
    _create(lib, bootstrap, (moving, seq, steady), partitions, mib, segment_mib, layout)
    plan = _plan(work / f"{tag}.json", moving, seq, partitions, layout)
    journal = work / f"{tag}.sqlite"
    load = SequencedLoad(bootstrap, [seq, steady])
    load.start()
    with (
        Probe(bootstrap, steady) as probe,
        Bulk(lib, bootstrap, moving, produce) as bulk,
        IsrWatch(bootstrap, steady, 2) as watch,
    ):
        tps = [TopicPartition(moving, p) for p in range(partitions)]
        first = _written(bootstrap, tps)
        idle_start = time.monotonic()
        time.sleep(10)
        started = time.monotonic()
        shrinks_before = watch.shrinks
        args = ("execute", "--plan", str(plan), "--bootstrap-server", bootstrap, "--journal", str(journal))
        log = work / f"{tag}.log"
        # Reaped inside the block below and nothing else is: the children's usage there is ferry's.
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = _ferry(log, *args, "--wait", "--pace-period", str(PERIOD_S), *run.options)
        with _fault(run.fault, sandbox, bulk, at_s=limit / 6):
            try:
                process.wait(timeout=limit)
                seconds: float | None = time.monotonic() - started
            except subprocess.TimeoutExpired:
                seconds = None
                cancel = _ferry(
                    work / "cancel.log",
                    "cancel",
                    "--all",
                    "--yes",
                    "--bootstrap-server",
                    bootstrap,
                    "--journal",
                    str(journal),
                )
                cancel.wait(timeout=120)
                process.wait(timeout=120)
        ended = time.monotonic()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = used.ru_utime + used.ru_stime - children.ru_utime - children.ru_stime
        err = log.read_text()
        written = (_written(bootstrap, tps) - first) * RECORD
        rate = written / (ended - idle_start) / MB
        print(f"# {run.name}: produced {rate:.2f} MB/s into {moving}", file=sys.stderr)
        shrinks = watch.shrinks - shrinks_before
        under = watch.under_s
    tally = load.stop()
    decisions = [
        line.split(": ", 2)[-1] for line in err.splitlines() if ": pace: " in line or "paused" in line
    ]
    if load.errors:
        print(f"# {run.name}: load: {load.errors[:3]}", file=sys.stderr)
    left = _left(bootstrap, [moving, seq, steady])
    _delete(bootstrap, [moving, seq, steady])
    return Outcome(
        run,
        seconds,
        latency_idle=probe.between(idle_start, started),
        latency_move=probe.between(started, ended),
        stalls=_stalls(probe.samples, started, ended),
        isr_shrinks=shrinks,
        under_min_s=under,
        lost=tally.lost,
        acked=tally.acked,
        left=left,
        ferry_cpu_s=cpu,
        decisions=decisions,
    )


def _stalls(samples: Sequence[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """The slowest 1 % of the sends in [start, end) as stalls: sends that were waiting at the same
    moment (one sent while an earlier one was still unacknowledged) are one stall, given as the
    seconds into the move its first send went and the longest wait in it, ms."""
    during = [(at, s) for at, s in samples if start <= at < end]
    if len(during) < 100:
        return []
    cut = sorted(s for _, s in during)[-(len(during) // 100)]
    stalls: list[tuple[float, float, float]] = []  # first sent, last acknowledged, longest
    for at, s in sorted(during):
        if s < cut:
            continue
        if stalls and at <= stalls[-1][1]:
            first, last, longest = stalls[-1]
            stalls[-1] = (first, max(last, at + s), max(longest, s))
        else:
            stalls.append((at, at + s, s))
    return [(first - start, longest * 1000) for first, _, longest in stalls]


def _written(bootstrap: str, tps: Sequence[TopicPartition]) -> int:
    """Records in ``tps`` (log end offsets), asked until every leader can say (a leader elected
    a moment ago answers OffsetNotAvailable for a while)."""
    with KafkaPythonAdmin(bootstrap, timeout_s=15) as admin:
        for _ in range(30):
            try:
                return sum(o.end for o in admin.log_offsets(tps).values())
            except KafkaError:
                time.sleep(1)
    raise RuntimeError(f"no log end offsets for {tps[0].topic} in 30 s")


def _left(bootstrap: str, topics: Sequence[str]) -> int:
    keys = [
        ConfigKey(ResourceType.BROKER, str(b), k) for b in range(1, 5) for k in (LEADER_RATE, FOLLOWER_RATE)
    ]
    keys += [
        ConfigKey(ResourceType.TOPIC, t, k) for t in topics for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)
    ]
    with KafkaPythonAdmin(bootstrap, timeout_s=15) as admin:
        return len(admin.describe_throttle_configs(keys))


def runs(produce: int) -> list[Run]:
    low = str(produce // 2)
    return [
        Run("static-low", ("--throttle", low)),
        Run("static-right", ("--throttle", str(25 * MB))),
        Run("static-high", ("--throttle", str(1000 * MB))),
        Run("auto-low", ("--pace", "auto", "--throttle", low)),
        Run("auto-default", ("--pace", "auto")),
        Run("auto-pause", ("--pace", "auto"), fault="pause"),
        Run("auto-surge", ("--pace", "auto"), fault="surge"),
    ]


def _ms(pair: tuple[float, float]) -> str:
    return f"{pair[0]:.0f} / {pair[1]:.0f}"


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--mib", type=int, default=150, help="MiB per moving partition")
    parser.add_argument("--produce", type=int, default=2 * MB, help="bytes/s written into the moving topic")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds before a run is cancelled")
    parser.add_argument(
        "--only",
        help="comma-separated run names, run in this order; a name may come more than once (the "
        "first run on a fresh sandbox also warms its brokers up)",
    )
    parser.add_argument(
        "--segment-mib",
        type=int,
        default=1024,
        help="segment.bytes of the benchmark's topics, MiB: Kafka's default (the sandbox's brokers "
        "default to 1 MiB, which makes each copied partition hundreds of segments)",
    )
    parser.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="pair",
        help="pair: the moving partitions go from brokers 1, 2 to 3, 4; across: partition p from "
        "brokers p, p+1 to p+2, p+3 (mod 4), every broker sending and receiving",
    )
    parser.add_argument(
        "--static",
        default="",
        help="more static throttles, bytes/s, comma-separated, run after the others (also with --only); "
        "named static-<MB/s>",
    )
    args = parser.parse_args()
    rates = [int(r) for r in args.static.split(",") if r]
    statics = [Run(f"static-{rate // MB}", ("--throttle", str(rate))) for rate in rates]
    named = {r.name: r for r in [*runs(args.produce), *statics]}
    wanted = args.only.split(",") if args.only else list(named)
    if unknown := [name for name in wanted if name not in named]:
        parser.error(f"--only: no run named {', '.join(unknown)} (runs: {', '.join(named)})")
    chosen = [named[name] for name in wanted] + [r for r in statics if r.name not in wanted]
    lib = ensure_jars()
    with tempfile.TemporaryDirectory(prefix="ferry-pace-") as tmp:
        sandbox = Sandbox(Path(tmp) / "sandbox")
        try:
            state = sandbox.up(ClusterSpec(brokers=4, racks=2), lib, ready_brokers, timeout_s=180)
            outcomes = []
            for position, run in enumerate(chosen):
                outcome = run_one(
                    run,
                    position,
                    lib,
                    sandbox,
                    state.bootstrap,
                    Path(tmp),
                    partitions=args.partitions,
                    mib=args.mib,
                    produce=args.produce,
                    limit=args.limit,
                    segment_mib=args.segment_mib,
                    layout=args.layout,
                )
                outcomes.append(outcome)
                print(f"# {run.name}: {outcome}", file=sys.stderr, flush=True)
        finally:
            sandbox.down()
    _print(outcomes, args)
    return 0


def _print(outcomes: Sequence[Outcome], args: argparse.Namespace) -> None:
    received = Counter(b for p in range(args.partitions) for b in _moving(args.layout, p)[1])
    per_broker = max(received.values(), default=0) * args.mib * MIB
    print(f"layout: {args.layout}", end="; ")
    statics = [o.seconds for o in outcomes if o.run.name.startswith("static") and o.seconds and _harmless(o)]
    best = min(statics, default=None)
    print(f"bytes into each receiving broker: {per_broker / MB:.0f} MB", end="; ")
    print(f"produce into the moving topic: {args.produce / MB:.1f} MB/s")
    print(f"best harmless static: {best:.0f} s" if best else "no static run completed without harm")
    print()
    columns = [
        "run",
        "options",
        "completed in s",
        "/ best harmless static",
        "produce latency p50 / p99 ms, idle",
        "during the move",
        "ISR shrinks of steady",
        "s under min ISR",
        "acked",
        "lost",
        "throttles left",
        "ferry CPU s",
    ]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for o in outcomes:
        secs = f"{o.seconds:.0f}" if o.seconds is not None else f"not in {args.limit:.0f}"
        ratio = f"{o.seconds / best:.2f}" if o.seconds is not None and best else "-"
        options = f"`{' '.join(o.run.options)}`" + (f" + {o.run.fault}" if o.run.fault else "")
        cells = [o.run.name, options, secs, ratio, _ms(o.latency_idle), _ms(o.latency_move)]
        cells += [str(o.isr_shrinks), f"{o.under_min_s:.1f}", str(o.acked), str(o.lost), str(o.left)]
        cells.append(f"{o.ferry_cpu_s:.1f}")
        print("| " + " | ".join(cells) + " |")
    print("\nthe slowest 1 % of the probe's sends during the move, as stalls (s into the move: longest ms)")
    for o in outcomes:
        print(f"    {o.run.name}: " + ", ".join(f"{at:.0f}: {ms:.0f}" for at, ms in o.stalls))
    for o in outcomes:
        if o.run.fault or o.run.name == "auto-low":
            print(f"\n{o.run.name}: the controller's floors, back-offs and pauses (stderr)")
            telling = [line for line in o.decisions if any(w in line for w in _TELLING)]
            for line in telling[:10]:
                print(f"    {line[:400]}")


_TELLING = ("floor:", "back-off:", "ceiling:", "paused:", "resumed:")


def _harmless(outcome: Outcome) -> bool:
    """No partition of ``steady`` lost an ISR member or went under min ISR during the move."""
    return outcome.isr_shrinks == 0 and outcome.under_min_s == 0


if __name__ == "__main__":
    raise SystemExit(main())
