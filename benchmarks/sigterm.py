"""SIGTERM as ``SystemExit``, for the benchmarks that start a sandbox.

Python's default for SIGTERM ends the process at once, skipping the ``finally`` that stops the
sandbox: a benchmark stopped with ``kill`` left its brokers' JVMs running. As ``SystemExit`` it
unwinds like Ctrl-C does, and the sandbox is stopped.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


def exit_on_sigterm() -> None:
    """From now on a SIGTERM raises ``SystemExit(143)`` in the main thread."""

    def _exit(signum: int, _frame: FrameType | None) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
