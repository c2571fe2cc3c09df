"""The pinned partitions of a run of pooled topics, and the rows keeping replicas on the brokers they
sit on, built at once with the run's extras (:mod:`ferry.plan.balance.program.plain_topics`).

On a skewed start most topics hold a few pinned partitions (two replicas in one rack) and nothing
else a plain topic lacks: a topic qualifies (:func:`runs_pinned`) where its partitions get only
their pair rows and their row of at most ``rf`` replicas, owing a rack no more than its upper
bound (:func:`~ferry.plan.balance.program.pinned_rows.owes_plainly`), and it has no shrinking
group, rack capacity row (:func:`~ferry.plan.balance.program.pinned_rows.capacity_posed`),
unpooled rack or rack-room row. Three racks at three replicas qualify: every rack's bounds are
(1, 1). Its program is a plain topic's (extras, pools, topic and rack rows) and, after those, what
:func:`~ferry.plan.balance.program.topic_rows.add_topic` adds for it:

- columns: a ``k[p, b]`` per pinned replica in the partitions' order, then an ``f[t, b]`` per
  holder row below that has free replicas to keep, by broker position;
- rows: per pinned partition its pair rows (by rack) and its row of at most ``rf`` replicas (less
  what it owes racks, whose replicas it leaves out); then
  a holder row (:data:`~ferry.plan.balance.solvers.slots.KEPT`) per broker holding a pinned
  replica of the topic that may exceed its quota: ``k`` columns there, ``f``, less ``x``.

Every other broker holding the topic keeps what follows from ``x`` alone, as on a plain topic.
Built topic by topic, each such topic cost loops over its partitions and holders, and on the 100k
skewed start of `benchmarks/plan_quality.py --shapes` every topic that is not plain is one; here a
run's are laid out with numpy, column for column and row for row as those loops would.

A single-replica topic the program pools like the others (no leader row counts its extras per
broker) has a plain topic's program, but is not built with the plain topics: it joins the run of
pinned topics it sits among, in topic order. Built on its own, every fifth topic of a skewed start
at replication factors 1 to 4 cut those runs short of
:data:`~ferry.plan.balance.program.integer_program.PINNED_RUN_FROM`, and each was built topic by
topic; moved ahead with the plain ones, the columns' order changes and with it which optimum among
equals the solver lands on.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ferry.plan.balance.program.pinned_rows import capacity_posed, owes_plainly
from ferry.plan.balance.program.pinned_set import PinnedSet
from ferry.plan.balance.program.run_holders import Holders
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.balance.solvers.slots import KEPT, PAIR
from ferry.plan.balance.solvers.transport import OTHER
from ferry.plan.consecutive import per_group, rank, starts
from ferry.plan.prepare.demand import TopicDemand


def in_runs(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Whether nothing but its pinned partitions keeps topic ``t`` from a run of plain topics: no
    single-replica partitions, and none of what :func:`_own_rows` names."""
    return not (d.single_replica or _own_rows(program, t, d))


