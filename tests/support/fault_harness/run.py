"""One seeded run of the harness on a running sandbox, and the summary of many."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from support.fault_harness.check import StateCheck, check_state, throttle_keys
from support.fault_harness.ferry import FerryRunner
from support.fault_harness.inject import FaultKind, FaultPlan, Injection, Target
from support.fault_harness.load import FILL, LoadTally, SequencedLoad
from support.fault_harness.scenario import Moves, Scenario, ScenarioKind, allowed

from ferry.kafka.client import KafkaPythonAdmin
from ferry.kafka.resources import ConfigKey, ResourceType
from ferry.model import TopicPartition
from ferry.sandbox import Sandbox

TOPICS_PER_RUN = 3
PARTITIONS = 4
FILL_PER_PARTITION = 1024 * 1024
FILL_RECORD = 16 * 1024
# Set before any run, to be found unchanged after each: ferry restores what it found.
THEIR_BROKER_THROTTLE = ("follower.replication.throttled.rate", "1000000000")
THEIR_TOPIC_THROTTLE = "follower.replication.throttled.replicas"
INTERNAL_ERROR = 1  # ferry's exit code for a bug: a traceback, never acceptable


@dataclass(frozen=True, slots=True)
class RunResult:
    index: int
    scenario: ScenarioKind
    fault: FaultKind
    outcome: str
    tally: LoadTally
    state: StateCheck
    exits: tuple[tuple[str, int], ...]
    errors: tuple[str, ...]
    seconds: float

    @property
    def clean(self) -> bool:
        """Nothing lost or duplicated, nothing wrong or left, and no internal error (exit 1) of ferry."""
        internal = any(code == INTERNAL_ERROR for _, code in self.exits)
        return not (self.tally.lost or self.tally.duplicated or self.state.partitions_wrong) and not (
            self.state.throttles_left or self.state.notes or self.errors or internal
        )

    def line(self) -> str:
        exits = " ".join(f"{verb}:{code}" for verb, code in self.exits)
        text = (
            f"run {self.index} {self.scenario} | {self.outcome} | acked {self.tally.acked}, "
            f"lost {self.tally.lost}, duplicated {self.tally.duplicated}, partitions wrong "
            f"{self.state.partitions_wrong}, throttles left {self.state.throttles_left} | "
            f"ferry {exits} | {self.seconds:.0f} s"
        )
        return "\n    ".join([text, *self.state.notes, *self.errors])


def kinds_of(index: int) -> tuple[ScenarioKind, FaultKind]:
    """Runs 0..11 cover each (scenario, fault) pair once; runs 0..3 each fault kind once."""
    scenarios, faults = list(ScenarioKind), list(FaultKind)
    return scenarios[(index + index // len(faults)) % len(scenarios)], faults[index % len(faults)]


def summary(results: Sequence[RunResult]) -> list[str]:
    """The per-kind table and the last line: ``runs N, acked M, lost L, ...``."""
    lines = []
    for kind in FaultKind:
        of_kind = [r for r in results if r.fault is kind]
        if of_kind:
            lines.append(f"{kind}: {len(of_kind)} runs, {sum(r.clean for r in of_kind)} clean")
    total = Counter[str]()
    for r in results:
        total.update(
            acked=r.tally.acked, lost=r.tally.lost, duplicated=r.tally.duplicated,
            wrong=r.state.partitions_wrong, left=r.state.throttles_left,
        )  # fmt: skip
    lines.append(
        f"runs {len(results)}, acked {total['acked']}, lost {total['lost']}, duplicated "
        f"{total['duplicated']}, partitions wrong {total['wrong']}, throttles left {total['left']}"
    )
    return lines


class FaultHarness:
    """Runs seeded fault runs one after another on a started sandbox (4 brokers, 3 controllers)."""

    def __init__(
        self, sandbox: Sandbox, seed: int, keep: Path | None = None, *, keep_all: bool = False
    ) -> None:
        """``keep``: where the journal and ferry's output of a run that was not clean (of every run,
        with ``keep_all``) are copied."""
        self._sandbox = sandbox
        self._seed = seed
        self._keep = keep
        self._keep_all = keep_all
        state = sandbox.state()
        self._bootstrap = state.bootstrap
        self._brokers = [n.node_id for n in state.brokers]
        with KafkaPythonAdmin(self._bootstrap, timeout_s=15) as admin:
            key, value = THEIR_BROKER_THROTTLE
            admin.alter_configs({ConfigKey(ResourceType.BROKER, str(self._brokers[-1]), key): value})

    def run(self, index: int) -> RunResult:
        started = time.monotonic()
        scenario_kind, fault_kind = kinds_of(index)
        rng = random.Random(f"{self._seed}:{index}")
        topics = [f"faults-{self._seed}-{index}-{i}" for i in range(TOPICS_PER_RUN)]
        with (
            tempfile.TemporaryDirectory(prefix="ferry-faults-") as tmp,
            KafkaPythonAdmin(self._bootstrap, timeout_s=15) as admin,
        ):
            workdir = Path(tmp)
            original = self._create(admin, topics, rng)
            keys = throttle_keys(self._brokers, topics)
            before = admin.describe_throttle_configs(keys)
            moves = Moves.draw(original, self._brokers, rng)
            load = SequencedLoad(self._bootstrap, topics)
            load.start()
            time.sleep(2.0)
            ferry = FerryRunner(self._bootstrap, workdir / "journal.sqlite", workdir)
            injection = Injection(FaultPlan.draw(fault_kind, rng), Target(self._sandbox, topics, ferry))
            fault_at = injection.start()
            Scenario(scenario_kind, ferry, workdir, rng, lambda: injection.join(), fault_at).run(moves)
            outcome = injection.join()
            ferry.resume_unfinished()
            time.sleep(2.0)  # messages keep flowing once ferry is done
            tally = load.stop()
            state = check_state(admin, ferry.journal, allowed(scenario_kind, moves), before, keys)
            self._clean_up(admin, topics)
            errors = (*load.errors, *ferry.errors)
            result = RunResult(
                index, scenario_kind, fault_kind, outcome, tally, state, tuple(ferry.exits), errors,
                time.monotonic() - started,
            )  # fmt: skip
            if self._keep is not None and (self._keep_all or not result.clean):
                shutil.copytree(workdir, self._keep / f"run-{index}", dirs_exist_ok=True)
        return result

    def _create(
        self, admin: KafkaPythonAdmin, topics: list[str], rng: random.Random
    ) -> dict[TopicPartition, tuple[int, ...]]:
        """RF 3 topics, min.insync.replicas 2, 1 MiB per partition; one carries a throttle of theirs."""
        specs = {}
        for topic in topics:
            assignments = {p: rng.sample(self._brokers, 3) for p in range(PARTITIONS)}
            specs[topic] = {"assignments": assignments, "configs": {"min.insync.replicas": "2"}}
        client = KafkaAdminClient(bootstrap_servers=self._bootstrap, request_timeout_ms=15000)
        try:
            client.create_topics(specs, timeout_ms=15000, wait_for_metadata=True)
        finally:
            client.close()
        _fill(self._bootstrap, topics)
        theirs = ConfigKey(ResourceType.TOPIC, topics[0], THEIR_TOPIC_THROTTLE)
        admin.alter_configs({theirs: f"0:{specs[topics[0]]['assignments'][0][0]}"})
        return {p.tp: tuple(p.replicas) for p in admin.describe_partitions(topics)}

    def _clean_up(self, admin: KafkaPythonAdmin, topics: list[str]) -> None:
        """Leave nothing of the run for the next one: no move in flight, no topic."""
        moving = admin.list_reassignments(topics)
        if moving:
            admin.alter_reassignments({r.tp: None for r in moving})
        client = KafkaAdminClient(bootstrap_servers=self._bootstrap, request_timeout_ms=15000)
        try:
            client.delete_topics(topics, timeout_ms=15000)
        finally:
            client.close()


def _fill(bootstrap: str, topics: list[str]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for topic in topics:
            for partition in range(PARTITIONS):
                for _ in range(FILL_PER_PARTITION // FILL_RECORD):
                    producer.send(topic, FILL + os.urandom(FILL_RECORD), partition=partition)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
