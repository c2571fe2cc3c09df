"""Throttle configs shared by several requests, and settling one request's throttles from outside.

Requests can run side by side (a second ``ferry execute`` queues more work, a rollback runs while
another request moves): two of them may need the same config, e.g. the leader-throttled replicas of
one topic or the rate of one broker. Each request writes only the configs it recorded up front, but
the value it writes is what *every* ferry move in flight needs there (its own and the other
requests' submitted tasks), so one request finishing never strips another's throttle. A request that
prepares while another has a config applied records the *other's* pre-existing value, not ferry's,
so whichever ends last puts back what was there before ferry.

:func:`settle` makes one request's configs match its submitted tasks again from another process:
``ferry cancel`` uses it so the throttles of cancelled moves go at once, whether or not the
request's executor is alive (a live one converges to the same values on its next poll).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from ferry.errors import KafkaError
from ferry.execute import throttles as thr
from ferry.execute.journal import Journal
from ferry.execute.pace.controller import Role
from ferry.execute.records import ConfigKey, TaskRecord
from ferry.execute.states import TaskState
from ferry.kafka.admin import ClusterAdmin
from ferry.kafka.resources import ResourceType


def merge(first: thr.Throttles, second: thr.Throttles) -> thr.Throttles:
    """Both sets of entries; where both set a rate, ``first``'s wins (it is the caller's own)."""
    replicas = dict(second.replicas)
    for key, entries in first.replicas.items():
        replicas[key] = entries | replicas.get(key, frozenset())
    return thr.Throttles(replicas, {**second.rates, **first.rates})


def others_need(journal: Journal, request_id: int) -> thr.Throttles:
    """What the submitted tasks of every *other* request need, each at its own request's rate."""
    by_request: dict[int, list[TaskRecord]] = {}
    for task in journal.tasks(states=[TaskState.SUBMITTED]):
        if task.request_id != request_id:
            by_request.setdefault(task.request_id, []).append(task)
    needed = thr.Throttles({}, {})
    for other, tasks in sorted(by_request.items()):
        options = journal.request(other).options
        paced = paced_configs(journal.paced_rates(other))
        needed = merge(needed, thr.required(tasks, options.throttle, paced, options.dir_rate))
    return needed


def paced_configs(rates: Mapping[tuple[int, Role], int]) -> dict[tuple[int, str], int]:
    """Paced rates by broker and role as :func:`throttles.required` takes them: by rate config."""
    key = {Role.LEADER: thr.LEADER_RATE, Role.FOLLOWER: thr.FOLLOWER_RATE}
    return {(broker, key[role]): rate for (broker, role), rate in rates.items()}


def wanted(
    journal: Journal,
    request_id: int,
    moving: Iterable[TaskRecord],
    rate: int | None,
    previous: Mapping[ConfigKey, str | None],
    keys: Collection[ConfigKey],
    paced: Mapping[tuple[int, str], int] | None = None,
    dir_rate: int | None = None,
) -> dict[ConfigKey, str]:
    """The values request ``request_id`` should have on its ``keys``: its needs (at its paced
    rates where it has them, and its log-dir rate), the others', theirs."""
    needed = merge(thr.required(moving, rate, paced, dir_rate), others_need(journal, request_id))
    return {k: v for k, v in thr.desired(needed, previous).items() if k in keys}


def previous_values(
    journal: Journal, cluster: Mapping[ConfigKey, str | None], keys: Collection[ConfigKey]
) -> dict[ConfigKey, str | None]:
    """The pre-ferry value of each key: from a request that has it applied now, else the cluster's."""
    values = {k: cluster.get(k) for k in keys}
    for request in journal.requests():
        if request.state.is_final:
            continue
        for record in journal.throttles(request.id):
            if record.config in values and record.applied is not None:
                values[record.config] = record.previous
    return values


def settle(admin: ClusterAdmin, journal: Journal, request_id: int, *, landed: bool = False) -> int:
    """Write request ``request_id``'s throttle configs as its submitted tasks (and others') need now.
    ``landed``: from the values the cluster holds now, once a write that failed can no longer land
    (see :meth:`ClusterAdmin.config_writes_settle_in`), not from what the journal says was applied.

    Returns:
        How many configs were written.
    """
    throttles = RequestThrottles.load(admin, journal, request_id)
    if landed:
        throttles.read_back()
    elif not throttles.applied:
        return 0
    changed = throttles.sync(journal.tasks(request_id, [TaskState.SUBMITTED]))
    return 0 if changed is None else sum(changed)


UNSURE = ""
"""The value a request owns a config at when it cannot know it (no throttle config is ever empty):
its write failed, a write that went unanswered may still land on it, or a late write deleted it.
The next sync writes such a config again, and the restore puts it back."""


