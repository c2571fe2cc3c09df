"""Per-item work of the planner spread over forked copies of this process, one per core, or one per
item for a few large items.

Placing a topic (:mod:`ferry.plan.place.placement`) and the exact pass's small flows
(:mod:`ferry.plan.balance.repair.kept_flow`) are the planner's own Python, and OR-Tools keeps the
interpreter while it solves: threads take turns on one core. A forked child sees every object the
parent built (copied only where it writes), works through its own share of the items and sends
back only the answers, pickled; the parent works through the first share meanwhile. The answers
are those of one process doing all the items in order: each item's work must read only what was
there before the split and change nothing the parent reads afterwards (a child's changes stay in
the child).

:func:`forked_each` gives each of a few large items a child of its own, all at once, however
many cores there are: a min-cost flow's parts. :func:`aside` starts one piece of work in a child
the same way, to be collected later: what the planner can count while it solves the balance
program, whose flow keeps one core.

A child that fails (killed, out of memory, an exception) costs time, never the answer: the parent
does that share itself. Where this platform cannot fork safely, on one core, inside a child, or
for work too small to pay for a fork, everything runs here, in order.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import sys
from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import TypeVar

R = TypeVar("R")

SPREAD_FROM = 20_000
"""Least total weight (partitions) worth a fork: a fork and the pickled answers cost a few
milliseconds per hundred thousand partitions, placing them about a second."""

_CHILD = False
"""Set in a forked child: its work is its own share, run in order (no fork of a fork)."""


def cores() -> int:
    """The cores this process may run on (all of the machine's where the platform cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def forked_map(work: Callable[[int], R], weights: Sequence[int]) -> list[R]:
    """``[work(i) for i in range(len(weights))]``, the items cut into one run per core of about
    equal ``weights`` (each item's expected cost), every run after the first in a forked child;
    see the module docstring."""
    runs = _runs(weights, cores())
    if len(runs) < 2 or sum(weights) < SPREAD_FROM or _CHILD or not _can_fork():
        return [work(i) for i in range(len(weights))]
    return _spread(work, runs, 0)


def forked_each(work: Callable[[int], R], count: int) -> list[R]:
    """``[work(i) for i in range(count)]``, every item but the last in a forked child of its own,
    all at once, the last here meanwhile; see the module docstring.

    For a few large items that may outnumber the cores (the parts of a min-cost flow,
    :mod:`ferry.plan.balance.solvers.flow_parts`). The cores share what runs, so the last item ends
    after about the items' total work over the cores, or the largest item's where that is longer;
    cut into one run per core at item boundaries, three equal items on two cores end after two
    items' work, a third more. Each child holds its item's work in memory at once. No weight is
    too small here: the caller forks only for items worth it."""
    if count < 2 or cores() < 2 or _CHILD or not _can_fork():
        return [work(i) for i in range(count)]
    return _spread(work, [range(i, i + 1) for i in range(count)], count - 1)


def _spread(work: Callable[[int], R], runs: list[range], here: int) -> list[R]:
    """``work`` over every item of ``runs``, run ``here`` in this process and every other run in a
    forked child of its own, all at once; the answers in the items' order, a failed child's run
    done here."""
    children = {j: _start(work, run) for j, run in enumerate(runs) if j != here}
    mine = [work(i) for i in runs[here]]
    out: list[R] = []
    for j, run in enumerate(runs):
        answers: list[R] | None = mine if j == here else _collect(children[j])
        out += [work(i) for i in run] if answers is None else answers
    return out


def aside(work: Callable[[], R], weight: int) -> Callable[[], R]:
    """``work()`` started now in a forked child, for work that reads only what is there already and
    changes nothing; the call returned gives its answer, waiting for the child. Where a fork does
    not pay (one core, inside a child, ``weight`` under :data:`SPREAD_FROM`) or the child gives no
    answer, that call runs ``work()`` here instead.

    For work the planner's serial stretch can hide: OR-Tools keeps the interpreter while it solves
    the balance program, and the other cores are idle then."""
    if cores() < 2 or weight < SPREAD_FROM or _CHILD or not _can_fork():
        return work
    child = _start(lambda _: work(), range(1))

    def answer() -> R:
        answers: list[R] | None = _collect(child)
        return work() if answers is None else answers[0]

    return answer


def _runs(weights: Sequence[int], parts: int) -> list[range]:
    """``range(len(weights))`` cut into at most ``parts`` consecutive, non-empty runs of about
    equal weight."""
    total = sum(weights)
    if parts < 2 or len(weights) < 2 or total <= 0:
        return [range(len(weights))]
    # Running totals, scaled by ``parts`` so that the k-th cut compares whole numbers.
    ends = [end * parts for end in accumulate(weights)]
    cuts, start = [], 0
    for k in range(1, parts):
        # The first item whose running total reaches k parts of the whole ends the run.
        stop = bisect_left(ends, total * k, lo=start) + 1
        if start < stop < len(weights):
            cuts.append(range(start, stop))
            start = stop
    cuts.append(range(start, len(weights)))
    return cuts


def _can_fork() -> bool:
    # Not on macOS: its system libraries are not safe in a forked child (CPython starts processes
    # there by spawning, for that reason).
    return sys.platform != "darwin" and "fork" in multiprocessing.get_all_start_methods()


_Child = tuple[int, int]
"""A child's process id and the read end of its pipe."""


def _start(work: Callable[[int], R], run: range) -> _Child | None:
    """Fork a child that does ``run`` and writes its answers, pickled, to a pipe; ``None`` where
    the fork itself failed."""
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid:
        os.close(write)
        return pid, read
    # The child: never returns. os._exit skips the parent's exit handlers and buffers, inherited.
    global _CHILD
    _CHILD = True
    # A collection walks every object alive and so writes to every page the child shares with its
    # parent (the reference counts), copying them all: a child lives for its share alone.
    gc.disable()
    code = 1
    try:
        os.close(read)
        data = pickle.dumps([work(i) for i in run], protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write, "wb") as pipe:
            pipe.write(data)
        code = 0
    finally:
        os._exit(code)


def _collect(child: _Child | None) -> list[R] | None:
    """The answers of ``child``, or ``None`` where it gave none (the parent then does its run)."""
    if child is None:
        return None
    pid, read = child
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        # Reaped already (a process that ignores SIGCHLD): a whole pickle says it finished.
        status = 0
    if status != 0 or not data:
        return None
    try:
        answers: list[R] = pickle.loads(data)
    except (pickle.UnpicklingError, EOFError):
        return None
    return answers
