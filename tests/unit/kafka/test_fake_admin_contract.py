"""The ClusterAdmin contract on FakeAdmin: the fake answers as the real cluster does."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence

import pytest
from support.admin_contract import ClusterAdminContract
from support.fake_admin import FakeAdmin

from ferry.kafka.admin import ClusterAdmin
from ferry.model import Broker

RACKS = {1: "r0", 2: "r1", 3: "r0", 4: "r1"}


class FakeCluster:
    """The ContractCluster driver over a FakeAdmin."""

    def __init__(self) -> None:
        self.fake = FakeAdmin.of(Broker(b, rack) for b, rack in RACKS.items())
        self.admin: ClusterAdmin = self.fake
        self.racks: Mapping[int, str | None] = RACKS
        self._names = itertools.count()

    def new_topic(self, assignments: Mapping[int, Sequence[int]], *, min_insync: int | None = None) -> str:
        name = f"contract-{next(self._names)}"
        self.fake.create_topic(name, assignments, min_insync=min_insync)
        return name

    def produce(self, topic: str, size: int) -> None:
        parts = sum(1 for tp in self.fake.partitions if tp.topic == topic)
        self.fake.produce(topic, size * parts)

    def stop_broker(self, broker_id: int) -> None:
        self.fake.stop_broker(broker_id)

    def start_broker(self, broker_id: int) -> None:
        self.fake.start_broker(broker_id)


class TestFakeAdminContract(ClusterAdminContract):
    @pytest.fixture
    def cluster(self) -> Iterator[FakeCluster]:
        driver = FakeCluster()
        yield driver
        driver.admin.close()