def _own_rows(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Whether topic ``t`` has shrinking groups, rack capacity rows its rack rows do not already
    cover (:func:`~ferry.plan.balance.program.pinned_rows.capacity_posed`), unpooled racks or
    rack-room rows posed."""
    return bool(
        d.shrink_groups
        or capacity_posed(program.layout, d)
        or t in program.unpool
        or (d.rack_room and program.room_topics(t))
    )


def runs_pinned(program: ProgramState, t: int, d: TopicDemand) -> bool:
    """Whether topic ``t`` is built in a pinned run (module docstring); the program must be pooling."""
    if d.single_replica and program.pool_singles and not d.pinned:
        return not _own_rows(program, t, d)
    return bool(d.pinned) and in_runs(program, t, d) and owes_plainly(program, t, d)


@dataclass(frozen=True)
class TailRows:
    """Rows a run's topics add after their topic and rack rows: entries (row, column, value, and the
    column's place in its row: pinned replicas, ``f``, then ``x``), and per row its index, upper
    bound and kind; the holder and pair rows with their (topic, rack) groups; and the rows other rows
    imply (:attr:`~ferry.plan.balance.program.columns.Columns.implied`)."""

    entries: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    at: np.ndarray
    highs: np.ndarray
    kinds: np.ndarray
    grouped: tuple[np.ndarray, np.ndarray]
    implied: np.ndarray


@dataclass(frozen=True)
class PinnedRun:
    """The pinned partitions of a run's topics, flat (``pins.pin`` counts over the run), and what they
    add to each topic (module docstring)."""

    pins: PinnedSet
    pin_topic: np.ndarray
    """Per partition, its topic in the run."""
    rep_topic: np.ndarray
    """Per pinned replica, its topic in the run."""
    entry: np.ndarray
    """Per pinned replica, the holder entry (:class:`Holders`) of its broker."""
    on: np.ndarray
    """Per holder entry, whether a pinned replica sits there."""
    kept_row: np.ndarray
    """Per holder entry, whether it gets a holder row: a pinned replica there, and the broker may
    exceed its quota."""
    has_f: np.ndarray
    """Per holder entry, whether it gets an ``f`` column: a holder row, and free replicas there."""
    sizes: np.ndarray
    """Per partition, its size (the tie-break on bytes)."""
    over: np.ndarray
    """Per partition and rack, whether it holds more there than the rack's upper bound (a pair row)."""
    binds: np.ndarray
    """Per partition, whether its row of at most ``rf`` replicas can bind: not where keeping the most
    each rack allows fits (:func:`~ferry.plan.balance.program.pinned_rows._never_binds`)."""
    col_count: np.ndarray
    """Per topic, the columns it adds."""
    pin_rows: np.ndarray
    """Per topic, the rows of its pinned partitions."""
    row_count: np.ndarray
    """Per topic, the rows it adds."""

    @classmethod
    def of(cls, program: ProgramState, topics: list[int], h: Holders, fixed: np.ndarray) -> PinnedRun:
        """``h``: the run's holders; ``fixed``: per entry, whether the broker keeps all its free
        replicas whatever the extra."""
        layout = program.layout
        demands = [program.demands[t] for t in topics]
        n = len(topics)
        pin_count = np.fromiter((len(d.pinned) for d in demands), dtype=np.int64, count=n)
        every = list(chain.from_iterable(d.pinned for d in demands))
        total = sum(len(p.replicas) for p in every)
        pins = PinnedSet.of(every, np.zeros(total, dtype=np.int64), layout)
        sizes = chain.from_iterable(d.sizes or (0,) * len(d.pinned) for d in demands)
        pin_topic = np.repeat(np.arange(n), pin_count)
        rep_topic = pin_topic[pins.pin]
        brokers = len(layout.brokers)
        # Holder entries are sorted by topic, then position, and a replica's broker holds its topic.
        entry = np.searchsorted(h.topic * brokers + h.pos, rep_topic * brokers + pins.position)
        on = np.zeros(len(h.pos), dtype=bool)
        on[entry] = True
        kept_row = on & ~fixed
        has_f = kept_row & (h.free > 0)
        counts = pins.counts()
        over = pins.over(counts)
        pin_rows = np.bincount(pin_topic, weights=over.sum(axis=1) + 1, minlength=n).astype(np.int64)
        return cls(
            pins,
            pin_topic,
            rep_topic,
            entry,
            on,
            kept_row,
            has_f,
            np.fromiter(sizes, dtype=np.int64, count=len(every)),
            over,
            pins.binding(counts),
            np.bincount(rep_topic, minlength=n) + np.bincount(h.topic[has_f], minlength=n),
            pin_rows,
            pin_rows + np.bincount(h.topic[kept_row], minlength=n),
        )

    def columns(self, h: Holders, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pinned replica its ``k`` column, and per entry with :attr:`has_f` its ``f`` column, where
        each topic's columns here start at ``first``."""
        n = len(self.col_count)
        reps = np.bincount(self.rep_topic, minlength=n)
        k = first[self.rep_topic] + rank(self.rep_topic, reps)
        topic = h.topic[self.has_f]
        f = first[topic] + reps[topic] + rank(topic, np.bincount(topic, minlength=n))
        return k, f

    def values(self, h: Holders) -> tuple[np.ndarray, np.ndarray]:
        """The upper bounds and sizes of the ``k`` columns, then of the ``f`` ones; each is worth a
        kept replica."""
        upper = np.concatenate([np.ones(len(self.entry)), h.free[self.has_f].astype(np.float64)])
        size = np.concatenate([self.sizes[self.pins.pin], np.zeros(int(self.has_f.sum()), dtype=np.int64)])
        return upper, size

    def rows(
        self,
        program: ProgramState,
        topics: list[int],
        h: Holders,
        cols: tuple[np.ndarray, np.ndarray, np.ndarray],
        first: np.ndarray,
    ) -> TailRows:
        """The rows, where each topic's rows here start at ``first``; ``cols``: the ``k`` and ``f``
        columns (:meth:`columns`) and per holder entry its ``x`` column (-1: none)."""
        k, f, x_col = cols
        pins, n = self.pins, len(topics)
        pair_pin, pair_rack, pair_row, rep_row = self._partition_rows(first)
        part_rows, part_cols = self._partition_entries(pair_pin, pair_rack, (pair_row, rep_row), k)
        held = np.flatnonzero(self.kept_row)
        topic = h.topic[held]
        kept_at = np.full(len(h.pos), -1, dtype=np.int64)
        kept_at[held] = first[topic] + self.pin_rows[topic] + rank(topic, np.bincount(topic, minlength=n))
        rep_kept = kept_at[self.entry]
        at_kept = rep_kept >= 0
        with_f, with_x = np.flatnonzero(self.has_f), held[x_col[held] >= 0]
        ones = len(part_rows) + int(at_kept.sum())
        entries = (
            np.concatenate([part_rows, rep_kept[at_kept], kept_at[with_f], kept_at[with_x]]),
            np.concatenate([part_cols, k[at_kept], f, x_col[with_x]]),
            np.concatenate([np.ones(ones + len(f)), np.full(len(with_x), -1.0)]),
            np.concatenate(
                [np.zeros(ones, dtype=np.int64), np.ones(len(f), dtype=np.int64), np.full(len(with_x), 2)]
            ),
        )
        kinds = np.array([PAIR, OTHER, KEPT], dtype=object)[
            np.repeat([0, 1, 2], [len(pair_row), len(rep_row), len(held)])
        ]
        ids, racks = np.asarray(topics, dtype=np.int64), len(program.layout.members)
        rack_at = np.asarray(program.layout.rack_at, dtype=np.int64)
        groups = np.concatenate(
            [ids[self.pin_topic[pair_pin]] * racks + pair_rack, ids[topic] * racks + rack_at[h.pos[held]]]
        )
        grouped_rows = np.concatenate([pair_row, kept_at[held]])
        order = np.argsort(grouped_rows, kind="stable")
        return TailRows(
            entries,
            np.concatenate([pair_row, rep_row, kept_at[held]]),
            np.concatenate(
                [pins.hi[pair_pin, pair_rack], pins.rf - pins.lo.sum(axis=1), h.base[held]]
            ).astype(np.float64),
            kinds,
            (grouped_rows[order], groups[order]),
            rep_row[~self.binds],
        )

    def _partition_rows(self, first: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per pair row its partition, rack and row; per partition its row of at most ``rf`` replicas:
        a partition's pair rows, then that row, each topic's from ``first``."""
        per_pin = self.over.sum(axis=1)
        pin_at = first[self.pin_topic] + starts(per_pin + 1) - starts(self.pin_rows)[self.pin_topic]
        pair_pin, pair_rack = np.nonzero(self.over)
        return pair_pin, pair_rack, pin_at[pair_pin] + rank(pair_pin, per_pin), pin_at + per_pin

    def _partition_entries(
        self, pair_pin: np.ndarray, pair_rack: np.ndarray, rows: tuple[np.ndarray, np.ndarray], k: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The entries (row, column) of the partitions' ``rows`` (pair rows, replica rows), the pair rows'
        first: a replica in its rack's pair row, and in its partition's replica row unless the partition
        owes the rack (it counts in the rack's capacity row then)."""
        pins = self.pins
        pair_row, rep_row = rows
        table = np.full(self.over.shape, -1, dtype=np.int64)
        table[pair_pin, pair_rack] = pair_row
        in_pair = table[pins.pin, pins.rack]
        paired = in_pair >= 0
        counted = pins.lo[pins.pin, pins.rack] == 0
        return (
            np.concatenate([in_pair[paired], rep_row[pins.pin[counted]]]),
            np.concatenate([k[paired], k[counted]]),
        )

    def record(
        self, program: ProgramState, topics: list[int], h: Holders, cols: tuple[np.ndarray, np.ndarray]
    ) -> None:
        """Each topic's ``f`` columns by broker position, and its pinned partitions with their ``k``
        columns (``cols``)."""
        k, f = cols
        n = len(topics)
        topic = h.topic[self.has_f]
        at = list(zip(h.pos[self.has_f].tolist(), f.tolist(), strict=True))
        for t, mine in zip(topics, per_group(at, topic, n), strict=True):
            program.free_at[t].extend(mine)
        parts = self.pins.parts(np.bincount(self.pin_topic, minlength=n), k)
        for t, pinned in zip(topics, parts, strict=True):
            # A pooled single-replica topic in the run has none (module docstring).
            program.pinned[t] = pinned if pinned.pins else None

    def kept(
        self, h: Holders, cols: tuple[np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The columns counting kept replicas: per ``k`` then ``f`` column, its topic in the run, its
        column and its place in the topic's list (0 and 1; an ``x`` carrying one comes after)."""
        k, f = cols
        return (
            np.concatenate([self.rep_topic, h.topic[self.has_f]]),
            np.concatenate([k, f]),
            np.concatenate([np.zeros(len(k), dtype=np.int64), np.ones(len(f), dtype=np.int64)]),
        )
