"""Which requests have a live executor: one advisory lock file per request, next to the journal.

A request's state says ``running`` both while its executor works and after that executor was
killed (``kill -9`` leaves no chance to write anything). ``resume`` and ``verify`` must tell the two
apart, so the executor holds an exclusive ``flock`` on ``<journal>.locks/request-<id>`` while it
runs: the kernel releases it when the process dies, however it dies. ``flock`` (not ``lockf``)
because its locks belong to the open file, so two runs in one process exclude each other too.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ferry.errors import PreconditionError


def _lock_path(journal: Path, request_id: int) -> Path:
    return journal.with_name(journal.name + ".locks") / f"request-{request_id}"


@contextmanager
def holding(journal: Path, request_id: int) -> Iterator[None]:
    """Hold request ``request_id``'s lock for the block.

    Raises:
        PreconditionError: another live process holds it (an executor is running the request).
    """
    path = _lock_path(journal, request_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PreconditionError(
                f"request {request_id} is being run by another ferry process",
                hint="wait for it, or stop that process first",
            ) from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def is_live(journal: Path, request_id: int) -> bool:
    """Whether a live process holds request ``request_id``'s lock right now."""
    path = _lock_path(journal, request_id)
    if not path.exists():
        return False
    try:
        with holding(journal, request_id):
            return False
    except PreconditionError:
        return True
