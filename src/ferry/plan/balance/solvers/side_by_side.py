"""Independent programs solved side by side on the cores this process may use.

HiGHS lets go of the interpreter while it solves, so threads overlap one program's solve with the
next one's build in Python; the answers come back in the order the work was given, whatever order
the threads finish in. Work already running side by side (a chunk of the exact pass whose program
falls apart into parts) runs its own items one after the other: the cores are taken.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ferry.plan.forked import cores

T = TypeVar("T")
R = TypeVar("R")


_WORKER = threading.local()
"""``inside`` is set in the threads :func:`side_by_side` runs work in."""


def side_by_side(work: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``work`` of each of ``items``, in their order, as many at once as there are cores (one after
    the other inside work that already runs side by side)."""
    workers = min(len(items), cores())
    if workers <= 1 or getattr(_WORKER, "inside", False):
        return [work(item) for item in items]

    def in_worker(item: T) -> R:
        _WORKER.inside = True
        return work(item)

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(in_worker, items))
