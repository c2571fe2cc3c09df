"""Where each topic of a run built at once (:mod:`ferry.plan.balance.program.plain_topics`) has its
columns: its extras on the brokers holding it, its pooled columns per rack
(:mod:`ferry.plan.balance.program.pools`), then those of its pinned partitions and holder rows
(:mod:`ferry.plan.balance.program.pinned_run`). Pools are laid out per topic and group of brokers
(:mod:`ferry.plan.balance.program.pool_groups`): a topic x (racks x 3) array, most of it 0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ferry.plan.balance.program.pinned_run import PinnedRun
from ferry.plan.balance.program.pool_groups import EVERY, LOADED, OTHERS, PER_RACK
from ferry.plan.balance.program.pools import pool_width
from ferry.plan.balance.program.run_holders import Holders
from ferry.plan.balance.program.state import ProgramState
from ferry.plan.consecutive import rank, spans, starts


@dataclass(frozen=True)
class PooledColumns:
    """The run's pools (topic in the run, group of brokers), and every pooled column with its
    pool's topic and rack."""

    topic: np.ndarray
    group: np.ndarray
    cols: np.ndarray
    col_topic: np.ndarray
    col_rack: np.ndarray

    @classmethod
    def of(cls, pool: np.ndarray, pool_count: np.ndarray) -> PooledColumns:
        """From the first pooled column and the count of each (topic, group)."""
        topic, group = np.nonzero(pool_count)
        count = pool_count[topic, group]
        every = spans(pool[topic, group], count)
        return cls(topic, group, every, np.repeat(topic, count), np.repeat(group // PER_RACK, count))


@dataclass(frozen=True)
class RunLayout:
    """Where each topic's columns are: its extras ``x`` (per holder entry that has one), then per
    group of brokers its pooled columns (:func:`~ferry.plan.balance.program.pools.pool_columns`)."""

    x: np.ndarray
    """Per holder entry with an extra, its column."""
    x_topic: np.ndarray
    first: np.ndarray
    """Per topic, its first column."""
    count: np.ndarray
    """Per topic, its columns."""
    pool: np.ndarray
    """Per topic and group, the first pooled column (-1: none)."""
    pool_count: np.ndarray
    """Per topic and group, 0 to 3 pooled columns."""
    idle: np.ndarray
    """Per topic and group, brokers of an open rack idle for the topic
    (:mod:`ferry.plan.balance.program.pools`) that its pool there stands for."""
    x_in: np.ndarray
    """Per topic and rack, its extras on holders."""
    most: np.ndarray
    """Per topic and group, the most extras the program lets its pool take (its topic's)."""
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
        whether it is open to extras; per topic the most its pools may take."""
        rack, is_x, opened, most = entries
        topics, racks = opened.shape
        x_topic = h.topic[is_x]
        x_key = x_topic * racks + rack[is_x]
        x_in = np.bincount(x_key, minlength=topics * racks).reshape(topics, racks)
        groups = program.groups
        x_loaded = np.bincount(x_key[groups.is_loaded[h.pos[is_x]]], minlength=topics * racks)
        apart = opened & groups.apart[None, :]
        size = groups.size.reshape(racks, PER_RACK)
        idle = _idle(size, opened, apart, (x_in, x_loaded.reshape(x_in.shape)))
        most = np.repeat(most[:, None], racks * PER_RACK, axis=1)
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

    def per_rack(self, values: np.ndarray) -> np.ndarray:
        """Per topic and rack, ``values`` (per topic and group) of its groups added up."""
        out: np.ndarray = values.reshape(len(values), -1, PER_RACK).sum(axis=2)
        return out


def _idle(
    size: np.ndarray, opened: np.ndarray, apart: np.ndarray, x_in: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """Per topic and group, its brokers idle for the topic: every broker of an open rack but those
    with extras, or where the rack's loaded brokers are pooled ``apart``, those of each kind.
    ``size``: per rack and kind its brokers; ``x_in``: per topic and rack the extras on holders, and on loaded
    ones."""
    everywhere, loaded = x_in
    idle = np.zeros((*opened.shape, PER_RACK), dtype=np.int64)
    idle[:, :, EVERY] = np.where(opened & ~apart, size[None, :, EVERY] - everywhere, 0)
    idle[:, :, OTHERS] = np.where(apart, size[None, :, OTHERS] - (everywhere - loaded), 0)
    idle[:, :, LOADED] = np.where(apart, size[None, :, LOADED] - loaded, 0)
    return idle.reshape(len(opened), -1)
