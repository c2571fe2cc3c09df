"""Where a partition's replicas sit among their brokers' log dirs, against the dirs a move names."""

from __future__ import annotations

from ferry.model import PartitionState, TopicPartition


def test_the_brokers_off_their_named_dirs() -> None:
    state = PartitionState(TopicPartition("t", 0), (1, 2, 3), replica_dirs=((1, "/a"), (2, "/b")))
    named = {1: "/a", 2: "/a", 3: "/c", 4: "/a"}
    # 1 is in its dir; 2 in another; 3's dir is not known; 4 holds no replica yet.
    assert state.off_named_dirs(named) == [2, 3, 4]
    assert state.off_named_dirs({1: "/a"}) == []
    assert state.off_named_dirs({}) == []
