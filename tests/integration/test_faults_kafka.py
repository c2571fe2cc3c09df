"""The fault-injection harness, one seeded run per fault kind, on a sandbox with 3 controllers.

benchmarks/faults.py runs many more (docs/benchmarks.md, "Faults"); these four are the CI subset:
kill -9 of ferry, a broker killed, the quorum leader killed, a broker paused, each during a
throttled scenario under idempotent acks=all producers. Each run must end with every acknowledged
message consumed exactly once, every partition where the scenario and the journal say, nothing in
flight, and every throttle config as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from support.fault_harness.inject import FaultKind
from support.fault_harness.run import FaultHarness, kinds_of

from ferry.kafka.client import ready_brokers
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars

SEED = 1


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultHarness]:
    sandbox = Sandbox(tmp_path_factory.mktemp("faults-sandbox"))
    try:
        spec = ClusterSpec(brokers=4, racks=2, controllers=3)
        sandbox.up(spec, ensure_jars(), ready_brokers, timeout_s=180)
        yield FaultHarness(sandbox, SEED, tmp_path_factory.mktemp("faults-kept"))
    finally:
        sandbox.down()


@pytest.mark.parametrize(
    "index", range(len(FaultKind)), ids=[str(kinds_of(i)[1]) for i in range(len(FaultKind))]
)
def test_a_fault_loses_no_acknowledged_message_and_leaves_nothing_behind(
    harness: FaultHarness, index: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)  # the clients log every broker they lose: expected here
    result = harness.run(index)
    print(result.line())
    assert result.tally.acked > 1000, result.line()
    assert " failed:" not in result.outcome, result.line()  # the fault itself went as planned
    assert result.clean, result.line()
