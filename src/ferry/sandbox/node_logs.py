"""A sandbox node's logs: set aside before a restart, and read for why its JVM stopped."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ferry.sandbox import process
from ferry.sandbox.state import NodeState

_CONSOLE_LOG = "console.log"
# Console lines that explain a JVM's end: log4j errors, exceptions, the JVM's own out-of-memory exit
# ("Terminating due to java.lang.OutOfMemoryError") and its crash banner.
_ERROR_MARKS = (" ERROR ", "Exception", "OutOfMemoryError", "fatal error has been detected")


def console_log_of(home: Path) -> Path:
    """Where a node living in ``home`` writes what its JVM prints."""
    return home / _CONSOLE_LOG


def console_log(node: NodeState) -> Path:
    return console_log_of(Path(node.home))


def set_logs_aside(node: NodeState) -> None:
    """Move a node's logs to ``*.previous`` before it starts again.

    Both files are appended to, so without this the last error in them may be the old JVM's shutdown
    noise and a failed restart would be explained by the wrong incarnation.
    """
    for path in (Path(node.log_file), console_log(node)):
        with contextlib.suppress(FileNotFoundError):
            path.replace(path.with_name(path.name + ".previous"))


def exit_reason(node: NodeState) -> str:
    """Why the node's JVM stopped, so a failed start explains itself (CI keeps no sandbox files: the
    session wipes them).

    Kafka logs the cause as a FATAL line followed by the exception, then shuts down, and the shutdown
    logs errors of its own (fetchers cut off mid-request); so the first FATAL line wins over the last
    error. The JVM's own failures (no memory, bad options, a crash) reach only the console log, and a
    signal (the kernel's OOM killer, a stray kill) none: the wait status says so.
    """
    parts = (process.how_it_ended(node.pid), _logged_cause(node))
    found = "; ".join(p for p in parts if p)
    return f": {found}" if found else ""


def _logged_cause(node: NodeState) -> str:
    server = _lines(Path(node.log_file))
    for i, line in enumerate(server):
        if " FATAL " in line:
            cause = server[i + 1].strip() if i + 1 < len(server) else ""
            return _clipped(f"{line.strip()} {cause}")
    for lines in (_lines(console_log(node)), server):
        for line in reversed(lines):
            if any(mark in line for mark in _ERROR_MARKS) or line.startswith("Error"):
                return _clipped(line)
    return ""


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return []


def _clipped(text: str) -> str:
    return text.strip()[:400]
