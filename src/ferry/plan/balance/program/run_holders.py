"""The brokers holding each topic of a run of topics, flat, for building the run's columns and rows at
once (:mod:`ferry.plan.balance.program.plain_topics`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress
from operator import itemgetter

import numpy as np

from ferry.plan.prepare.demand import TopicDemand, distinct_bases


@dataclass(frozen=True)
class Holders:
    """The brokers holding each topic of a run, flat: per entry its topic (index in the run),
    broker position and the topic's held, free, base and shed counts there."""

    topic: np.ndarray
    pos: np.ndarray
    held: np.ndarray
    free: np.ndarray
    base: np.ndarray
    shed: np.ndarray

    def joined(self, topic: np.ndarray, pos: np.ndarray, base: np.ndarray) -> tuple[Holders, np.ndarray]:
        """These entries and more of brokers holding nothing (``topic``, ``pos``, ``base``), by topic
        then position; and where each entry of the join (these first) went."""
        none = np.zeros(len(topic), dtype=np.int64)
        parts = [
            (self.topic, topic),
            (self.pos, pos),
            (self.held, none),
            (self.free, none),
            (self.base, base),
            (self.shed, none),
        ]
        joined = [np.concatenate(pair) for pair in parts]
        order = np.lexsort((joined[1], joined[0]))
        return Holders(*(values[order] for values in joined)), order

    @classmethod
    def of(cls, demands: Sequence[TopicDemand], brokers: int) -> Holders:
        span = range(brokers)
        where = [list(compress(span, d.held)) for d in demands]
        counts = np.fromiter(map(len, where), dtype=np.int64, count=len(where))
        topic = np.repeat(np.arange(len(demands)), counts)
        pos = np.fromiter(chain.from_iterable(where), dtype=np.int64, count=len(topic))
        getters = [_getter(w) for w in where]

        def pick(values: Iterable[tuple[int, ...]]) -> np.ndarray:
            return np.fromiter(
                chain.from_iterable(g(v) for g, v in zip(getters, values, strict=True)),
                dtype=np.int64,
                count=len(pos),
            )

        held = pick(d.held for d in demands)
        # A topic without pinned partitions or shrinking groups has one tuple for both.
        free = held if all(d.free is d.held for d in demands) else pick(d.free for d in demands)
        distinct, rows = distinct_bases(demands)
        return cls(topic, pos, held, free, distinct[rows[topic], pos], pick(d.shed for d in demands))


def _getter(where: list[int]) -> Callable[[tuple[int, ...]], Sequence[int]]:
    """The values at ``where`` of a tuple, as a sequence (``itemgetter`` alone gives a bare value
    for one position)."""
    if len(where) > 1:
        return itemgetter(*where)
    return lambda values: [values[i] for i in where]
