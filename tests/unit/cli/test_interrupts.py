"""Ctrl-C / SIGTERM handling: the first signal interrupts, none cuts the throttle restore short.

Real signals, sent to this process with ``signal.raise_signal`` (its Python handler runs before
the call returns), against the executor on the in-memory admin.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from pathlib import Path

import pytest
from support.exec_fake import ExecFakeAdmin

from ferry.cli.interrupts import WAIT_MESSAGE, Interrupts
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.states import RequestState, TaskState
from ferry.execute.throttles import FOLLOWER_RATE
from ferry.model import Move, Plan, TopicPartition

ORIGINAL = {TopicPartition("t", p): (1, 2) for p in range(2)}
TARGET = (3, 4)
THEIRS = {ConfigKey(ResourceType.BROKER, "3", FOLLOWER_RATE): "123"}


def test_the_first_signal_interrupts_and_later_ones_are_only_noted() -> None:
    lines: list[str] = []
    # Whatever handler was there before (Spark installs its own in a full run) comes back.
    before = signal.getsignal(signal.SIGINT)
    with Interrupts(lines.append) as interrupts:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)  # would raise again without the guard
        signal.raise_signal(signal.SIGTERM)
    assert interrupts.noted == [signal.SIGINT, signal.SIGTERM]
    assert lines == [WAIT_MESSAGE, WAIT_MESSAGE]
    assert signal.getsignal(signal.SIGINT) is before  # put back


def test_a_signal_while_shielded_is_raised_when_the_block_ends() -> None:
    lines: list[str] = []
    steps: list[str] = []
    with Interrupts(lines.append) as interrupts, pytest.raises(KeyboardInterrupt, match="held back"):
        with interrupts.shielded():
            signal.raise_signal(signal.SIGINT)
            steps.append("cleanup finished")
        steps.append("not reached")
    assert steps == ["cleanup finished"]
    assert lines == [WAIT_MESSAGE]


class _SignalDuringRestore(ExecFakeAdmin):
    """Sends ``signum`` to this process in the middle of the first config write once armed."""

    def __init__(self, signum: int) -> None:
        super().__init__(ORIGINAL, polls_to_finish=3)
        self.signum = signum
        self.armed = False
        self.configs.update(THEIRS)

    def alter_configs(self, writes: Mapping[ConfigKey, str | None]) -> None:
        if self.armed:
            self.armed = False
            signal.raise_signal(self.signum)
        super().alter_configs(writes)


def _run(tmp_path: Path, admin: _SignalDuringRestore, sleep_signal: int | None) -> Journal:
    """Run a throttled two-move request under :class:`Interrupts`; returns the (open) journal."""
    journal = Journal.open(tmp_path / "j.sqlite")

    def sleep(seconds: float) -> None:
        if sleep_signal is not None:
            admin.armed = True  # the next config write is the restore in the executor's finally
            signal.raise_signal(sleep_signal)

    plan = Plan.of(Move(tp, r, TARGET, 100) for tp, r in ORIGINAL.items())
    with Interrupts(lambda line: None) as interrupts:
        executor = Executor(admin, journal, sleep=sleep, shield=interrupts.shielded)
        rid = executor.prepare(plan, bootstrap="b", options=ExecuteOptions(throttle=10))
        with pytest.raises(KeyboardInterrupt):
            executor.run(rid)
    assert interrupts.noted == [admin.signum]
    return journal


def test_a_second_signal_during_the_restore_lets_it_finish(tmp_path: Path) -> None:
    admin = _SignalDuringRestore(signal.SIGTERM)
    with _run(tmp_path, admin, sleep_signal=signal.SIGINT) as journal:
        (request,) = journal.requests()
        assert request.state is RequestState.INTERRUPTED
        assert any(t.state is TaskState.SUBMITTED for t in journal.tasks(request.id))
        assert all(t.applied is None for t in journal.throttles(request.id))
    assert admin.configs == THEIRS


def test_a_first_signal_during_the_final_restore_waits_for_it(tmp_path: Path) -> None:
    """All moves done, restoring: the signal is held back, then stops the run before the election."""
    admin = _SignalDuringRestore(signal.SIGINT)
    admin.polls_to_finish = 1

    original_alter = admin.alter_reassignments

    def alter_and_arm(targets: Mapping[TopicPartition, tuple[int, ...] | None]) -> object:
        # Both moves go in one batch and end at the next poll: the next config write is the restore.
        admin.armed = True
        return original_alter(targets)

    admin.alter_reassignments = alter_and_arm  # type: ignore[assignment,method-assign]
    with _run(tmp_path, admin, sleep_signal=None) as journal:
        (request,) = journal.requests()
        assert request.state is RequestState.INTERRUPTED
        assert {t.state for t in journal.tasks(request.id)} == {TaskState.DONE}
        assert all(t.applied is None for t in journal.throttles(request.id))
    assert admin.configs == THEIRS
    assert admin.elected == []
