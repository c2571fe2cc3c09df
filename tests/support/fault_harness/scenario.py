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
    """Runs one scenario; ``healed`` blocks until the run's fault is over (to retry a refusal)."""

    kind: ScenarioKind
    ferry: FerryRunner
    workdir: Path
    rng: random.Random
    healed: Callable[[], None]

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
        time.sleep(self.rng.uniform(1.0, 8.0))
        if self.ferry.requests():
            self.ferry.run("cancel", "--request", "1")
        self._finish(execute)

    def _rollback(self, plan: Path) -> None:
        self._finish(self._start_execute(plan))
        self.ferry.resume_unfinished()  # a rollback undoes a finished request
        before = len(self.ferry.requests())
        code = self.ferry.run("rollback", "1", *RUN_OPTIONS)
        if code not in (0, -9) and len(self.ferry.requests()) == before:
            self.healed()  # refused (a broker down, an ISR short): the operator tries again later
            self.ferry.run("rollback", "1", *RUN_OPTIONS)

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
        for attempt in range(2):
            before = len(self.ferry.requests())
            process = self.ferry.start("execute", "--plan", str(plan), *RUN_OPTIONS)
            while process.poll() is None and len(self.ferry.requests()) == before:
                time.sleep(0.2)
            if process.poll() is None or len(self.ferry.requests()) > before:
                return process
            code = self.ferry.finish(process, "execute")
            if attempt:
                return None
            if code != -9:
                self.healed()
        return None

    def _finish(self, process: subprocess.Popen[str] | None) -> None:
        if process is not None:
            self.ferry.finish(process, "execute")
