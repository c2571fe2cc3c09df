"""The pace controller: one broker's throttle in one role, and its move concurrency (pure).

Every control period (15-30 s: Kafka measures a throttle over 11 s, and an ISR shrink shows
within ``replica.lag.time.max.ms``, 30 s; 2.5 s while the rates still double, see
:meth:`ferry.execute.pace.pacer.Pacer.period`) each broker gets a :class:`Reading` per role -- leader
(the data its moving partitions send) and follower (the data its new replicas fetch) -- and
:func:`decide` turns the last :class:`Pace` into the next by the first rule of this table that
applies:

==========  ===============================================  ======================================
state       when                                             then
==========  ===============================================  ======================================
back-off    ISR loss of a partition not being moved, a       0.7 x the rate, or x what flows
                                                             where the throttle does not bind
            partition at or under min ISR, or ELR not empty  (at least x half the rate; never
            on the broker                                    under the floor, nor under 1 MB/s);
                                                             concurrency halved (at least 1); a
                                                             role copying nothing keeps its rate
idle        nothing moving in this role                      hold
hold        the broker did not answer the reading of its     hold (a rate set on it would not
            log dirs in time (stopped, stalled)              reach it)
floor       rate under the floor: 1.2 x the produce rate     rate = floor (even over the ceiling:
            into the role's moving partitions, over the      under it a move never catches up)
            10/11 of its throttle a broker sustains; unless
            the throttle binds and its raise clears the
            floor (then: raise)
ceiling     rate over the ceiling (``--max-throttle``, the   rate = ceiling
            schedule's window)
raise       healthy and the throttle binds: achieved >=      slow start (until the first
            85 % of the 10/11 of the rate a broker sustains  back-off): x 2 the larger of the
                                                             rate and the throttle that carries
                                                             what flowed; then + the larger of
                                                             the step and 10 % (up to the
                                                             ceiling); concurrency + 1 (up to
                                                             the limit)
follow      slow start, healthy, not binding, but the        x 2 with it
            throttle of a partner binds and doubles (the
            leader feeding this broker's new replicas, or a
            broker this leader feeds)
hold        healthy, not binding: a partner's throttle       hold
            binds, or something else limits the copy (the
            disks, the network)
==========  ===============================================  ======================================

A rate changes only by at least 10 % of its value (a smaller change is noise in the broker's own
11-second measurement and would only churn configs), except when it lands on the floor or the
ceiling; so the increase is the step (``--throttle``) while that is 10 % or more of the rate, and
10 % above that. A
partition the plan itself pushes under min ISR is not this table's business: submission pauses
for the whole request (:mod:`ferry.execute.pace.pacer`), and nothing is cancelled.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ferry.execute.progress import THROTTLE_SHARE

FLOOR_FACTOR = 1.2
"""The copy rate a floor buys over the produce rate: the margin a moving replica needs to catch
up at all. The throttle itself is set higher, to this over :data:`THROTTLE_SHARE`."""
BINDING = 0.85
"""Achieved over what the throttle sustains (:data:`THROTTLE_SHARE` of it) at or above which the
throttle is what limits the copy."""
MIN_CHANGE = 0.10
"""The smallest relative change of a rate that is written."""
MINIMUM = 1_000_000
"""Bytes/s no back-off goes under (unless the run started lower): a throttle near zero stalls
every move it touches, with nothing to read a recovery from."""
BACK_OFF = 0.7
"""The factor on the rate on trouble: the 0.7 of TCP CUBIC, which keeps the mean of the saw-tooth
between the back-off and the limit at 85 % of the limit, where halving keeps 75 %."""
RECOVERY_PERIODS = 3
"""Healthy binding periods in which a rate climbs back to where it stood before its back-offs, in
equal steps. That mean of 85 % holds only if the climb back is quick: by the step alone (10 % a
period), a rate cut twice from a stalled period, to 0.35 then 0.25 of itself, takes 15 periods
(minutes) to get back. TCP CUBIC likewise returns to the window of its last loss within a set time."""

CUT_FROM_AT_LEAST = 0.5
"""The least share of its rate a back-off cuts from, however little flowed: in a period in which a
broker was stalled (paused, a long GC) next to nothing flows, a cut from that would put the rate on
its floor, and the additive increase after a back-off would take minutes to climb back."""


class Role(enum.StrEnum):
    """Which of a broker's two throttles (Kafka's leader and follower replication rates)."""

    LEADER = "leader"
    FOLLOWER = "follower"


class State(enum.StrEnum):
    """The rule that made a decision (the table above)."""

    START = "start"
    BACK_OFF = "back-off"
    IDLE = "idle"
    FLOOR = "floor"
    CEILING = "ceiling"
    RAISE = "raise"
    FOLLOW = "follow"
    HOLD = "hold"


@dataclass(frozen=True, slots=True)
class Health:
    """What the partitions with a replica on one broker show, counted in partitions."""

    isr_loss: int = 0
    """Partitions not being moved whose ISR lacks this broker's replica, or that it leads."""
    at_min_isr: int = 0
    """Partitions not being moved with an ISR short of its replicas and down to min ISR."""
    under_min_isr: int = 0
    """Partitions not being moved with an ISR under min ISR."""
    elr: int = 0
    """Partitions with eligible leader replicas (the ISR went under min ISR meanwhile)."""

    @property
    def troubled(self) -> bool:
        return bool(self.isr_loss or self.at_min_isr or self.under_min_isr or self.elr)

    def describe(self) -> str:
        """``"2 partitions lost an ISR member, 1 at min ISR"``: the non-zero counts."""
        parts = [
            (self.isr_loss, "lost an ISR member"),
            (self.at_min_isr, "at min ISR"),
            (self.under_min_isr, "under min ISR"),
            (self.elr, "with eligible leader replicas"),
        ]
        said = [f"{n} partition{'s' if n != 1 else ''} {text}" for n, text in parts if n]
        return ", ".join(said) or "healthy"


