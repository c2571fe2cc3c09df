"""``--one-replica-at-a-time``: a move cut into single-replica reassignments (pure).

A move of [1, 2, 3] to [4, 5, 6] runs as [1, 2, 3] -> [4, 2, 3] -> [4, 5, 3] -> [4, 5, 6], each
step its own KIP-455 reassignment that adds one replica (and drops one), so each leader feeds one
new follower at a time and its disk reads one copy, not three. A step swaps a leaving replica for
a joining one in the same rack first, so the rack counts stay as they are; a change of rack
comes last, where the counts of the two ends differ. A replication factor going up adds the
extra replicas one per step after the swaps; going down drops the extra ones first, so no step
holds more replicas than either end. The last step is the target itself, in its order (the
preferred leader first); before it each joining replica takes the leaving one's place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Steps = tuple[tuple[int, ...], ...]
"""The replica lists a move goes through, each one replica from the one before; the last is the target."""


def single_replica_steps(
    original: Sequence[int], target: Sequence[int], rack_of: Mapping[int, str | None]
) -> Steps:
    """The steps from ``original`` to ``target``; one step (the target) when one replica or none
    changes."""
    joining = [b for b in target if b not in original]
    leaving = [b for b in original if b not in target]
    if len(joining) <= 1 and len(leaving) <= 1:
        return (tuple(target),)
    swaps, dropped, added = _pairs(leaving, joining, rack_of)
    held = list(original)
    steps: list[tuple[int, ...]] = []
    # Dropping first when the replication factor goes down: no step holds more than either end.
    for r in dropped:
        held.remove(r)
        steps.append(tuple(held))
    for r, a in swaps:
        held[held.index(r)] = a
        steps.append(tuple(held))
    for a in added:
        held.append(a)
        steps.append(tuple(held))
    steps[-1] = tuple(target)
    return tuple(steps)


def _pairs(
    leaving: Sequence[int], joining: Sequence[int], rack_of: Mapping[int, str | None]
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Each leaving replica with the joining one that takes its place (same rack first, those
    pairs first), and the leaving and joining replicas left without one."""
    free = list(joining)
    same: list[tuple[int, int]] = []
    rest: list[int] = []
    for r in leaving:
        match = next((a for a in free if rack_of.get(a) == rack_of.get(r)), None)
        if match is None:
            rest.append(r)
            continue
        free.remove(match)
        same.append((r, match))
    cross = list(zip(rest, free, strict=False))
    return same + cross, rest[len(cross) :], free[len(cross) :]


def next_target(steps: Steps, original: Sequence[int], replicas: Sequence[int]) -> tuple[int, ...]:
    """Where a move whose partition now has ``replicas`` goes next: the step after the one it
    reached (the first from ``original``), or its target when ``replicas`` is no step of it (moved
    by someone else meanwhile) or the target already."""
    now = set(replicas)
    if now == set(original):
        return steps[0]
    for k, step in enumerate(steps[:-1]):
        if set(step) == now:
            return steps[k + 1]
    return steps[-1]
