"""Starting, checking and stopping the sandbox's JVMs.

JVMs run in their own session so they outlive ``ferry sandbox up`` and a Ctrl-C in the shell that
started them. Before signalling a recorded pid we check that its command line still names the node's
properties file: pids get reused, and the sandbox must never kill a stranger's process.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from pathlib import Path

from ferry.errors import PreconditionError

_HOST = "127.0.0.1"
# Wait statuses of the JVMs this process started and has reaped, by pid: how a node ended (a signal
# leaves no line in its logs) is known only to the process that waits for it.
_ENDED: dict[int, int] = {}
EXITING_S = 2.0
"""Longest wait for a child of this process whose command line reads empty to become a zombie: the
kernel releases a process's memory (its command line then reads empty) before the process can be
waited for, a window that a loaded machine stretches: a child seen in it read as gone, never reaped,
and how it ended was lost (a test of a self-killed child failed so in a CI run)."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now (all held open while choosing).

    They come from below the kernel's ephemeral range: a port from that range, left free while its
    broker is stopped, can be taken as the source port of any outgoing connection, and the broker then
    cannot restart on it.
    """
    low = _ephemeral_floor()
    candidates = list(range(max(1024, low - 12_000), low))
    # Not seeded by the pid: one process starting one sandbox after another (the test suite) would
    # then pick the ports it has just released, in the same order, every time.
    random.Random().shuffle(candidates)
    with ExitStack() as stack:
        ports: list[int] = []
        for port in [*candidates, *([0] * count)]:
            if len(ports) == count:
                break
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                sock.bind((_HOST, port))
            except OSError:
                continue
            ports.append(int(sock.getsockname()[1]))
        return ports


def _ephemeral_floor() -> int:
    """The lowest port the kernel hands out as an ephemeral one (Linux; 32768 elsewhere)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def wait_released(ports: Sequence[int], lock_file: Path, *, timeout_s: float) -> str | None:
    """Wait until ``ports`` can be bound on 127.0.0.1 and no process holds ``lock_file``.

    A node restarted on its old port and data must not start while anything still holds them (its old
    JVM tearing down, a stranger on the port): Kafka would exit at once with a bind or lock error.
    Returns None once both are free, else what still holds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        busy = [f"port {p}" for p in ports if not _bindable(p)]
        if _locked(lock_file):
            busy.append(f"the lock {lock_file}")
        if not busy or time.monotonic() >= deadline:
            return ", ".join(busy) or None
        time.sleep(0.1)


def listening(port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection((_HOST, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the JVM binds its server sockets: a port whose old connections linger in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
    return True


def _locked(lock_file: Path) -> bool:
    """True while another process holds Kafka's lock on ``lock_file`` (Java locks with fcntl)."""
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:
        return False  # no lock file yet: nothing holds it
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock
    return False


def run_tool(argv: Sequence[str], timeout_s: float, what: str, *, hint: str | None = None) -> None:
    """Run a short-lived tool (a Java one, Maven) and raise PreconditionError if it fails.

    The message carries the tool's last non-empty output line: for both the JVM tools and Maven
    that is usually the one naming the failure.
    """
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise PreconditionError(f"{what} did not finish within {timeout_s:.0f} s", hint=hint) from exc
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        last = lines[-1] if lines else f"exit code {done.returncode}"
        raise PreconditionError(f"{what} failed: {last}", hint=hint)


def launch(argv: Sequence[str], console_log: Path) -> int:
    """Start a long-running JVM in its own session, detached from this process; return its pid.

    stdout and stderr go to ``console_log``: the JVM's own crash messages land there, the broker's
    log4j output goes to its ``server.log``. ``posix_spawn`` rather than ``Popen``: the sandbox
    outlives the Python object that would otherwise track (and warn about) the child.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(console_log), flags, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    pid = os.posix_spawn(argv[0], list(argv), dict(os.environ), file_actions=actions, setsid=True)
    _await_exec(pid, argv)
    return pid


def _await_exec(pid: int, argv: Sequence[str], timeout_s: float = 10.0) -> None:
    """Wait until child ``pid`` runs ``argv`` (or has ended).

    posix_spawn may return before the child has called exec; until then its command line is empty
    (measured: a few milliseconds for java), and :func:`is_running` would call a JVM that is
    starting dead — a node launched last and checked at once then "exited during startup".
    """
    expected = b"\0".join(os.fsencode(a) for a in argv) + b"\0"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == expected or _is_zombie(pid):
                return
        except OSError:
            return
        time.sleep(0.001)


def is_running(pid: int | None, marker: str) -> bool:
    """True when ``pid`` is alive and its command line contains ``marker``."""
    if pid is None:
        return False
    _reap(pid)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if marker.encode() in cmdline and not _is_zombie(pid):
        return True
    # It may have ended between the first look and this one (a zombie's command line is empty, and
    # so is an exiting one's before it is a zombie): reaped now, how it ended is known to
    # how_it_ended. Waited for only while its command line is empty (a pid reused by another node of
    # ours has that node's command line), and only if it is a child of ours (waitpid says at once).
    _reap(pid, EXITING_S if not cmdline else 0.0)
    return False


def stop(pid: int | None, marker: str, *, grace_s: float, hard: bool = False) -> None:
    """Stop JVM ``pid``: SIGTERM, then SIGKILL after ``grace_s`` (SIGKILL at once if ``hard``)."""
    if not is_running(pid, marker):
        return
    assert pid is not None  # is_running() is False for None
    _signal(pid, signal.SIGKILL if hard else signal.SIGTERM)
    if wait_exit([pid], marker_of={pid: marker}, timeout_s=grace_s):
        return
    _signal(pid, signal.SIGKILL)
    wait_exit([pid], marker_of={pid: marker}, timeout_s=10.0)


def wait_exit(pids: Sequence[int], *, marker_of: dict[int, str], timeout_s: float) -> bool:
    """Wait until none of ``pids`` runs; True if they all exited within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p in pids if is_running(p, marker_of[p])]
        if not alive:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def signal_all(pids: Sequence[int], sig: signal.Signals) -> None:
    """Send ``sig`` to every pid, ignoring those already gone."""
    for pid in pids:
        _signal(pid, sig)


def _signal(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)


def _reap(pid: int, settle_s: float = 0.0) -> None:
    """Reap ``pid`` if it is a child of ours that ended, waiting up to ``settle_s`` for it to end.

    A JVM started by this very process stays a zombie until waited for; reaped, it reads dead."""
    deadline = time.monotonic() + settle_s
    while True:
        try:
            reaped, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return  # not a child of this process, or reaped already
        if reaped:
            _ENDED[pid] = status
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(0.001)


def how_it_ended(pid: int | None) -> str:
    """How JVM ``pid``, started and reaped by this process, ended ("killed by SIGKILL", "exit code
    1"); empty when unknown: still running, or started by another process."""
    status = _ENDED.get(pid) if pid is not None else None
    if status is None:
        return ""
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    # The state letter follows the parenthesised command name, which may itself contain spaces.
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"
