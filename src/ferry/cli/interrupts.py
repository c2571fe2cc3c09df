"""Ctrl-C and SIGTERM while ``ferry execute`` / ``ferry resume`` runs: stop the run, never its cleanup.

The first SIGINT or SIGTERM raises :class:`KeyboardInterrupt` in the main thread, wherever the
executor is, so its ``finally`` restores the throttle configs and marks the request interrupted;
``main`` then exits 130. An operator who sees nothing happen for a moment presses Ctrl-C again,
and supervisors follow SIGTERM with another: raised in the middle of the restore, that second
interrupt would leave throttles behind, the one thing ferry promises never to do. So:

* once an interrupt has been raised, later signals are only *noted*: a line on stderr says that
  ferry is cleaning up and to wait;
* while the executor cleans up (inside :meth:`Interrupts.shielded`), a first signal is noted as
  well, and raised when the cleanup is over, so the run still stops there.

SIGKILL cannot be caught; the journal keeps the throttles a killed executor applied, and
``ferry resume`` or ``ferry verify`` restores them.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)

WAIT_MESSAGE = "ferry: cleaning up (restoring throttle configs), please wait\n"


def _write_stderr(text: str) -> None:
    # os.write, not print: a signal handler runs between two bytecodes of the main thread, which
    # may be inside sys.stderr's buffered writer already (print would then fail as re-entrant).
    os.write(sys.stderr.fileno(), text.encode())


class Interrupts:
    """SIGINT and SIGTERM handlers for one run; a context manager that installs and removes them.

    Args:
        write: where the "please wait" line goes (stderr; tests collect it).
    """

    def __init__(self, write: Callable[[str], None] = _write_stderr) -> None:
        self._write = write
        self._previous: dict[int, Any] = {}
        self._shield_depth = 0
        self._raised = False
        self.noted: list[int] = []
        """Signals that arrived while cleaning up, in order (not raised when they came)."""

    def __enter__(self) -> Interrupts:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._raised or self._shield_depth:
            self.noted.append(signum)
            self._write(WAIT_MESSAGE)
            return
        self._raised = True
        raise KeyboardInterrupt(f"signal {signum}")

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """Hold signals back while the block runs; one that came meanwhile is raised at its end.

        Only when the block ends normally and nothing was raised before: when the run was
        interrupted already, the interruption on its way out stands for every later signal.
        """
        self._shield_depth += 1
        try:
            yield
        finally:
            self._shield_depth -= 1
        if self.noted and not self._raised and not self._shield_depth:
            self._raised = True
            raise KeyboardInterrupt(f"signal {self.noted[0]}, held back until the cleanup was done")