@dataclass(frozen=True, slots=True)
class Reading:
    """One broker in one role over the last control period."""

    achieved: float
    """Bytes/s copied through it in this role (what its new replicas gained, or fed)."""
    produce: float
    """Bytes/s produced into the moving partitions it copies in this role (once per new replica)."""
    moving: int
    """Replicas copying through it in this role (new replicas not yet in the ISR)."""
    health: Health
    partner_binds: bool = False
    """The throttle at the other end of some copy binds: the leader feeding one of this broker's
    new replicas (follower), or a broker this leader feeds (leader). The copy is held there."""
    silent: bool = False
    """The broker did not answer this period's read of its log dirs in time (stopped, stalled):
    what it copied is unknown, and a rate set on it would not reach it."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """What bounds a decision: the ceiling at this time, the step and the concurrency limit."""

    ceiling: int | None
    """``--max-throttle`` or the schedule's window, whichever is lower (None: no ceiling)."""
    step: int
    """Bytes/s added per period while the throttle binds (the starting rate)."""
    max_concurrency: int
    """``--max-moves-per-broker``."""

    @property
    def lowest(self) -> int:
        """No back-off goes under this: :data:`MINIMUM`, or the starting rate if that is lower."""
        return min(MINIMUM, self.step)


@dataclass(frozen=True, slots=True)
class Pace:
    """A decision: the throttle of one broker in one role, its move concurrency, and why."""

    rate: int
    concurrency: int
    state: State
    reason: str
    backed_off: bool = False
    """Some period of the run backed off: the limit was found, increases are additive from then."""
    recover_to: int = 0
    """The rate before the back-offs since this rate last stood there (0: none pending)."""
    climb: int = 0
    """The step back towards :attr:`recover_to`: a :data:`RECOVERY_PERIODS`-th of the last cut."""


def broker_concurrency(paces: Mapping[tuple[int, Role], Pace]) -> dict[int, int]:
    """Moves each broker may take part in: the lower of its two roles' concurrency."""
    allowed: dict[int, int] = {}
    for (broker, _), pace in paces.items():
        allowed[broker] = min(allowed.get(broker, pace.concurrency), pace.concurrency)
    return allowed


def start(rate: int, bounds: Bounds) -> Pace:
    """The pace before the first reading: ``--throttle`` (under the ceiling), full concurrency."""
    capped = min(rate, bounds.ceiling) if bounds.ceiling is not None else rate
    return Pace(capped, bounds.max_concurrency, State.START, f"starting rate {capped} B/s")


def binds(rate: int, reading: Reading) -> bool:
    """The throttle limits the copy: achieved >= :data:`BINDING` of what ``rate`` sustains."""
    return reading.moving > 0 and reading.achieved >= BINDING * THROTTLE_SHARE * rate


def decide(last: Pace, reading: Reading, bounds: Bounds) -> Pace:
    """The next pace after ``last``, given this period's ``reading`` (the table above)."""
    floor = _floor(reading)
    if reading.health.troubled:
        return _back_off(last, reading, bounds, floor)
    if not reading.moving:
        return replace(last, state=State.IDLE, reason="nothing copying")
    if reading.silent:
        return replace(last, state=State.HOLD, reason="the broker did not answer in time")
    return _bounded(last, reading, bounds, floor) or _healthy(last, reading, bounds, floor)


def _floor(reading: Reading) -> int:
    """1.2 x the produce rate into the moving partitions, over the share of its throttle a broker
    sustains (none while nothing copies)."""
    return int(FLOOR_FACTOR * reading.produce / THROTTLE_SHARE) if reading.moving else 0


def _bounded(last: Pace, reading: Reading, bounds: Bounds, floor: int) -> Pace | None:
    """The floor or the ceiling, where the rate is outside them."""
    rate = last.rate
    # A binding throttle whose raise clears the floor is raised: setting it to the floor alone,
    # which creeps up with the produce rate, would hold it there period after period.
    if rate < floor and not (binds(rate, reading) and _raised(last, reading, bounds) >= floor):
        over = bounds.ceiling is not None and floor > bounds.ceiling
        why = f"produce rate {reading.produce:.0f} B/s into the moving partitions" + (
            f", over the ceiling {bounds.ceiling} B/s" if over else ""
        )
        return _changed(last, floor, last.concurrency, State.FLOOR, why, floor)
    if bounds.ceiling is not None and rate > bounds.ceiling:
        wanted = max(floor, bounds.ceiling)
        why = f"ceiling {bounds.ceiling} B/s"
        return _changed(last, wanted, last.concurrency, State.CEILING, why, floor, bounds.ceiling)
    return None


