"""The class-data archive on a real JVM: the first `ferry plan` writes it, the next one starts from it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ferry.pipeline.archive import ENV_DIR


def plan_example(out: Path, archives: Path, conf: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, ENV_DIR: str(archives)}
    if conf is not None:
        env["SPARK_CONF_DIR"] = str(conf)
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


def test_a_conf_folder_with_files_means_no_archive_and_no_jvm_error(tmp_path: Path) -> None:
    """Spark's launcher puts SPARK_CONF_DIR on the class path, and the JVM cannot archive a class path
    with a folder that holds files: it used to fail at every exit with an error in the terminal."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.sql.shuffle.partitions 8\n")
    archives = tmp_path / "cds"
    done = plan_example(tmp_path / "out", archives, conf)
    assert done.returncode == 0, done.stderr
    assert "Error occurred" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert not archives.exists() or not any(archives.iterdir())
    assert (tmp_path / "out" / "reassignment.json").is_file()
