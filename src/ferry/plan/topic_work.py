"""Working state of one topic while it is planned (a private, mutable scratch structure).

The planner passes turn a topic's current placement into a new one; they share this scratch state
and nothing else, and :mod:`ferry.plan.planner` turns the result into frozen values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Sequence
from dataclasses import dataclass
from itertools import chain

from ferry.model.cluster import PartitionState


@dataclass(slots=True)
class Slot:
    """One partition of the topic being planned."""

    state: PartitionState
    rf: int
    replicas: list[int]
    """Current replicas on target brokers that are kept so far, then the newly placed ones."""
    # Frozen and shared while empty (most stay so): three empty sets of their own per partition
    # (over 200 bytes each) add up on a million partitions. Changed by rebinding (``|=``, ``-=``).
    new: frozenset[int] = frozenset()
    dropped: frozenset[int] = frozenset()
    """Brokers this partition left although it could stay there; it may come back."""
    returned: frozenset[int] = frozenset()
    """Brokers it was dropped from and came back to: a bonus the augmenting paths may take back."""
    decided: bool = False
    """The balance pass already chose which of its replicas stay (a pinned partition)."""

    @property
    def open(self) -> int:
        return self.rf - len(self.replicas)


@dataclass(slots=True)
class TopicWork:
    """All partitions of one topic plus the per-broker replica counts of the topic."""

    topic: str
    slots: list[Slot]
    load: Counter[int]
    """Replicas of the topic per target broker (0 where it has none: a small topic touches few of
    many brokers, and a dict of every broker per topic, several KB at 200 brokers, adds up at
    100,000 topics)."""
    kept: int = 0
    """Replicas of the topic where they were (on the broker, of the partition, they started on)."""

    @classmethod
    def start(
        cls, topic: str, partitions: Sequence[PartitionState], rfs: Sequence[int], targets: Container[int]
    ) -> TopicWork:
        slots = [
            Slot(state, rf, [b for b in state.replicas if b in targets])
            for state, rf in zip(partitions, rfs, strict=True)
        ]
        # Counted in one go: ``load[b] += 1`` per replica runs Counter's __missing__ in Python.
        load = Counter(chain.from_iterable(slot.replicas for slot in slots))
        return cls(topic, slots, load, load.total())

    def drop(self, slot: Slot, broker: int) -> None:
        slot.replicas.remove(broker)
        self.load[broker] -= 1
        self.kept -= broker in slot.state.replicas

    def add(self, slot: Slot, broker: int) -> None:
        slot.replicas.append(broker)
        self.load[broker] += 1
        self.kept += broker in slot.state.replicas
        if broker in slot.dropped:
            slot.dropped -= {broker}
            slot.returned |= {broker}
        elif broker not in slot.state.replicas:
            slot.new |= {broker}
