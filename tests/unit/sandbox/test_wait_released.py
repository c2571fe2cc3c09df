"""``wait_released``: a node restarts only once its ports and data lock are free."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ferry.sandbox.process import free_ports, wait_released

pytestmark = pytest.mark.unit

_HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


def test_free_ports_and_no_lock_file_are_released_at_once(tmp_path: Path) -> None:
    assert wait_released(free_ports(2), tmp_path / ".lock", timeout_s=0) is None


def test_a_listening_port_is_reported(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert wait_released([port], tmp_path / ".lock", timeout_s=0.2) == f"port {port}"


def test_a_lock_held_by_another_process_is_reported_until_it_is_dropped(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        assert wait_released([], lock, timeout_s=0.2) == f"the lock {lock}"
    finally:
        holder.communicate(timeout=10)  # closing stdin lets it exit, which drops the lock
    assert wait_released([], lock, timeout_s=0) is None
