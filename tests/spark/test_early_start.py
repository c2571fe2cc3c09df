"""`ferry plan` from a big snapshot on Spark: the JVM starts while the snapshot loads. The plan, the
output and the errors are those of a plan that starts Spark once the snapshot is read.

The runs are subprocesses, as in test_session_errors.py: in this process a session already runs,
and ferry would use it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from support.clusters import generated
from support.plan_files import plan_files

from ferry.cli.engines import EARLY_FROM_BYTES
from ferry.formats.sources import write_any
from ferry.pipeline.early_session import SparkStart


def ferry(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "FERRY_LOG_DIR": str(tmp_path / "logs")}
    command = [sys.executable, "-m", "ferry", *args]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=240, check=False)


def big_snapshot(path: Path) -> Path:
    """25,000 partitions: a JSON snapshot big enough to be read while Spark starts."""
    write_any(generated(brokers=24, racks=3, topics=100, partitions=250, rf=3, seed=3, skew=1.0), path)
    assert path.stat().st_size >= EARLY_FROM_BYTES
    return path


def test_a_big_snapshot_on_spark_gives_the_local_engines_files_and_output(tmp_path: Path) -> None:
    snapshot = big_snapshot(tmp_path / "big.json")
    done = {
        engine: ferry(
            tmp_path,
            "plan",
            "--snapshot",
            str(snapshot),
            "--engine",
            engine,
            "--output-dir",
            str(tmp_path / engine),
        )
        for engine in ("spark", "local")
    }
    assert done["spark"].returncode == 0, done["spark"].stderr
    assert done["local"].returncode == 0, done["local"].stderr
    assert plan_files(tmp_path / "spark") == plan_files(tmp_path / "local")
    # Nothing of the JVM's in ferry's output: the start pointed it at the log while the load ran.
    spark_out = done["spark"].stdout.replace(str(tmp_path / "spark"), "OUT")
    assert spark_out == done["local"].stdout.replace(str(tmp_path / "local"), "OUT")
    assert done["spark"].stderr == done["local"].stderr == ""


def test_a_big_snapshot_that_does_not_parse_is_one_line_while_spark_starts(tmp_path: Path) -> None:
    text = big_snapshot(tmp_path / "big.json").read_text(encoding="utf-8")
    broken = tmp_path / "broken.json"
    broken.write_text(text[:-10], encoding="utf-8")  # cut short: as big, and no JSON
    done = ferry(tmp_path, "plan", "--snapshot", str(broken), "--output-dir", str(tmp_path / "out"))
    assert done.returncode == 3, done.stderr
    [error] = [line for line in done.stderr.splitlines() if line.startswith("ferry: error: ")]
    assert str(broken) in error
    assert "\tat " not in done.stderr and done.stdout == ""
    assert not (tmp_path / "out").exists()
    # The JVM had started beside the load (its log is there), and was stopped before the error.
    assert [p.name.startswith("spark-") for p in (tmp_path / "logs").iterdir()] == [True]


def test_a_session_this_thread_runs_is_used_and_left_running(spark: SparkSession) -> None:
    with SparkStart(None) as started:
        assert started.session() is spark
    assert spark.range(3).count() == 3
