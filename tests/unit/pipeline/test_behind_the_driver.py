"""The thread that starts Spark runs behind the driver: what it starts is niced, the driver is not."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from ferry.pipeline.early_session import NICENESS, behind_the_driver

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread: Linux")


def child_niceness() -> int:
    """The nice value of a process started from the calling thread."""
    child = [sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"]
    return int(subprocess.run(child, capture_output=True, text=True, timeout=30, check=True).stdout)


def test_a_process_started_behind_the_driver_runs_lower_and_the_driver_does_not() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: dict[str, int] = {}

    def start() -> None:
        behind_the_driver()
        seen["child"] = child_niceness()

    thread = threading.Thread(target=start)
    thread.start()
    thread.join(timeout=60)
    assert seen["child"] == min(before + NICENESS, 19)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
    assert child_niceness() == before, "a process the driver's own thread starts keeps its priority"
