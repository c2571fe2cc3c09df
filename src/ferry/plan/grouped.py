"""Items laid out in consecutive groups (a topic's columns, a partition's replicas), with numpy:
where each group starts, each item's place in its group, and the indices a group spans."""

from __future__ import annotations

import numpy as np


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
