"""The ferry work a run does under a throttle, and the replicas each partition may end with."""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from support.fault_harness.check import Allowed
from support.fault_harness.ferry import FerryRunner

from ferry.model import TopicPartition

THROTTLE = "400000"  # bytes/s: a 1 MB partition takes seconds to copy, so faults land mid-move
ATTEMPTS = 3  # how often the harness, as an operator, runs a command a fault made fail
RETRY_PAUSE_S = 5.0
KAFKA_ERROR = 5  # ferry's exit code for a cluster it could not reach
KILLED = -9  # Popen's return code for a process ended by SIGKILL
RUN_OPTIONS = ("--throttle", THROTTLE, "--max-moves-per-broker", "2", "--poll-interval", "0.5")

Replicas = tuple[int, ...]
Layout = Mapping[TopicPartition, Replicas]


class ScenarioKind(StrEnum):
    CANCEL = "execute+cancel"
    ROLLBACK = "execute+rollback"
    RETARGET = "re-target"


@dataclass(frozen=True, slots=True)
class Moves:
    """The run's partitions: where they are, where plan A sends them, where plan B re-targets them."""

    original: Layout
    a: Layout
    b: Layout

    @classmethod
    def draw(cls, original: Layout, brokers: Sequence[int], rng: random.Random) -> Moves:
        """Each partition swaps one replica for the broker it lacks; plan B swaps another one."""
        a, b = {}, {}
        for tp, replicas in original.items():
            spare = next(x for x in brokers if x not in replicas)
            first, second = rng.sample(range(len(replicas)), 2)
            a[tp] = _swap(replicas, first, spare)
            b[tp] = _swap(replicas, second, spare)
        return cls(dict(original), a, b)


def _swap(replicas: Replicas, index: int, broker: int) -> Replicas:
    return tuple(broker if i == index else r for i, r in enumerate(replicas))


def write_plan(path: Path, layout: Layout) -> Path:
    parts = [{"topic": tp.topic, "partition": tp.partition, "replicas": list(r)} for tp, r in layout.items()]
    path.write_text(json.dumps({"version": 1, "partitions": parts}))
    return path


def allowed(kind: ScenarioKind, moves: Moves) -> dict[TopicPartition, Allowed]:
    """The replica lists each partition may end with: a target exactly, and after a cancel its
    original replicas in any order (the controller drops the adding ones where they stand)."""
    if kind is ScenarioKind.CANCEL:
        return {tp: ((moves.a[tp], True), (moves.original[tp], False)) for tp in moves.original}
    if kind is ScenarioKind.ROLLBACK:
        return {tp: ((moves.original[tp], True),) for tp in moves.original}
    return {tp: ((moves.b[tp], True),) for tp in moves.original}


@dataclass
class Scenario:
    """Runs one scenario; ``healed`` blocks until the run's fault is over (to retry a refusal);
    ``fault_at`` is when the fault hits (``time.monotonic``): a cancel comes after it."""

    kind: ScenarioKind
    ferry: FerryRunner
    workdir: Path
    rng: random.Random
    healed: Callable[[], None]
    fault_at: float

    def run(self, moves: Moves) -> None:
        plan_a = write_plan(self.workdir / "plan-a.json", moves.a)
        if self.kind is ScenarioKind.CANCEL:
            self._cancel(plan_a)
        elif self.kind is ScenarioKind.ROLLBACK:
            self._rollback(plan_a)
        else:
            self._retarget(plan_a, write_plan(self.workdir / "plan-b.json", moves.b))

    def _cancel(self, plan: Path) -> None:
        execute = self._start_execute(plan)
        # After the fault: a cancel that came first would leave nothing in flight for it to hit.
        time.sleep(max(0.0, self.fault_at - time.monotonic()) + self.rng.uniform(1.0, 6.0))
        if self.ferry.requests():
            for attempt in range(ATTEMPTS):
                code = self.ferry.run("cancel", "--request", "1")
                if code not in (KAFKA_ERROR, KILLED):
                    break
                if code == KAFKA_ERROR:
                    self._healed(attempt)  # a broker down, a failover: the operator cancels again
        self._finish(execute)

    def _rollback(self, plan: Path) -> None:
        self._finish(self._start_execute(plan))
        self.ferry.resume_unfinished()  # a rollback undoes a finished request
        before = len(self.ferry.requests())
        for attempt in range(ATTEMPTS):
            code = self.ferry.run("rollback", "1", *RUN_OPTIONS)
            if code == 0 or len(self.ferry.requests()) > before:
                break  # done, or recorded: what is left of it is resumed like any request
            if code != KILLED:
                self._healed(attempt)  # refused (a broker down, an ISR short): the operator tries again

    def _retarget(self, plan_a: Path, plan_b: Path) -> None:
        first = self._start_execute(plan_a)
        time.sleep(self.rng.uniform(0.5, 5.0))
        self._finish(self._start_execute(plan_b))
        self._finish(first)

    def _start_execute(self, plan: Path) -> subprocess.Popen[str] | None:
        """A running execute that recorded its request, or None once it ended (exit code kept).

        Ended before recording anything (killed, or refused: a broker down, an ISR short), it is
        started again, after the fault is over, as an operator would.
        """
        for attempt in range(ATTEMPTS):
            before = len(self.ferry.requests())
            process = self.ferry.start("execute", "--plan", str(plan), *RUN_OPTIONS)
            while process.poll() is None and len(self.ferry.requests()) == before:
                time.sleep(0.2)
            if process.poll() is None or len(self.ferry.requests()) > before:
                return process
            if self.ferry.finish(process, "execute") != KILLED:
                self._healed(attempt)
        return None

    def _healed(self, attempt: int) -> None:
        """Wait for the fault to be over, and a little longer each time (as an operator would)."""
        self.healed()
        time.sleep(RETRY_PAUSE_S * attempt)

    def _finish(self, process: subprocess.Popen[str] | None) -> None:
        if process is not None:
            self.ferry.finish(process, "execute")
