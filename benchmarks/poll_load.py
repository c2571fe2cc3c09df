"""Load held: what one progress poll costs on a cluster of many partitions, with many moving.

Starts the project's sandbox (4 brokers, 2 racks, on 127.0.0.1; stopped at the end whatever
happens), creates ``--partitions`` partitions (RF 2) in topics of 100, then:

1. ``ferry execute`` in process (the executor with its real Admin client) of a plan moving
   ``--moving`` of them at once (every move one replica to the other rack's spare broker), polls
   timed from its own progress events;
2. the measurement every poll makes (``ferry progress``, and the executor each poll), of those
   moves taken as in flight, ``--rounds`` times;
3. ``ferry requests`` against the cluster, ``--rounds`` times;
4. the ISR reading ``--pace auto`` makes every control period and, between them, every few seconds
   (DescribeTopicPartitions of every topic, paged), ``--rounds`` times;
5. ``--pace auto``'s step at every poll of a run (the pace's readings and its census of every ISR),
   the ``--moving`` moves taken as in flight, a step every 0.5 s for ``--pace-seconds``: how long
   the longest step held the loop.

Every Admin API call goes through a counting wrapper, so a poll's calls are counted, not assumed.
Prints one line per measurement and the peak RSS of this process. Usage:

    .venv/bin/python benchmarks/poll_load.py --partitions 20000 --moving 2000
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

from kafka_helpers import create_topics

from ferry.cli.main import main as ferry
from ferry.execute.batching import Limits
from ferry.execute.events import Event, ProgressUpdate
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.pace.pacer import Pacer
from ferry.execute.pace.settings import PaceSettings
from ferry.execute.report import measure
from ferry.execute.states import TaskState
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.model import Move, Plan, TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars
from sigterm import exit_on_sigterm

PER_TOPIC = 100


class Counting:
    """The admin client with every public method call counted by name."""

    def __init__(self, inner: KafkaPythonAdmin) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return value(*args, **kwargs)

        return counted


def _topics(partitions: int) -> dict[str, dict[str, object]]:
    """Topics of 100 partitions on brokers 1-4: partition p on (a, b), racks alternating."""
    pairs = ((1, 2), (2, 3), (3, 4), (4, 1))
    count = (partitions + PER_TOPIC - 1) // PER_TOPIC
    return {
        f"load-{t:04d}": {"assignments": {p: list(pairs[(t + p) % 4]) for p in range(PER_TOPIC)}}
        for t in range(count)
    }


def _plan(topics: dict[str, dict[str, Any]], moving: int) -> Plan:
    """``moving`` moves, each swapping a partition's second replica for the broker after it."""
    moves = []
    for topic, spec in topics.items():
        for p, (a, b) in spec["assignments"].items():
            if len(moves) == moving:
                return Plan.of(moves)
            spare = next(x for x in (1, 2, 3, 4) if x not in (a, b))
            moves.append(Move(TopicPartition(topic, p), (a, b), (a, spare), 0))
    return Plan.of(moves)


def _execute(admin: Counting, journal: Journal, plan: Plan, bootstrap: str) -> int:
    polls: list[float] = []
    calls_at: list[Counter[str]] = []

    def listen(event: Event) -> None:
        if isinstance(event, ProgressUpdate):
            polls.append(time.perf_counter())
            calls_at.append(Counter(admin.calls))

    executor = Executor(admin, journal, listener=listen)  # type: ignore[arg-type]
    limits = Limits(max_moves_per_broker=len(plan.moves), max_moves=len(plan.moves))
    options = ExecuteOptions(throttle=50_000_000, limits=limits, poll_interval_s=1.0)
    started = time.perf_counter()
    rid = executor.prepare(plan, bootstrap=bootstrap, options=options)
    executor.run(rid)
    took = time.perf_counter() - started
    print(f"execute: {len(plan.moves)} moves at once, {took:.1f} s, {len(polls)} polls")
    for i in range(1, len(polls)):
        spent = {k: v for k, v in (calls_at[i] - calls_at[i - 1]).items() if v}
        # Between two progress events: the sleep (shorter near the end) and one poll.
        print(
            f"  {polls[i] - polls[i - 1]:.2f} s since the last poll, "
            f"admin calls {sum(spent.values())}: {spent}"
        )
    return rid


