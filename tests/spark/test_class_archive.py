"""The class-data archive on a real JVM: the first `ferry plan` writes it, the next one starts from it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ferry.pipeline.archive import ENV_DIR


def plan_example(out: Path, archives: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, ENV_DIR: str(archives)}
    command = [sys.executable, "-m", "ferry", "plan", "--example", "--output-dir", str(out)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_first_spark_run_leaves_an_archive_the_next_one_uses(tmp_path: Path) -> None:
    archives = tmp_path / "cds"
    first = plan_example(tmp_path / "first", archives)
    assert first.returncode == 0, first.stderr
    written = sorted(p.name for p in archives.iterdir())
    assert len(written) == 1 and written[0].endswith(".jsa"), written
    assert (archives / written[0]).stat().st_size > 1 << 20
    second = plan_example(tmp_path / "second", archives)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in archives.iterdir()) == written
    for name in ("reassignment.json", "rollback.json"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()
    # The JVM's archive chatter stays out of the user's terminal.
    assert "cds" not in first.stderr.lower() and "cds" not in second.stderr.lower()