@dataclass
class RequestThrottles:
    """One request's throttle configs as the process writing them sees them.

    ``previous`` holds each config's pre-ferry value (recorded when the request was prepared),
    ``applied`` what this request has written and still owns.
    """

    admin: ClusterAdmin
    journal: Journal
    request_id: int
    rate: int | None
    previous: dict[ConfigKey, str | None]
    applied: dict[ConfigKey, str]
    paced: dict[tuple[int, str], int] = field(default_factory=dict)
    """Rates by broker and rate config that ``--pace auto`` chose, replacing ``rate`` there."""
    dir_rate: int | None = None
    """The log-dir throttle of brokers copying between their dirs."""
    unsure: bool = False
    """The restore left every config recorded unsure: a failed write could still land on it."""

    @classmethod
    def load(cls, admin: ClusterAdmin, journal: Journal, request_id: int) -> RequestThrottles:
        """The request's configs and rate as the journal has them."""
        records = journal.throttles(request_id)
        options = journal.request(request_id).options
        previous = {r.config: r.previous for r in records}
        applied = {r.config: r.applied for r in records if r.applied is not None}
        paced = paced_configs(journal.paced_rates(request_id))
        return cls(admin, journal, request_id, options.throttle, previous, applied, paced, options.dir_rate)

    def sync(self, moving: Iterable[TaskRecord], silent: Collection[int] = ()) -> tuple[int, int] | None:
        """Make the configs exactly what ``moving`` and the other requests need, except those of
        the ``silent`` brokers (stopped: a write would wait until they are back), which a later
        sync writes once they answer.

        Returns:
            How many configs the request now owns and how many it released; None: no change.
        """
        keys = self.previous.keys()
        target = wanted(
            self.journal, self.request_id, moving, self.rate, self.previous, keys, self.paced, self.dir_rate
        )
        names = {str(b) for b in silent}
        writes = {
            key: value
            for key, value in thr.changes(self.applied, target, self.previous).items()
            if not (key.resource_type is ResourceType.BROKER and key.resource_name in names)
        }
        return self._write(writes, target)

    def restore(self) -> tuple[int, int] | None:
        """Put back the pre-ferry values, except where another request's moves still need ours."""
        kept = wanted(self.journal, self.request_id, (), None, self.previous, self.applied.keys())
        changed = self._write(thr.changes(self.applied, kept, self.previous), {})
        # What is left applied is at a value another request needs: that request owns it from now
        # on. But a write that failed may still land on any config: until :meth:`restore_landed`
        # has looked, the journal keeps them all unsure, for 'ferry resume' after an interruption.
        late = self.admin.config_writes_settle_in() > 0
        keys = self.previous if late or self.unsure else self.applied
        if keys:
            self.journal.set_throttles_applied(self.request_id, dict.fromkeys(keys, UNSURE if late else None))
        self.applied, self.unsure = {}, late
        return changed

    def restore_landed(self) -> tuple[int, int] | None:
        """:meth:`restore` again, from the values the cluster holds now: a write that failed may
        land after the restore (see :meth:`ClusterAdmin.config_writes_settle_in`)."""
        self.read_back()
        return self.restore()

    def read_back(self) -> None:
        """Take what the cluster holds as what this request has applied: every config away from
        its pre-ferry value (a late write may have put it there)."""
        held = self.admin.describe_throttle_configs(self.previous.keys())
        # A config a late write deleted is absent from ``held``: what follows writes it back too.
        self.applied = {
            key: held.get(key, UNSURE) for key, before in self.previous.items() if held.get(key) != before
        }

    def _write(
        self, writes: Mapping[ConfigKey, str | None], owned: Mapping[ConfigKey, str]
    ) -> tuple[int, int] | None:
        if not writes:
            return None
        try:
            ours, released = write(self.admin, self.journal, self.request_id, writes, owned)
        except KafkaError:
            # The write may have landed (a timeout in a controller failover) and the journal holds
            # what it would own: so does this request, at a value no config has, or a run whose
            # moves end before the next sync would never put those configs back.
            self.applied.update(dict.fromkeys((k for k in writes if k in owned), UNSURE))
            raise
        self.applied = {k: v for k, v in {**self.applied, **ours}.items() if k not in released}
        return len(ours), len(released)


def write(
    admin: ClusterAdmin,
    journal: Journal,
    request_id: int,
    writes: Mapping[ConfigKey, str | None],
    owned: Mapping[ConfigKey, str],
) -> tuple[dict[ConfigKey, str], list[ConfigKey]]:
    """Apply ``writes`` for request ``request_id``, journalled so a crash leaves a record to clean up.

    Keys in ``owned`` stay the request's (journalled *before* the write); the others are released
    (journalled *after* it, so a crash keeps the record until the write is done).

    Returns:
        The values the request now owns and the keys it released.
    """
    ours = {k: owned[k] for k in writes if k in owned}
    released = [k for k in writes if k not in owned]
    if writes:
        journal.set_throttles_applied(request_id, ours)
        admin.alter_configs(writes)
        journal.set_throttles_applied(request_id, dict.fromkeys(released))
    return ours, released
