"""The controller against a simulated cluster: one leader feeding two new followers, each copy
bounded by its follower's throttle, its disk, and an even share of what the leader's throttle
and network let out. Every broker's rate comes from :func:`decide_round`, as in a run."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from ferry.execute.pace import controller as ctl
from ferry.execute.pace.controller import Bounds, Health, Pace, Reading, Role, State
from ferry.execute.pace.pacer import SLOW_START_S, decide_round
from ferry.execute.pace.signals import Key, Signals
from ferry.execute.progress import THROTTLE_SHARE

MB = 1_000_000
LEADER: Key = (1, Role.LEADER)
FOLLOWERS: tuple[Key, ...] = ((3, Role.FOLLOWER), (4, Role.FOLLOWER))
BOUNDS = Bounds(None, 10 * MB, 5)


@dataclass(frozen=True)
class Path:
    leader_network: float
    follower_disk: float

    def flows(self, rates: dict[Key, int]) -> tuple[list[float], bool]:
        """Bytes/s into each follower, and whether the disks or the network (not a throttle)
        bound the copy."""
        wanted = [min(self.follower_disk, THROTTLE_SHARE * rates[f]) for f in FOLLOWERS]
        out = min(self.leader_network, THROTTLE_SHARE * rates[LEADER])
        flows, left = [0.0] * len(wanted), out
        for n, i in enumerate(sorted(range(len(wanted)), key=wanted.__getitem__)):
            flows[i] = min(wanted[i], left / (len(wanted) - n))
            left -= flows[i]
        disk_full = any(f >= self.follower_disk * 0.999 for f in flows)
        network_full = sum(flows) >= self.leader_network * 0.999
        return flows, disk_full or network_full


def _simulate(path: Path, size: float) -> tuple[float, list[dict[Key, Pace]]]:
    """Seconds until both followers hold ``size`` bytes, and every round's paces."""
    paces = {key: ctl.start(10 * MB, BOUNDS) for key in (LEADER, *FOLLOWERS)}
    partners = {LEADER: frozenset(FOLLOWERS), **{f: frozenset({LEADER}) for f in FOLLOWERS}}
    copied, clock, rounds = [0.0, 0.0], 0.0, []
    while min(copied) < size:
        period = 15.0 if any(p.backed_off for p in paces.values()) else SLOW_START_S
        flows, _ = path.flows({key: pace.rate for key, pace in paces.items()})
        copied = [c + f * period for c, f in zip(copied, flows, strict=True)]
        clock += period
        readings = {f: Reading(flow, 0.0, 2, Health()) for f, flow in zip(FOLLOWERS, flows, strict=True)}
        readings[LEADER] = Reading(sum(flows), 0.0, 4, Health())
        paces = decide_round(paces, Signals(readings, partners=partners), BOUNDS)
        rounds.append(paces)
    return clock, rounds


@pytest.mark.parametrize(
    "path",
    [
        Path(leader_network=250 * MB, follower_disk=100 * MB),
        Path(leader_network=120 * MB, follower_disk=100 * MB),
    ],
    ids=["the disks fill", "the leader's network fills"],
)
def test_the_slow_start_costs_at_most_its_doublings_whichever_end_limits(path: Path) -> None:
    """From 10 MB/s to a path of 60-100 MB/s per follower: each doubling a reading, and the
    copy at the path's speed from then on, so the move takes its shortest time plus less than
    the readings of the doublings (here 3-4 of 2.5 s)."""
    best = min(path.follower_disk, path.leader_network / 2)
    size = 60 * best  # a minute at the path's speed
    seconds, rounds = _simulate(path, size)
    doublings = math.ceil(math.log2(best / (THROTTLE_SHARE * 10 * MB)))
    assert seconds <= size / best + doublings * SLOW_START_S
    assert all(pace.state is not State.BACK_OFF for paces in rounds for pace in paces.values())


def test_the_slow_start_reaches_the_path_in_doublings_not_in_steps() -> None:
    path = Path(leader_network=1000 * MB, follower_disk=160 * MB)
    _, rounds = _simulate(path, 60 * 160 * MB)
    reached = next(
        n for n, paces in enumerate(rounds) if THROTTLE_SHARE * paces[FOLLOWERS[0]].rate >= 144 * MB
    )
    assert reached <= 4  # 10 MB/s to 160 is four doublings; the leader does not hold them back


def test_followers_double_with_a_leader_that_doubles_not_with_one_past_its_slow_start() -> None:
    partners = {LEADER: frozenset(FOLLOWERS), **{f: frozenset({LEADER}) for f in FOLLOWERS}}
    readings = {f: Reading(10 * MB, 0.0, 2, Health()) for f in FOLLOWERS}
    readings[LEADER] = Reading(20 * MB, 0.0, 4, Health())
    found = Signals(readings, partners=partners)
    starting = {key: Pace(20 * MB, 2, State.RAISE, "") for key in (LEADER, *FOLLOWERS)}
    doubled = decide_round(starting, found, BOUNDS)
    assert doubled[LEADER].state is State.RAISE
    assert all((doubled[f].rate, doubled[f].state) == (40 * MB, State.FOLLOW) for f in FOLLOWERS)
    additive = {**starting, LEADER: Pace(20 * MB, 2, State.RAISE, "", backed_off=True)}
    held = decide_round(additive, found, BOUNDS)
    assert (held[LEADER].rate, held[LEADER].state) == (30 * MB, State.RAISE)  # + the step
    assert all((held[f].rate, held[f].state) == (20 * MB, State.HOLD) for f in FOLLOWERS)
