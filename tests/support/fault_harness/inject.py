"""One fault per run, at a moment drawn from the run's seed, healed before the run is checked."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from support.fault_harness.ferry import FerryRunner

from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.sandbox import Sandbox

TARGET_WAIT_S = 20.0  # how long a fault waits for something to hit (a move in flight, a ferry)


class FaultKind(StrEnum):
    FERRY_KILL = "kill-9-ferry"
    BROKER_KILL = "broker-kill"
    CONTROLLER_FAILOVER = "controller-failover"
    BROKER_PAUSE = "broker-pause"


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Which fault, how long after the scenario starts, and how long it lasts."""

    kind: FaultKind
    delay_s: float
    hold_s: float

    @classmethod
    def draw(cls, kind: FaultKind, rng: random.Random) -> FaultPlan:
        return cls(kind, round(rng.uniform(0.5, 12.0), 1), round(rng.uniform(2.0, 12.0), 1))


@dataclass(frozen=True, slots=True)
class Target:
    """Where a fault lands: the sandbox, the run's topics and the ferry processes."""

    sandbox: Sandbox
    topics: list[str]
    ferry: FerryRunner


class Injection:
    """A fault running in its own thread; :meth:`join` returns what it did."""

    def __init__(self, plan: FaultPlan, target: Target) -> None:
        self.plan = plan
        self._target = target
        self._done: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> float:
        """Start the countdown; when the fault hits (``time.monotonic``)."""
        self._thread.start()
        return time.monotonic() + self.plan.delay_s

    def join(self, timeout_s: float = 180.0) -> str:
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return f"{self.plan.kind}: still running after {timeout_s:.0f} s"
        return self._done[0] if self._done else f"{self.plan.kind}: no outcome"

    def _run(self) -> None:
        time.sleep(self.plan.delay_s)
        action = _ACTIONS[self.plan.kind]
        try:
            self._done.append(action(self._target, self.plan.hold_s))
        except Exception as exc:  # reported in the run's line, never swallowed
            self._done.append(f"{self.plan.kind} failed: {type(exc).__name__}: {exc}")


def _kill_ferry(target: Target, _hold_s: float) -> str:
    deadline = time.monotonic() + TARGET_WAIT_S
    while time.monotonic() < deadline:
        killed = target.ferry.kill_all()
        if killed:
            return f"kill -9 of {killed} ferry process(es)"
        time.sleep(0.2)
    return "kill -9 ferry: none running (missed)"


def _moving_broker(target: Target) -> tuple[int, str]:
    """A broker receiving or sending a replica now; any broker of the run when none is."""
    state = target.sandbox.state()
    with KafkaPythonAdmin(state.bootstrap, timeout_s=10) as admin:
        deadline = time.monotonic() + TARGET_WAIT_S
        while time.monotonic() < deadline:
            ongoing = admin.list_reassignments(target.topics)
            moving = sorted({b for r in ongoing for b in (*r.adding_replicas, *r.removing_replicas)})
            if moving:
                return random.Random(len(ongoing)).choice(moving), "moving a replica"
            time.sleep(0.3)
    return state.brokers[0].node_id, "no move in flight (missed)"


def _kill_broker(target: Target, hold_s: float) -> str:
    broker, why = _moving_broker(target)
    target.sandbox.kill(broker, hard=True)
    time.sleep(hold_s)
    target.sandbox.restart(broker, ready_brokers, timeout_s=90)
    return f"broker {broker} ({why}) killed -9 for {hold_s} s"


def _pause_broker(target: Target, hold_s: float) -> str:
    broker, why = _moving_broker(target)
    pid = target.sandbox.state().node(broker).pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(hold_s)
    finally:
        os.kill(pid, signal.SIGCONT)
    return f"broker {broker} ({why}) paused for {hold_s} s"


def quorum_leader(sandbox: Sandbox) -> int:
    """The metadata quorum's leader, from the controllers' quorum-state files (highest epoch)."""
    best = (-1, -1)
    for node in sandbox.state().nodes:
        if node.is_broker:
            continue
        path = Path(node.home) / "data" / "__cluster_metadata-0" / "quorum-state"
        if path.exists():
            state = json.loads(path.read_text())
            best = max(best, (state["leaderEpoch"], state["leaderId"]))
    if best[1] < 0:
        raise RuntimeError("no controller knows a quorum leader")
    return best[1]


def _fail_over(target: Target, hold_s: float) -> str:
    leader = quorum_leader(target.sandbox)
    target.sandbox.kill(leader, hard=True)
    time.sleep(hold_s)
    target.sandbox.restart(leader, ready_brokers, timeout_s=90)
    return f"quorum leader {leader} killed -9 for {hold_s} s, new leader {quorum_leader(target.sandbox)}"


_ACTIONS: dict[FaultKind, Callable[[Target, float], str]] = {
    FaultKind.FERRY_KILL: _kill_ferry,
    FaultKind.BROKER_KILL: _kill_broker,
    FaultKind.CONTROLLER_FAILOVER: _fail_over,
    FaultKind.BROKER_PAUSE: _pause_broker,
}
