"""Hypothesis strategies for executor tests: random moves over a small set of brokers."""

from __future__ import annotations

from hypothesis import strategies as st

from ferry.model import Move, Plan, TopicPartition

BROKERS = range(1, 7)


@st.composite
def moves(draw: st.DrawFn, topics: tuple[str, ...] = ("a", "b", "c"), max_partitions: int = 4) -> Move:
    """One move: 1-3 original replicas and 1-3 target replicas on brokers 1..6."""
    tp = TopicPartition(draw(st.sampled_from(topics)), draw(st.integers(0, max_partitions - 1)))
    replicas = st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True)
    original = tuple(draw(replicas))
    target = tuple(draw(replicas))
    return Move(tp, original, target, size_bytes=draw(st.integers(0, 10_000)))


@st.composite
def plans(draw: st.DrawFn, max_size: int = 12) -> Plan:
    """A plan of distinct partitions."""
    drawn = draw(st.lists(moves(), max_size=max_size, unique_by=lambda m: m.tp))
    return Plan.of(drawn)
