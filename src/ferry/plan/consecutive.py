"""Items laid out in consecutive groups (a topic's columns, a partition's replicas), with numpy:
where each group starts, each item's place in its group, the indices a group spans, the runs of
equal keys; and items cut into groups (lists per group, tuples of a size)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def starts(counts: np.ndarray) -> np.ndarray:
    """Where each of consecutive groups of ``counts`` items starts."""
    out: np.ndarray = np.cumsum(counts) - counts
    return out


def rank(group: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each item's place in its group: ``group`` per item (sorted), ``counts`` items per group."""
    out: np.ndarray = np.arange(len(group)) - starts(counts)[group]
    return out


def spans(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``first[g], first[g] + 1, ...`` for ``counts[g]`` items of each group ``g`` in turn."""
    group = np.repeat(np.arange(len(counts)), counts)
    out: np.ndarray = first[group] + rank(group, counts)
    return out


def runs(keys: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of equal values in ``keys`` (sorted, so each value is one run)."""
    if not len(keys):
        return []
    begins = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]).tolist()
    return list(zip(begins, [*begins[1:], len(keys)], strict=True))


def per_group(items: list[T], group: np.ndarray, groups: int) -> list[list[T]]:
    """``items`` (sorted by ``group``) cut into one list per group, ``groups`` of them."""
    ends = np.cumsum(np.bincount(group, minlength=groups)).tolist()
    return [items[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def batched(items: Iterable[T], size: int) -> Iterator[tuple[T, ...]]:
    """``items`` in tuples of ``size`` (the last one shorter)."""
    it = iter(items)
    while chunk := tuple(islice(it, size)):
        yield chunk


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array, sorted: ``np.unique(values)`` by sorting. Asked for the
    values alone, numpy 2.4's ``np.unique`` goes through a hash table, which on millions of distinct
    integers (the columns of a 1M-partition balance program) takes about a hundred times as long."""
    out = np.sort(values)
    if len(out):
        out = out[np.r_[True, out[1:] != out[:-1]]]
    return out


def all_distinct(values: np.ndarray) -> bool:
    """Whether no value of a 1-D array repeats (by sorting: :func:`distinct`)."""
    ordered = np.sort(values)
    return bool(np.all(ordered[1:] != ordered[:-1]))