def _poll(admin: Counting, journal: Journal, rid: int, rounds: int) -> None:
    """The poll's measurement of every move of ``rid`` as if all were in flight."""
    tasks = [replace(t, state=TaskState.SUBMITTED) for t in journal.tasks(rid)]
    seconds = []
    for _ in range(rounds):
        before, start = Counter(admin.calls), time.perf_counter()
        replicas = measure(admin, tasks).replicas  # type: ignore[arg-type]
        seconds.append(time.perf_counter() - start)
        spent = {k: v for k, v in (admin.calls - before).items() if v}
    print(
        f"poll measurement, {len(tasks)} moves in flight: median {statistics.median(seconds):.2f} s, "
        f"max {max(seconds):.2f} s over {rounds}; admin calls per poll {sum(spent.values())}: {spent}; "
        f"{len(replicas)} replicas measured"
    )


def _isrs(admin: KafkaPythonAdmin, rounds: int) -> None:
    """The pace's ISR reading of the whole cluster."""
    seconds, found = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        found = len(admin.describe_health())
        seconds.append(time.perf_counter() - start)
    print(
        f"ISR reading of every topic ({found} partitions): median {statistics.median(seconds):.2f} s, "
        f"max {max(seconds):.2f} s over {rounds}"
    )


def _pace(admin: KafkaPythonAdmin, journal: Journal, rid: int, seconds: float) -> None:
    """``--pace auto``'s step at every poll, the moves of ``rid`` taken as in flight."""
    tasks = [replace(t, state=TaskState.SUBMITTED) for t in journal.tasks(rid)]
    pacer = Pacer(PaceSettings(period_s=15), 10_000_000, 5, lambda: datetime.now().time())
    steps, readings, began = [], 0, time.perf_counter()
    while (now := time.perf_counter() - began) < seconds:
        start = time.perf_counter()
        readings += pacer.step(admin, tasks, now) is not None
        steps.append(time.perf_counter() - start)
        time.sleep(0.5)
    print(
        f"pace steps over {seconds:.0f} s: {len(steps)} steps, {readings} readings; step median "
        f"{statistics.median(steps):.2f} s, max {max(steps):.2f} s, all steps {sum(steps):.1f} s"
    )


def _timed(label: str, rounds: int, run: Callable[[], int]) -> None:
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = run()
        seconds.append(time.perf_counter() - start)
        assert code == 0, f"{label} exited {code}"
    print(f"{label}: median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s over {rounds} runs")


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--moving", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pace-seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        sandbox = Sandbox(root / "sandbox")
        try:
            state = sandbox.up(
                ClusterSpec(brokers=4, racks=2, heap_mb=512), ensure_jars(), ready_brokers, timeout_s=180
            )
            topics = _topics(args.partitions)
            started = time.perf_counter()
            names = list(topics)
            for i in range(0, len(names), 20):
                create_topics(state.bootstrap, {n: topics[n] for n in names[i : i + 20]})
            print(f"created {len(topics) * PER_TOPIC} partitions in {time.perf_counter() - started:.1f} s")
            journal_path = root / "journal.sqlite"
            with (
                KafkaPythonAdmin(state.bootstrap, timeout_s=60) as client,
                Journal.open(journal_path) as journal,
            ):
                admin = Counting(client)
                rid = _execute(admin, journal, _plan(topics, args.moving), state.bootstrap)
                _poll(admin, journal, rid, args.rounds)
                _isrs(client, args.rounds)
                _pace(client, journal, rid, args.pace_seconds)
            common = ["--bootstrap-server", state.bootstrap, "--journal", str(journal_path)]
            _timed("ferry requests", args.rounds, lambda: ferry(["requests", *common]))
        finally:
            sandbox.down()
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
