"""Where each topic of a run built at once (:mod:`ferry.plan.balance.program.plain_topics`) has its
columns: its extras on the brokers holding it, its pooled columns per rack
(:mod:`ferry.plan.balance.program.pools`), then those of its pinned partitions and holder rows
(:mod:`ferry.plan.balance.program.pinned_run`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ferry.plan.balance.program.pinned_run import PinnedRun
from ferry.plan.balance.program.pools import pool_width
from ferry.plan.balance.program.run_holders import Holders
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.consecutive import rank, spans, starts


@dataclass(frozen=True)
class PooledColumns:
    """The run's pools (topic in the run, rack), and every pooled column with its pool's topic
    and rack."""

    topic: np.ndarray
    rack: np.ndarray
    cols: np.ndarray
    col_topic: np.ndarray
    col_rack: np.ndarray

    @classmethod
    def of(cls, pool: np.ndarray, pool_count: np.ndarray) -> PooledColumns:
        """From the first pooled column and the count of each (topic, rack)."""
        topic, rack = np.nonzero(pool_count)
        count = pool_count[topic, rack]
        every = spans(pool[topic, rack], count)
        return cls(topic, rack, every, np.repeat(topic, count), np.repeat(rack, count))


@dataclass(frozen=True)
class RunLayout:
    """Where each topic's columns are: its extras ``x`` (per holder entry that has one), then per
    rack its pooled columns (:func:`~ferry.plan.balance.program.pools.pool_columns`)."""

    x: np.ndarray
    """Per holder entry with an extra, its column."""
    x_topic: np.ndarray
    first: np.ndarray
    """Per topic, its first column."""
    count: np.ndarray
    """Per topic, its columns."""
    pool: np.ndarray
    """Per topic and rack, the first pooled column (-1: none)."""
    pool_count: np.ndarray
    """Per topic and rack, 0 to 3 pooled columns."""
    idle: np.ndarray
    """Per topic and rack, brokers of an open rack idle for the topic
    (:mod:`ferry.plan.balance.program.pools`)."""
    x_in: np.ndarray
    """Per topic and rack, its extras on holders."""
    most: np.ndarray
    """Per topic and rack, the most extras the program lets its pool take (its topic's)."""
    pooled: PooledColumns
    tail: np.ndarray
    """Per topic, the first column of its pinned partitions and holder rows (a pinned run's)."""

    @classmethod
    def of(
        cls,
        program: ProgramState,
        h: Holders,
        entries: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        tail: PinnedRun | None,
    ) -> RunLayout:
        """``entries``: per holder entry its rack and whether it has an extra; per topic and rack
        whether it is open to extras, and the most its pool may take."""
        rack, is_x, opened, most = entries
        topics, racks = opened.shape
        sizes = np.asarray(program.layout.sizes, dtype=np.int64)
        x_topic = h.topic[is_x]
        x_in = np.bincount(x_topic * racks + rack[is_x], minlength=topics * racks).reshape(topics, racks)
        idle = np.where(opened, sizes[None, :] - x_in, 0)
        pool_count = pool_width(idle, most)
        n_x = x_in.sum(axis=1)
        plain = n_x + pool_count.sum(axis=1)
        count = plain if tail is None else plain + tail.col_count
        first = len(program.upper) + starts(count)
        x = first[x_topic] + rank(x_topic, n_x)
        pool_at = (first + n_x)[:, None] + np.cumsum(pool_count, axis=1) - pool_count
        pool = np.where(pool_count > 0, pool_at, -1)
        pooled = PooledColumns.of(pool, pool_count)
        return cls(x, x_topic, first, count, pool, pool_count, idle, x_in, most, pooled, first + plain)
