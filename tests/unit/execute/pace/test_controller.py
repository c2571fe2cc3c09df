"""The pace controller's table, rule by rule, and against a simulated broker."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from ferry.execute.pace.controller import (
    Bounds,
    Health,
    Pace,
    Reading,
    State,
    decide,
    follow,
    start,
)

MB = 1_000_000
BOUNDS = Bounds(ceiling=200 * MB, step=10 * MB, max_concurrency=5)


def _reading(
    achieved: float,
    produce: float = 0.0,
    moving: int = 1,
    health: Health | None = None,
    *,
    partner_binds: bool = False,
) -> Reading:
    return Reading(achieved, produce, moving, health or Health(), partner_binds)


def _at(rate: int, concurrency: int = 5, *, backed_off: bool = True) -> Pace:
    return Pace(rate, concurrency, State.HOLD, "", backed_off)


def test_start_is_the_starting_rate_under_the_ceiling() -> None:
    assert start(10 * MB, BOUNDS) == Pace(10 * MB, 5, State.START, "starting rate 10000000 B/s")
    assert start(500 * MB, BOUNDS).rate == 200 * MB
    assert start(500 * MB, Bounds(None, MB, 3)).rate == 500 * MB


@pytest.mark.parametrize(
    "health",
    [Health(isr_loss=1), Health(at_min_isr=2), Health(under_min_isr=1), Health(elr=1)],
)
def test_trouble_cuts_the_rate_by_three_tenths_and_halves_concurrency(health: Health) -> None:
    decided = decide(_at(80 * MB, 4), _reading(80 * MB, health=health), BOUNDS)
    assert (decided.rate, decided.concurrency, decided.state) == (56 * MB, 2, State.BACK_OFF)
    assert health.describe() in decided.reason


def test_trouble_cuts_from_what_flows_where_the_throttle_does_not_bind() -> None:
    """Held at 300 MB/s while the disks let 200 MB/s through: 0.7 x 300 would slow nothing."""
    decided = decide(_at(300 * MB), _reading(200 * MB, health=Health(isr_loss=1)), BOUNDS)
    assert decided.rate == 154 * MB  # 0.7 x the 220 MB/s throttle that 200 MB/s would fill
    assert "200000000 B/s achieved: cut from 220000000 B/s" in decided.reason
    binding = decide(_at(100 * MB), _reading(95 * MB, health=Health(isr_loss=1)), BOUNDS)
    assert binding.rate == 70 * MB and "cut from" not in binding.reason


def test_a_stalled_period_cuts_from_half_the_rate_not_from_nothing() -> None:
    """A paused broker copied nothing this period: the cut is 0.7 x half the rate, not the floor
    (from which the additive increase would take minutes to climb back)."""
    decided = decide(_at(600 * MB), _reading(0, health=Health(isr_loss=1)), BOUNDS)
    assert decided.rate == 210 * MB and "0 B/s achieved: cut from 300000000 B/s" in decided.reason


def test_trouble_never_goes_under_the_floor_nor_under_one_move() -> None:
    decided = decide(_at(20 * MB, 1), _reading(20 * MB, produce=12 * MB, health=Health(isr_loss=3)), BOUNDS)
    assert decided.rate == 15_840_000  # 1.2 x 12 MB/s over 10/11, above 0.7 x 20
    assert decided.concurrency == 1
    assert "held at the floor" in decided.reason
    lowest = decide(_at(1_200_000), _reading(MB, health=Health(elr=1)), BOUNDS)
    assert lowest.rate == MB  # not 0.84 MB/s: 1 MB/s is the least a back-off leaves


def test_a_rate_under_the_floor_rises_to_it_even_over_the_ceiling() -> None:
    decided = decide(_at(MB), _reading(0.5 * MB, produce=5 * MB), BOUNDS)  # not binding
    # 1.2 x the produce rate, over the 10/11 of its throttle a broker sustains.
    assert (decided.rate, decided.state) == (6_600_000, State.FLOOR)
    over = decide(_at(MB), _reading(MB, produce=5 * MB), Bounds(2 * MB, MB, 5))
    assert over.rate == 6_600_000 and "over the ceiling" in over.reason


def test_the_floor_is_written_even_when_it_is_a_small_step() -> None:
    decided = decide(_at(100 * MB), _reading(10 * MB, produce=80 * MB), BOUNDS)
    assert decided.rate == 105_600_000  # 5.6 % up, but the floor


def test_a_binding_rate_on_a_creeping_floor_is_raised_not_held_there() -> None:
    """On last period's floor, the produce rate a little up: the floor alone would move the rate
    by half a percent, period after period, while the throttle binds."""
    on_floor = Pace(6_600_000, 5, State.FLOOR, "", backed_off=False)
    doubled = decide(on_floor, _reading(6 * MB, produce=5_025_000), BOUNDS)
    assert (doubled.rate, doubled.state) == (13_200_000, State.RAISE)
    stepped = decide(replace(on_floor, backed_off=True), _reading(6 * MB, produce=5_025_000), BOUNDS)
    assert (stepped.rate, stepped.state) == (16_600_000, State.RAISE)
    idle = decide(on_floor, _reading(2 * MB, produce=5_025_000), BOUNDS)  # not binding: the floor
    assert idle.state is State.FLOOR and idle.rate == pytest.approx(6_633_000, abs=1)
    far = decide(_at(MB), _reading(MB, produce=50 * MB), BOUNDS)  # a raise short of the floor
    assert (far.rate, far.state) == (66 * MB, State.FLOOR)
    capped = decide(on_floor, _reading(6 * MB, produce=5_025_000), Bounds(7 * MB, MB, 5))
    assert (capped.rate, capped.state) == (7 * MB, State.RAISE)  # raised onto the ceiling, over the floor


def test_a_rate_over_the_ceiling_comes_down_to_it() -> None:
    decided = decide(_at(300 * MB), _reading(300 * MB), BOUNDS)
    assert (decided.rate, decided.state) == (200 * MB, State.CEILING)


def test_binding_and_healthy_raises_by_a_step_and_one_move_up_to_the_limits() -> None:
    decided = decide(_at(50 * MB, 2), _reading(0.9 * 50 * MB), BOUNDS)
    assert (decided.rate, decided.concurrency, decided.state) == (60 * MB, 3, State.RAISE)
    fast = decide(_at(150 * MB, 5), _reading(150 * MB), BOUNDS)
    assert fast.rate == 165 * MB  # 10 % once the step is less
    near = decide(_at(195 * MB, 5), _reading(195 * MB), BOUNDS)
    assert (near.rate, near.concurrency) == (200 * MB, 5)  # a small step, but onto the ceiling
    at = decide(_at(200 * MB, 5), _reading(200 * MB), BOUNDS)
    assert at.rate == 200 * MB


def test_until_the_first_back_off_a_binding_rate_doubles() -> None:
    first = decide(_at(10 * MB, 1, backed_off=False), _reading(9 * MB), BOUNDS)
    assert (first.rate, first.concurrency, first.backed_off) == (20 * MB, 2, False)
    cut = decide(first, _reading(20 * MB, health=Health(isr_loss=1)), BOUNDS)
    assert (cut.rate, cut.backed_off) == (14 * MB, True)
    after = decide(cut, _reading(13 * MB), BOUNDS)
    assert after.rate == 24 * MB  # additive from now on: + the 10 MB/s step
    assert decide(_at(150 * MB, backed_off=False), _reading(130 * MB), BOUNDS).rate == 200 * MB


def test_a_rate_cut_by_a_stall_climbs_back_to_where_it_stood_in_three_healthy_periods() -> None:
    """A broker stopped for a period: cut from half the rate, twice (its ISRs still short at the
    next reading). By the step alone the climb back from 0.245 x would take 15 periods."""
    trouble = Health(isr_loss=3, at_min_isr=3)
    wide = Bounds(ceiling=None, step=10 * MB, max_concurrency=5)
    first = decide(_at(160 * MB, 4), _reading(0, health=trouble), wide)
    second = decide(first, _reading(51 * MB, health=trouble), wide)
    assert (first.rate, second.rate) == (56 * MB, 39_200_000)
    rates, pace = [], second
    for _ in range(3):
        pace = decide(pace, _reading(0.9 * pace.rate), wide)
        rates.append(pace.rate)
    # A third of the 120.8 MB/s cut a period, the first step held to doubling: 0.99 x in three.
    assert rates == [78_400_000, 118_666_667, 158_933_334]
    assert decide(pace, _reading(0.9 * pace.rate), wide).rate == 174_826_668  # then the 10 % step


def test_a_back_off_after_a_climb_returns_to_the_new_limit_and_never_more_than_doubles() -> None:
    trouble = Health(isr_loss=1)
    cut = decide(_at(100 * MB), _reading(91 * MB, health=trouble), BOUNDS)
    assert (cut.rate, cut.recover_to) == (70 * MB, 100 * MB)
    raised = decide(cut, _reading(63 * MB), BOUNDS)
    again = decide(raised, _reading(72 * MB, health=trouble), BOUNDS)
    assert again.recover_to == raised.rate == 80 * MB  # the limit found this time, not the 100
    far = decide(_at(400 * MB, backed_off=False), _reading(20 * MB, health=trouble), Bounds(None, MB, 5))
    farther = decide(far, _reading(0, health=trouble), Bounds(None, MB, 5))
    assert (far.rate, farther.rate) == (140 * MB, 49 * MB)  # 0.7 x half the rate: nothing flowed
    assert decide(farther, _reading(0.9 * farther.rate), Bounds(None, MB, 5)).rate == 98 * MB


def test_slow_start_doubles_what_flowed_where_a_burst_took_more_than_the_throttle() -> None:
    """Kafka lets a raised throttle burst until its 11-second window catches up: the path took
    33 MB/s under a 20 MB/s throttle, so the next rate doubles the 36.3 MB/s that carries it."""
    decided = decide(_at(20 * MB, backed_off=False), _reading(33 * MB), BOUNDS)
    assert (decided.rate, decided.state) == (72_600_000, State.RAISE)
    additive = decide(_at(20 * MB), _reading(33 * MB), BOUNDS)
    assert additive.rate == 30 * MB  # once the limit is known: + the step, whatever flowed


def test_a_broker_whose_partner_binds_holds_and_follows_by_doubling() -> None:
    """A leader feeding two new followers binds at 20 MB/s; each follower gets 10 of its 20 MB/s
    and does not bind: it holds, and where the leader doubles it doubles with it (the round
    decides which, :func:`ferry.execute.pace.pacer.decide_round`)."""
    last = _at(20 * MB, 2, backed_off=False)
    held = decide(last, _reading(10 * MB, partner_binds=True), BOUNDS)
    assert (held.rate, held.concurrency, held.state) == (20 * MB, 2, State.HOLD)
    followed = follow(last, _reading(10 * MB, partner_binds=True), BOUNDS)
    assert (followed.rate, followed.concurrency, followed.state) == (40 * MB, 3, State.FOLLOW)
    assert follow(last, _reading(10 * MB), Bounds(30 * MB, MB, 5)).rate == 30 * MB  # the ceiling


def test_not_binding_holds_and_says_whether_a_partner_binds() -> None:
    partner = decide(_at(50 * MB, 3), _reading(20 * MB, partner_binds=True), BOUNDS)
    assert (partner.rate, partner.concurrency, partner.state) == (50 * MB, 3, State.HOLD)
    assert "a partner's throttle binds" in partner.reason
    other = decide(_at(50 * MB, 3), _reading(20 * MB), BOUNDS)
    assert (other.rate, other.state) == (50 * MB, State.HOLD)
    assert "something else limits the copy" in other.reason


def test_nothing_copying_holds_whatever_the_produce_rate() -> None:
    decided = decide(_at(50 * MB), _reading(0, produce=100 * MB, moving=0), BOUNDS)
    assert (decided.rate, decided.state) == (50 * MB, State.IDLE)


def test_changes_under_ten_percent_are_not_written() -> None:
    floor_moved = decide(_at(100 * MB), _reading(10 * MB, produce=70 * MB, partner_binds=True), BOUNDS)
    assert floor_moved.rate == 100 * MB and floor_moved.state is State.HOLD
    trouble = decide(_at(100 * MB), _reading(100 * MB, produce=70 * MB, health=Health(elr=1)), BOUNDS)
    assert trouble.rate == 100 * MB  # the floor (92.4 MB/s) is 7.6 % under it


# -- a simulated broker -----------------------------------------------------------------------


@dataclass
class Broker:
    """One receiving broker: a NIC of ``capacity`` bytes/s, ``base`` bytes/s of replication of
    partitions not being moved, and one moving partition of ``size`` bytes produced into at
    ``produce`` bytes/s. The copy runs at the throttle, what the NIC has left, or less; the
    other followers fall out of the ISR while the NIC is full."""

    capacity: float
    base: float
    produce: float
    size: float
    copied: float = 0.0

    def second(self, throttle: float) -> tuple[float, bool]:
        """Copy for one second; the rate copied and whether the NIC was saturated."""
        room = self.capacity - self.base - self.produce
        rate = max(0.0, min(throttle * 10 / 11, room))
        self.size += self.produce
        self.copied = min(self.size, self.copied + rate)
        return rate, throttle * 10 / 11 > room

    @property
    def caught_up(self) -> bool:
        return self.copied >= self.size


def run(broker: Broker, throttle: int | None, limit_s: int = 14_400, period_s: int = 20) -> tuple[int, int]:
    """Seconds until the move is in sync (``limit_s`` if never) and seconds with the NIC full,
    under a static ``throttle``, or the controller (starting at 1 MB/s) when it is None."""
    pace = start(MB, Bounds(None, 10 * MB, 5)) if throttle is None else None
    copied, saturated, lost = 0.0, 0, False
    for second in range(1, limit_s + 1):
        rate, full = broker.second(pace.rate if pace else throttle or 0)
        copied += rate
        saturated += full
        lost = lost or full
        if broker.caught_up:
            return second, saturated
        if pace is not None and second % period_s == 0:
            health = Health(isr_loss=1) if lost else Health()
            reading = Reading(copied / period_s, broker.produce, 1, health)
            pace = decide(pace, reading, Bounds(None, 10 * MB, 5))
            copied, lost = 0.0, False
    return limit_s, saturated


def test_a_move_started_far_under_its_produce_rate_completes_under_auto_and_never_statically() -> None:
    def broker() -> Broker:
        return Broker(capacity=125 * MB, base=20 * MB, produce=8 * MB, size=50_000 * MB)

    static_s, _ = run(broker(), MB)
    auto_s, _ = run(broker(), None)
    assert static_s == 14_400  # 1 MB/s never catches up with 8 MB/s
    ideal = 50_000 * MB / (125 * MB - 20 * MB - 8 * MB)
    assert auto_s < 1.5 * ideal


def test_auto_keeps_the_nic_from_staying_full_and_ends_near_the_best_static_rate() -> None:
    def broker() -> Broker:
        return Broker(capacity=125 * MB, base=40 * MB, produce=5 * MB, size=60_000 * MB)

    auto_s, auto_full = run(broker(), None)
    too_high_s, too_high_full = run(broker(), 200 * MB)
    best = min(run(broker(), rate)[0] for rate in range(5 * MB, 200 * MB, 5 * MB))
    assert too_high_full == too_high_s  # full the whole time
    assert auto_full < 0.25 * auto_s
    # Past the slow start the rate saw-tooths between 0.7 and 1 of what the NIC leaves.
    assert auto_s <= 1.3 * best


def test_a_broker_that_did_not_answer_holds_unless_in_trouble() -> None:
    silent = replace(_reading(0.0, produce=50 * MB), silent=True)  # under the floor, copying nothing
    held = decide(_at(20 * MB), silent, BOUNDS)
    assert (held.rate, held.state, held.reason) == (20 * MB, State.HOLD, "the broker did not answer in time")
    troubled = replace(silent, health=Health(isr_loss=1))
    assert decide(_at(20 * MB), troubled, BOUNDS).state is State.BACK_OFF  # written once it answers


def test_trouble_on_a_broker_halves_the_moves_of_a_role_copying_nothing_and_keeps_its_rate() -> None:
    """An idle role's throttle slows nothing now; cut, it would hold back a move coming to it later."""
    decided = decide(
        _at(50 * MB, 4, backed_off=False), _reading(0, moving=0, health=Health(isr_loss=2)), BOUNDS
    )
    assert (decided.rate, decided.concurrency, decided.state) == (50 * MB, 2, State.BACK_OFF)
    assert decided.backed_off  # increases are additive from here
    assert "2 partitions lost an ISR member" in decided.reason and "rate held" in decided.reason
    copying = decide(_at(50 * MB, 4), _reading(0, moving=1, health=Health(isr_loss=2)), BOUNDS)
    assert copying.rate < 50 * MB  # a role that copies, even a stalled one, is cut
