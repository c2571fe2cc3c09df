"""``PartitionState.checked``, the fast constructor snapshot readers use, builds exactly what the
class's own constructor builds, every field set."""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from ferry.model import PartitionState, TopicPartition


@given(
    replicas=st.lists(st.integers(0, 50), min_size=1, max_size=5, unique=True),
    leader=st.none() | st.integers(-1, 50),
    isr=st.none() | st.lists(st.integers(0, 50), max_size=5, unique=True),
    size=st.none() | st.integers(0, 2**63 - 1),
)
def test_checked_equals_the_constructor_in_every_field(
    replicas: list[int], leader: int | None, isr: list[int] | None, size: int | None
) -> None:
    tp = TopicPartition("t", 3)
    isr_tuple = None if isr is None else tuple(isr)
    fast = PartitionState.checked(tp, tuple(replicas), leader, isr_tuple, size)
    slow = PartitionState(tp, tuple(replicas), leader, isr_tuple, size)
    # Every field, those left out of == too: a slot the fast path forgot would raise here.
    assert [getattr(fast, f.name) for f in fields(PartitionState)] == [
        getattr(slow, f.name) for f in fields(PartitionState)
    ]
