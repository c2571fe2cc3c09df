"""``ferry execute`` in a subprocess, for tests that watch, stop or kill a run from outside."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path


def write_plan(path: Path, topic: str, targets: Mapping[int, Sequence[int]]) -> Path:
    """A reassignment JSON moving ``topic``'s partitions to ``targets``."""
    doc = {
        "version": 1,
        "partitions": [{"topic": topic, "partition": p, "replicas": list(r)} for p, r in targets.items()],
    }
    path.write_text(json.dumps(doc))
    return path


@contextmanager
def executing(plan: Path, bootstrap: str, journal: Path, *options: str) -> Iterator[subprocess.Popen[str]]:
    """``ferry execute`` running in the background; killed (and reaped) when the block ends."""
    command = [sys.executable, "-m", "ferry", "execute", "--plan", str(plan), "--bootstrap-server", bootstrap]
    command += ["--journal", str(journal), "--poll-interval", "0.5", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def succeeds(process: subprocess.Popen[str], timeout_s: float = 60.0) -> None:
    """Wait for ``process`` and fail with its stderr unless it exited 0."""
    code = process.wait(timeout=timeout_s)
    assert code == 0, f"ferry exited {code}: {process.stderr.read() if process.stderr else ''}"
