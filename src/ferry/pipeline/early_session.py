"""A Spark session started in a thread of its own while the command reads its snapshot and balances it."""

from __future__ import annotations

import os
import sys
import threading
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ferry.pipeline.session import (
    SessionSettings,
    expected_slots,
    plan_session,
    spark_defaults,
    spark_session,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class SparkStart:
    """The Spark session of one command, started in a thread of its own while this process reads
    the snapshot and works out the balance (:mod:`ferry.pipeline.job` waits for it beside the
    balance programs, to cut the partitions into buckets, and its own thread only at the placing
    pass): the JVM's start and its Python workers' (seconds, more on a busy
    machine) overlap the load and the driver's own work (seconds each for a million partitions).
    Closed (the session stopped) when the block ends; a start that failed raises its error where
    the session is asked for, so a bad snapshot still reports the snapshot's error."""

    master: str | None
    debug: bool = False
    fast_start: bool = True
    _opened: AbstractContextManager[SparkSession] | None = None
    _spark: SparkSession | None = None
    _error: BaseException | None = None
    _thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self._spark = running_session()
        self._thread = threading.Thread(target=self._start, name="spark-start", daemon=True)
        if self._spark is None:
            self._thread.start()

    def _start(self) -> None:
        behind_the_driver()
        try:
            opened = spark_session(plan_session(self.master, debug=self.debug, fast_start=self.fast_start))
            self._spark = opened.__enter__()
            self._opened = opened
        except BaseException as exc:  # raised in the command's thread, by session()
            self._error = exc
            return
        # Imported in this thread: the module brings pyspark.sql and the planner (about 0.3 s),
        # which the command's own thread would otherwise import before its load begins.
        from ferry.pipeline.transforms import warm_workers

        # A head start, nothing more: the placing pass starts the workers it needs itself and
        # reports, in ferry's words, what fails there.
        with suppress(Exception):
            warm_workers(self._spark)

    @property
    def slots(self) -> int | None:
        """The task slots the session will have, where that is known before it is up
        (:func:`~ferry.pipeline.session.expected_slots`)."""
        return expected_slots(SessionSettings(master=self.master), os.environ, spark_defaults(os.environ))

    def session(self) -> SparkSession:
        """The started session, once it is up; raises what stopped it from starting."""
        if self._thread.is_alive():
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._spark is not None
        return self._spark

    def __enter__(self) -> SparkStart:
        return self

    def __exit__(self, *exc_info: object) -> None:
        # Waited for even when the command failed: the start points this process's output at the
        # JVM's log for a moment (ferry.pipeline.session.jvm_output), and the error must not go there.
        if self._thread.is_alive():
            self._thread.join()
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.__exit__(None, None, None)


def running_session() -> SparkSession | None:
    """The session this thread already runs (a notebook's, a test suite's), used as it is and left
    running, as :func:`ferry.pipeline.session.spark_session` does; the thread that starts one
    would not see it (Spark's active session is per thread)."""
    if "pyspark.sql" not in sys.modules:  # never imported: nothing runs
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


NICENESS = 10
"""How far the thread that starts Spark lowers its scheduling priority (:func:`behind_the_driver`)."""


def behind_the_driver() -> None:
    """Lower the calling thread's scheduling priority by :data:`NICENESS`, on Linux.

    There the nice value belongs to a thread, not to the process, and a process started from a
    thread begins with that thread's: the JVM this thread starts, and the Python workers that JVM
    forks, then take the cores the driver leaves idle while it reads the snapshot and solves the
    balance program, instead of halving its share of them. Spark's stages run while the driver
    waits for them, with nothing of this process's to yield to. Elsewhere (a per-process nice
    value), and where the system refuses, nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    with suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + NICENESS)
