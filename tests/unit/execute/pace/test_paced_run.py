"""A run under ``--pace auto`` against the executor's fake cluster: per-broker rates, the hold
under min ISR, the journal's record, and every throttle restored at the end."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from datetime import time
from pathlib import Path
from time import perf_counter

import pytest
from support.exec_fake import ExecFakeAdmin

from ferry.errors import KafkaError
from ferry.execute.batching import Limits
from ferry.execute.events import BatchSubmitted, Event, HeldUnderMinIsr, PaceDecided, TaskFinished
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.pace.census import Census
from ferry.execute.pace.controller import Role, State
from ferry.execute.pace.pacer import Pacer
from ferry.execute.pace.settings import PaceSettings
from ferry.execute.records import ConfigKey, ResourceType
from ferry.execute.states import RequestState
from ferry.execute.throttles import FOLLOWER_RATE
from ferry.kafka.admin import LogOffsets, PartitionHealth, ReplicaSizes
from ferry.model import Move, Plan, TopicPartition

MOVING = {TopicPartition("t", p): (1, 2) for p in range(3)}
BYSTANDER = TopicPartition("other", 0)
OPTIONS = ExecuteOptions(
    throttle=10_000_000, limits=Limits(max_moves_per_broker=1), pace=PaceSettings(period_s=3)
)


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    with Journal.open(tmp_path / "j.sqlite") as j:
        yield j  # type: ignore[misc]


def _run(
    admin: ExecFakeAdmin,
    journal: Journal,
    plan: Plan,
    options: ExecuteOptions = OPTIONS,
    on_sleep: Callable[[int], None] = lambda n: None,
) -> tuple[int, list[Event]]:
    events: list[Event] = []
    sleeps = [0]

    def sleep(seconds: float) -> None:
        sleeps[0] += 1
        on_sleep(sleeps[0])

    ticks = iter(range(10**6))
    executor = Executor(admin, journal, listener=events.append, clock=lambda: float(next(ticks)), sleep=sleep)
    rid = executor.prepare(plan, bootstrap="b", options=options)
    executor.run(rid)
    return rid, events


def _rate(broker: int, key: str) -> ConfigKey:
    return ConfigKey(ResourceType.BROKER, str(broker), key)


def test_a_broker_whose_follower_left_an_isr_backs_off_alone(journal: Journal) -> None:
    admin = ExecFakeAdmin({**MOVING, BYSTANDER: (3, 5)}, polls_to_finish=8)
    admin.isr[BYSTANDER] = (5,)  # broker 3's replica of a partition not being moved lags
    rid, events = _run(admin, journal, Plan.of(Move(tp, (1, 2), (3, 4), 100) for tp in MOVING))

    def written(key: ConfigKey) -> list[str | None]:
        return [w[key] for w in admin.config_writes if key in w]

    # The fake's moves copy next to nothing: each period cuts 0.7 x half the rate, down to the
    # 1 MB/s minimum; restored (deleted) at the end.
    backing = written(_rate(3, FOLLOWER_RATE))
    assert backing[:3] == ["10000000", "3500000", "1225000"] and backing[-1] is None
    rates = [int(v) for v in backing[:-1] if v is not None]
    assert rates == sorted(rates, reverse=True) and min(rates) == 1_000_000
    assert written(_rate(4, FOLLOWER_RATE)) == ["10000000", None]
    paced = journal.pace_records(rid)
    backed = [r for r in paced if (r.broker, r.role) == (3, Role.FOLLOWER) and r.state == State.BACK_OFF]
    assert backed and "1 partition lost an ISR member" in backed[0].reason
    assert not any(r.broker == 4 and r.state == State.BACK_OFF for r in paced)
    assert any(isinstance(e, PaceDecided) and (3, Role.FOLLOWER) in e.changed for e in events)
    assert admin.configs == {}  # every throttle restored
    assert journal.request(rid).state is RequestState.DONE


class _BackWhileSized(ExecFakeAdmin):
    """A stopped broker 3: the ISR it left is whole again once the second DescribeLogDirs (the
    second reading's) answers, since a stopped broker holds that call until it is back."""

    sized = 0

    def describe_replica_sizes(self, topics: Collection[str] | None = None) -> ReplicaSizes:
        self.sized += 1
        if self.sized == 2:
            self.isr.pop(BYSTANDER)
        return super().describe_replica_sizes(topics)


def test_a_broker_back_before_its_sizes_answer_still_backs_off() -> None:
    """The ISRs are read before the sizes: read after, this stop would go unseen."""
    moves = [Move(tp, (1, 2), (3, 4), 100) for tp in MOVING]
    pacer = Pacer(PaceSettings(period_s=1), 10_000_000, 5, lambda: time(12, 0))
    admin = _BackWhileSized({**MOVING, BYSTANDER: (3, 5)})
    admin.isr[BYSTANDER] = (5,)
    assert pacer.step(admin, moves, 0.0) is not None  # the first reading: nothing to compare yet
    decided = pacer.step(admin, moves, 1.0)
    assert decided is not None and admin.sized == 2
    assert decided.decisions[(3, Role.FOLLOWER)].state is State.BACK_OFF


def test_a_moving_partition_under_min_isr_holds_new_moves_until_it_recovers(journal: Journal) -> None:
    t0, t1, t2 = (TopicPartition("t", p) for p in range(3))
    admin = ExecFakeAdmin(MOVING, polls_to_finish=6)
    admin.min_insync["t"] = 2
    admin.isr[t0] = (1,)  # the plan's own move is under min ISR 2, and stays in flight
    admin.stuck.add(t0)

    def recover(n: int) -> None:
        if n == 20:
            admin.isr.pop(t0)
            admin.stuck.discard(t0)

    # Two moves fit at once: t2 waits for t1's slot on brokers 1 and 2, then for t0 to recover.
    plan = Plan.of(Move(tp, (1, 2), target, 100) for tp, target in ((t0, (3, 4)), (t1, (5, 6)), (t2, (7, 8))))
    options = ExecuteOptions(
        throttle=1000, limits=Limits(max_moves_per_broker=2), pace=PaceSettings(period_s=1)
    )
    rid, events = _run(admin, journal, plan, options, recover)
    held = [i for i, e in enumerate(events) if isinstance(e, HeldUnderMinIsr)]
    assert [events[i] for i in held] == [HeldUnderMinIsr(rid, (t0,)), HeldUnderMinIsr(rid, ())]
    sent = {tp: i for i, e in enumerate(events) if isinstance(e, BatchSubmitted) for tp in e.partitions}
    assert sent[t0] < held[0] and sent[t1] < held[0]
    assert sent[t2] > held[1]  # t1 ended long before: only the hold kept t2 back
    done = [i for i, e in enumerate(events) if isinstance(e, TaskFinished) and e.tp == t1]
    assert done[0] < held[1]
    assert journal.request(rid).state is RequestState.DONE
    assert admin.configs == {}


class _NoOffsetsYet(ExecFakeAdmin):
    """A leader elected a moment ago: ListOffsets answers OffsetNotAvailable (retriable)."""

    def __init__(self, replicas: dict[TopicPartition, tuple[int, ...]], *, transient: bool) -> None:
        super().__init__(replicas)
        self.transient = transient

    def log_offsets(
        self, partitions: Collection[TopicPartition], *, within_s: float | None = None
    ) -> Mapping[TopicPartition, LogOffsets]:
        raise KafkaError("listing offsets failed: OffsetNotAvailableError", transient=self.transient)


def test_a_period_without_offsets_goes_on_and_a_refusal_does_not() -> None:
    moves = [Move(TopicPartition("t", 0), (1, 2), (3, 4), 100)]
    pacer = Pacer(PaceSettings(period_s=1), 1000, 5, lambda: time(12, 0))
    admin = _NoOffsetsYet({TopicPartition("t", 0): (1, 2)}, transient=True)
    assert pacer.step(admin, moves, 0.0) is not None
    decided = pacer.step(admin, moves, 2.0)
    assert decided is not None and decided.signals.produce == {}
    refusing = _NoOffsetsYet({TopicPartition("t", 0): (1, 2)}, transient=False)
    with pytest.raises(KafkaError, match="OffsetNotAvailable"):
        pacer.step(refusing, moves, 4.0)


def test_the_first_reading_waits_for_the_first_moves() -> None:
    moves = [Move(TopicPartition("t", 0), (1, 2), (3, 4), 100)]
    pacer = Pacer(PaceSettings(period_s=1), 1000, 5, lambda: time(12, 0))
    admin = ExecFakeAdmin({TopicPartition("t", 0): (1, 2)})
    assert pacer.step(admin, [], 0.0) is None  # nothing moving yet: no reading to compare against
    started = pacer.step(admin, moves, 0.5)
    assert started is not None and set(started.decisions) == {(b, r) for b in (1, 2, 3, 4) for r in Role}
    assert pacer.step(admin, moves, 1.0) is None  # a period after the first reading, not before
    assert pacer.step(admin, moves, 1.5) is not None


def test_slow_start_reads_every_two_and_a_half_seconds_until_a_limit_is_found() -> None:
    moves = [Move(TopicPartition("t", 0), (1, 2), (3, 4), 100)]
    pacer = Pacer(PaceSettings(period_s=15), 1000, 5, lambda: time(12, 0))
    admin = ExecFakeAdmin({TopicPartition("t", 0): (1, 2)})
    assert pacer.step(admin, moves, 0.0) is not None
    assert pacer.period() == 2.5
    assert pacer.step(admin, moves, 2.4) is None
    assert pacer.step(admin, moves, 2.5) is not None
    held = {key: replace(pace, state=State.HOLD) for key, pace in pacer.paces.items()}
    pacer.paces = dict(held)
    assert pacer.period() == 15.0  # every rate found its limit
    pacer.paces[(3, Role.FOLLOWER)] = replace(held[(3, Role.FOLLOWER)], state=State.RAISE)
    assert pacer.period() == 2.5  # one still doubling
    pacer.paces[(4, Role.FOLLOWER)] = replace(held[(4, Role.FOLLOWER)], backed_off=True)
    assert pacer.period() == 15.0  # after a back-off, ISR shrinks get the time to show
    assert Pacer(PaceSettings(period_s=2), 1000, 5, lambda: time(12, 0)).period() == 2.0


def test_a_stopped_broker_is_written_no_rate_until_it_answers(journal: Journal) -> None:
    """Broker 3 stops: its log dirs go unanswered and the ISR of a partition not being moved loses
    it. Its follower rate backs off, but is written only once it answers again: a write to a
    stopped broker would hold the run until it is back."""
    admin = ExecFakeAdmin({**MOVING, BYSTANDER: (3, 5)}, polls_to_finish=30)
    toggled: dict[str, int] = {}

    def stop_then_resume(n: int) -> None:
        if n == 4:
            admin.silent, admin.isr[BYSTANDER] = frozenset({3}), (5,)
            toggled["stopped"] = len(admin.config_writes)
        if n == 16:
            admin.silent = frozenset()
            admin.isr.pop(BYSTANDER)
            toggled["back"] = len(admin.config_writes)

    rid, _ = _run(
        admin, journal, Plan.of(Move(tp, (1, 2), (3, 4), 100) for tp in MOVING), on_sleep=stop_then_resume
    )
    key = _rate(3, FOLLOWER_RATE)
    while_stopped = admin.config_writes[toggled["stopped"] : toggled["back"]]
    assert not any(w.keys() & {key, _rate(3, "leader.replication.throttled.rate")} for w in while_stopped)
    paced = [r for r in journal.pace_records(rid) if (r.broker, r.role) == (3, Role.FOLLOWER)]
    assert any(r.state == State.BACK_OFF for r in paced)
    after = [w[key] for w in admin.config_writes[toggled["back"] :] if key in w]
    assert after and after[0] is not None and int(after[0]) < 10_000_000  # the back-off, late
    assert admin.configs == {}


def test_an_isr_shrink_that_heals_within_a_period_is_still_seen() -> None:
    """Between readings the ISRs are read every 5 s and the worst kept: a broker fenced for a few
    seconds and back before the next reading still backs off."""
    moves = [Move(tp, (1, 2), (3, 4), 100) for tp in MOVING]
    pacer = Pacer(PaceSettings(period_s=15), 10_000_000, 5, lambda: time(12, 0))
    admin = ExecFakeAdmin({**MOVING, BYSTANDER: (3, 5)})
    assert pacer.step(admin, moves, 0.0) is not None
    pacer.paces = {k: replace(p, state=State.HOLD, backed_off=True) for k, p in pacer.paces.items()}
    admin.isr[BYSTANDER] = (5,)
    assert pacer.step(admin, moves, 4.0) is None  # too soon to watch
    assert pacer.step(admin, moves, 6.0) is None  # watched: the shrink is kept
    admin.isr.pop(BYSTANDER)
    decided = pacer.step(admin, moves, 15.0)
    assert decided is not None
    assert decided.decisions[(3, Role.FOLLOWER)].state is State.BACK_OFF
    assert decided.decisions[(4, Role.FOLLOWER)].state is not State.BACK_OFF
    again = pacer.step(admin, moves, 30.0)  # the next period starts from what it reads itself
    assert again is not None and again.decisions[(3, Role.FOLLOWER)].state is not State.BACK_OFF


def test_a_silent_broker_keeps_its_last_bytes_and_holds() -> None:
    moves = [Move(tp, (1, 2), (3, 4), 100) for tp in MOVING]
    pacer = Pacer(PaceSettings(period_s=1), 10_000_000, 5, lambda: time(12, 0))
    admin = ExecFakeAdmin(MOVING)
    admin.alter_reassignments({tp: [3, 4] for tp in MOVING})
    assert pacer.step(admin, moves, 0.0) is not None
    admin.silent = frozenset({3})
    decided = pacer.step(admin, moves, 2.5)
    assert decided is not None and pacer.silent == {3}
    assert decided.decisions[(3, Role.FOLLOWER)].state is State.HOLD
    assert decided.decisions[(3, Role.FOLLOWER)].reason == "the broker did not answer in time"
    assert decided.signals.readings[(3, Role.FOLLOWER)].achieved == 0.0


class _SlowIsrs(ExecFakeAdmin):
    """Every read of every ISR (a census) takes ``cost`` seconds of ``clock``: a cluster of many
    partitions; the reads of named topics are quick."""

    def __init__(self, partitions: Mapping[TopicPartition, tuple[int, ...]], cost: float) -> None:
        super().__init__(partitions)
        self.cost, self.clock, self.censuses, self.named = cost, 0.0, 0, 0

    def describe_health(self, topics: Collection[str] | None = None) -> tuple[PartitionHealth, ...]:
        if topics is None:
            self.clock += self.cost
            self.censuses += 1
        else:
            self.named += 1
        return super().describe_health(topics)


def test_censuses_that_take_long_are_spaced_to_a_fifth_of_the_run_and_readings_are_not() -> None:
    """Every census takes 4 s: the next begins no sooner than 20 s after the last, between
    readings too, while slow start still reads every 2.5 s (the moving partitions' topics alone);
    a cluster whose census is quick has one at every reading and none named apart."""
    moves = [Move(tp, (1, 2), (3, 4), 100) for tp in MOVING]
    admin = _SlowIsrs(MOVING, cost=4.0)
    pacer = Pacer(PaceSettings(period_s=15), 1000, 5, lambda: time(12, 0), census=Census(lambda: admin.clock))
    assert pacer.step(admin, moves, 0.0) is not None and admin.censuses == 1
    assert pacer.period() == 2.5
    assert pacer.step(admin, moves, 2.5) is not None
    assert admin.censuses == 1 and admin.named == 1  # the moving partitions' topics, read apart
    pacer.paces = {k: replace(p, state=State.HOLD) for k, p in pacer.paces.items()}
    assert pacer.step(admin, moves, 10.0) is None and admin.censuses == 1  # none between yet
    assert pacer.step(admin, moves, 17.5) is not None and (admin.censuses, admin.named) == (1, 2)
    assert pacer.step(admin, moves, 20.0) is None and admin.censuses == 2  # one between, 20 s on
    fast = _SlowIsrs(MOVING, cost=0.1)
    quick = Pacer(PaceSettings(period_s=15), 1000, 5, lambda: time(12, 0), census=Census(lambda: fast.clock))
    assert quick.step(fast, moves, 0.0) is not None and quick.period() == 2.5
    assert quick.step(fast, moves, 2.5) is not None and (fast.censuses, fast.named) == (2, 0)


class _StuckCensus(ExecFakeAdmin):
    """A census that answers only once ``release`` is set (a million partitions to decode)."""

    def __init__(self, partitions: Mapping[TopicPartition, tuple[int, ...]]) -> None:
        super().__init__(partitions)
        self.release = threading.Event()

    def describe_health(self, topics: Collection[str] | None = None) -> tuple[PartitionHealth, ...]:
        found = super().describe_health(topics)  # the state when asked
        if topics is None:
            self.release.wait(30)
        return found


def test_a_census_that_takes_long_holds_no_reading_and_is_taken_once_done() -> None:
    """A reading waits half a second for the census it began, then goes on with the moving
    partitions' own ISRs; the shrink the census saw is counted at the first reading after it ends."""
    moves = [Move(tp, (1, 2), (3, 4), 100) for tp in MOVING]
    admin = _StuckCensus({**MOVING, BYSTANDER: (3, 5)})
    admin.isr[BYSTANDER] = (5,)
    admin.min_insync["t"] = 2
    admin.isr[TopicPartition("t", 0)] = (1,)  # the plan's own move under min ISR
    pacer = Pacer(PaceSettings(period_s=1), 10_000_000, 5, lambda: time(12, 0))
    began = perf_counter()
    assert pacer.step(admin, moves, 0.0) is not None
    assert pacer.step(admin, moves, 1.0) is not None  # the census still in flight
    assert perf_counter() - began < 5  # two half-second waits, not the census's 30 s
    assert pacer.held == (TopicPartition("t", 0),)  # read apart, with its topic's min ISR
    admin.isr.pop(BYSTANDER)
    admin.release.set()
    time_out = perf_counter() + 10
    while pacer.census.in_flight() and perf_counter() < time_out:
        pacer.step(admin, moves, 1.5)  # not due: takes the census once it is done
    decided = pacer.step(admin, moves, 2.0)
    assert decided is not None
    assert decided.decisions[(3, Role.FOLLOWER)].state is State.BACK_OFF