def _healthy(last: Pace, reading: Reading, bounds: Bounds, floor: int) -> Pace:
    """Healthy and between the floor and the ceiling: raise or hold."""
    achieved = f"achieved {reading.achieved:.0f} of {last.rate} B/s"
    if binds(last.rate, reading):
        return _raise(last, reading, bounds, floor, State.RAISE, f"healthy, {achieved}")
    why = "a partner's throttle binds" if reading.partner_binds else "something else limits the copy"
    return replace(last, state=State.HOLD, reason=f"{achieved}: {why}")


def follow(last: Pace, reading: Reading, bounds: Bounds) -> Pace:
    """Double with a partner that doubles (slow start): a follower fed by a leader whose throttle
    binds does not bind itself, and would otherwise double a period after the leader."""
    floor = _floor(reading)
    why = f"achieved {reading.achieved:.0f} of {last.rate} B/s: a partner's throttle binds, and doubles"
    return _raise(last, reading, bounds, floor, State.FOLLOW, why)


def _raise(last: Pace, reading: Reading, bounds: Bounds, floor: int, state: State, why: str) -> Pace:
    raised = _raised(last, reading, bounds)
    if bounds.ceiling is not None:
        raised = max(last.rate, floor, min(raised, bounds.ceiling))
    more = min(bounds.max_concurrency, last.concurrency + 1)
    if last.backed_off and last.rate < last.recover_to:
        why += f", back towards the {last.recover_to} B/s before the back-off"
    return _changed(last, raised, more, state, why, floor, bounds.ceiling)


def _raised(last: Pace, reading: Reading, bounds: Bounds) -> int:
    """The raise of a binding throttle: in slow start double the larger of the rate and the
    throttle that would carry what flowed (Kafka lets a raised throttle burst until its 11-second
    window catches up, and the path took that), then additive: the step, or the climb back to the
    rate before the last back-offs (never past it, never more than doubling)."""
    if not last.backed_off:
        return 2 * max(last.rate, int(reading.achieved / THROTTLE_SHARE))
    stepped = last.rate + max(bounds.step, math.ceil(MIN_CHANGE * last.rate))
    if last.rate >= last.recover_to:
        return stepped
    return max(stepped, min(last.recover_to, last.rate + min(last.climb, last.rate)))


def _back_off(last: Pace, reading: Reading, bounds: Bounds, floor: int) -> Pace:
    halved = max(1, last.concurrency // 2)
    if not reading.moving:
        # Its throttle slows nothing now; cut, it would hold back a move that comes to this role
        # later, which would climb back by the additive step alone. Fewer moves come all the same.
        why = f"{reading.health.describe()}; nothing copying in this role: rate held"
        return replace(last, concurrency=halved, state=State.BACK_OFF, reason=why, backed_off=True)
    rate = last.rate
    # From what flows (a throttle held far over the copy would otherwise take several periods
    # of cuts before one slowed anything), but from no less than half the rate.
    flows = max(min(rate, reading.achieved / THROTTLE_SHARE), CUT_FROM_AT_LEAST * rate)
    lowered = int(BACK_OFF * flows)
    wanted = max(floor, bounds.lowest, lowered)
    why = reading.health.describe()
    if lowered < BACK_OFF * rate:
        why += f", {reading.achieved:.0f} B/s achieved: cut from {int(flows)} B/s"
    held = " (held at the floor)" if wanted == floor and floor > lowered else ""
    cut = _changed(last, wanted, halved, State.BACK_OFF, f"{why}{held}", floor)
    # Back-offs period after period are one episode (the same fault, not yet over): the climb is
    # back to the rate before the first. A back-off after a raise found the limit again: back to it.
    recover_to = max(last.recover_to, rate) if last.state is State.BACK_OFF else rate
    climb = math.ceil(max(0, recover_to - cut.rate) / RECOVERY_PERIODS)
    return replace(cut, backed_off=True, recover_to=recover_to if climb else 0, climb=climb)


def _changed(
    last: Pace, rate: int, concurrency: int, state: State, reason: str, floor: int, ceiling: int | None = None
) -> Pace:
    """``rate`` if it differs enough from ``last``'s or lands on the floor or the ceiling, else
    ``last``'s."""
    small = abs(rate - last.rate) < MIN_CHANGE * last.rate
    if small and not (last.rate < floor <= rate) and rate != ceiling:
        rate = last.rate
    changed = replace(last, rate=rate, concurrency=concurrency, state=state, reason=reason)
    if rate >= last.recover_to:
        changed = replace(changed, recover_to=0, climb=0)  # back where it stood: the climb is over
    return changed
