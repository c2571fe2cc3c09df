"""Log dirs for the executor's fake cluster: where each replica lives, and future logs that
finish after a fixed number of DescribeLogDirs reads (a model of KIP-113's answers, not of Kafka).

A replica's dir is fixed the first time it is looked at: the dir AlterReplicaLogDirs named while
the broker did not hold it (its preferred dir), else the broker's first dir. An accepted move
into another dir is a future log until ``dir_polls`` reads have passed; a move back into the
current dir drops the future log (Kafka's cancel). Refusals carry kafka-python's error names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping

from ferry.kafka.admin import NOT_THERE_YET, BrokerDirs, ReplicaDir, ReplicaTarget
from ferry.model import LogDir, TopicPartition

NO_SUCH_DIR = "LogDirNotFoundError: The user-specified log directory is not found in the broker config."
CORDONED_DIR = "InvalidReplicaAssignmentError: the log directory is cordoned"


class FakeDirs:
    """The dirs of a fake's brokers: ``replicas`` and ``brokers`` say what the fake holds now (its
    replicas, its live brokers), ``default`` a broker's dirs unless a test set ``dirs``."""

    def __init__(
        self,
        replicas: Callable[[], Mapping[TopicPartition, tuple[int, ...]]],
        brokers: Callable[[], Collection[int]],
        default: Callable[[int], LogDir],
    ) -> None:
        self._replicas = replicas
        self._brokers = brokers
        self._default = default
        self.dirs: dict[int, tuple[str, ...]] = {}
        """Paths of a broker's dirs, where a test gives it more than its default one."""
        self.cordoned_dirs: set[str] = set()
        self.offline_dirs: set[str] = set()
        self.placed: dict[ReplicaTarget, str] = {}
        self.future: dict[ReplicaTarget, tuple[str, int]] = {}
        self.preferred: dict[ReplicaTarget, str] = {}
        self.dir_polls = 2
        self.stuck_dirs = False
        self.peak_future_per_broker: Counter[int] = Counter()
        self.peak_future_brokers = 0

    def dirs_of(self, broker: int) -> tuple[str, ...]:
        return self.dirs.get(broker, (self._default(broker).path,))

    def dir_of(self, tp: TopicPartition, broker: int) -> str:
        """The dir of a replica the broker holds (fixed the first time it is asked)."""
        key = (tp, broker)
        if key not in self.placed:
            self.placed[key] = self.preferred.pop(key, self.dirs_of(broker)[0])
        return self.placed[key]

    def describe(
        self, sizes: Mapping[TopicPartition, Mapping[int, int]], topics: Collection[str] | None
    ) -> dict[int, BrokerDirs]:
        """Every broker's dirs, with the replicas ``sizes`` has (of ``topics``) in them."""
        self._advance()
        held: dict[int, dict[TopicPartition, ReplicaDir]] = {}
        for tp, per_broker in sizes.items():
            if topics is not None and tp.topic not in topics:
                continue
            for broker, size in per_broker.items():
                future_path, _ = self.future.get((tp, broker), (None, 0))
                copied = size // 2 if future_path else 0
                held.setdefault(broker, {})[tp] = ReplicaDir(
                    self.dir_of(tp, broker), size, future_path, copied
                )
        return {b: BrokerDirs(self._dirs(b), held.get(b, {})) for b in sorted({*self._brokers(), *held})}

    def _dirs(self, broker: int) -> tuple[LogDir, ...]:
        if broker not in self.dirs:
            return (self._default(broker),)
        size = self._default(broker).total_bytes
        return tuple(
            LogDir(d, size, size, d in self.offline_dirs, d in self.cordoned_dirs) for d in self.dirs[broker]
        )

    def alter(self, targets: Mapping[ReplicaTarget, str]) -> dict[ReplicaTarget, str | None]:
        answers: dict[ReplicaTarget, str | None] = {}
        for (tp, broker), path in targets.items():
            if path not in self.dirs_of(broker):
                answers[(tp, broker)] = NO_SUCH_DIR
            elif path in self.cordoned_dirs:
                answers[(tp, broker)] = CORDONED_DIR
            elif broker not in self._replicas().get(tp, ()):
                self.preferred[(tp, broker)] = path
                answers[(tp, broker)] = NOT_THERE_YET
            else:
                if path == self.dir_of(tp, broker):
                    self.future.pop((tp, broker), None)
                elif self.future.get((tp, broker), ("",))[0] != path:
                    self.future[(tp, broker)] = (path, self.dir_polls)
                answers[(tp, broker)] = None
        self._record_peak()
        return answers

    def _advance(self) -> None:
        if self.stuck_dirs:
            return
        for key, (path, left) in list(self.future.items()):
            if left <= 1:
                del self.future[key]
                self.placed[key] = path
            else:
                self.future[key] = (path, left - 1)

    def _record_peak(self) -> None:
        load = Counter(broker for _, broker in self.future)
        for broker, count in load.items():
            self.peak_future_per_broker[broker] = max(self.peak_future_per_broker[broker], count)
        self.peak_future_brokers = max(self.peak_future_brokers, len(load))
