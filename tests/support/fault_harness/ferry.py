"""ferry commands as child processes the harness can wait for, or kill -9 at any moment."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from ferry.execute.journal import Journal
from ferry.execute.records import RequestRecord

COMMAND_TIMEOUT_S = 240.0


class FerryRunner:
    """Runs ``python -m ferry VERB ...`` against one cluster and one journal; keeps every exit code."""

    def __init__(self, bootstrap: str, journal: Path, workdir: Path) -> None:
        self.bootstrap = bootstrap
        self.journal = journal
        self._workdir = workdir
        self._live: list[subprocess.Popen[str]] = []
        self._lock = threading.Lock()
        self.exits: list[tuple[str, int]] = []
        self.errors: list[str] = []

    def start(self, verb: str, *args: str, connect: bool = True) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "ferry", verb, *args, "--journal", str(self.journal)]
        if connect:
            command += ["--bootstrap-server", self.bootstrap]
        log = (self._workdir / f"{len(self.exits) + len(self._live)}-{verb}.log").open("w")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
        log.close()
        with self._lock:
            self._live.append(process)
        return process

    def finish(self, process: subprocess.Popen[str], verb: str) -> int:
        """Wait for ``process`` (killed after the command timeout) and record its exit code."""
        try:
            code = process.wait(COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait(30)
            self.errors.append(f"ferry {verb} still running after {COMMAND_TIMEOUT_S:.0f} s: killed")
        with self._lock:
            self._live.remove(process)
        self.exits.append((verb, code))
        return code

    def run(self, verb: str, *args: str, connect: bool = True) -> int:
        return self.finish(self.start(verb, *args, connect=connect), verb)

    def kill_all(self) -> int:
        """kill -9 every ferry process running now; how many there were."""
        with self._lock:
            live = [p for p in self._live if p.poll() is None]
        for process in live:
            process.kill()
        return len(live)

    def running(self) -> bool:
        with self._lock:
            return any(p.poll() is None for p in self._live)

    def requests(self) -> tuple[RequestRecord, ...]:
        if not self.journal.exists():
            return ()
        with Journal.open(self.journal) as journal:
            return journal.requests()

    def wait_for_request(self, request_id: int, timeout_s: float = 60.0) -> bool:
        """Whether request ``request_id`` is in the journal within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(r.id == request_id for r in self.requests()):
                return True
            time.sleep(0.2)
        return False

    def resume_unfinished(self, attempts: int = 3) -> None:
        """``ferry resume`` every request the journal does not show ended, until none is left."""
        for _ in range(attempts):
            unfinished = [r.id for r in self.requests() if not r.state.is_final]
            if not unfinished:
                return
            for request_id in unfinished:
                self.run("resume", str(request_id), connect=False)
        left = [r.id for r in self.requests() if not r.state.is_final]
        if left:
            self.errors.append(f"requests {left} unfinished after {attempts} resumes")
