"""The fleet job on a real distributed engine: a Spark standalone master and worker on 127.0.0.1.

The job runs in a ``ferry`` subprocess (a process holds one SparkContext, and this test process
already holds the local one) against ``spark://127.0.0.1:PORT``; its files must equal local mode's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from standalone import client_conf_dir, standalone_cluster
from support.clusters import generated
from support.plan_files import plan_files

from ferry.cli.main import main
from ferry.formats.sources import write_any

JOB_TIMEOUT_S = 300


@pytest.mark.usefixtures("spark")
@pytest.mark.timeout(JOB_TIMEOUT_S + 200)
def test_fleet_job_on_a_standalone_cluster_equals_local_mode(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    for i in range(5):
        # Three clusters go through the topic passes; the two small ones are planned whole, a task each.
        topics, parts = (6, 12) if i < 3 else (2, 5)
        snapshot = generated(brokers=9, racks=3, topics=topics, partitions=parts, rf=3, seed=20 + i, skew=1.0)
        write_any(snapshot, fleet / f"cluster-{i}" if i else fleet / f"cluster-{i}.json")
    local = tmp_path / "local"
    assert main(["plan", "--fleet", str(fleet), "--output-dir", str(local)]) == 0  # the local[2] session
    remote = tmp_path / "remote"
    with standalone_cluster(tmp_path / "spark") as cluster:
        command = [sys.executable, "-m", "ferry", "plan", "--fleet", str(fleet), "--output-dir", str(remote)]
        conf = client_conf_dir(tmp_path / "conf")
        env = {**os.environ, "SPARK_DRIVER_MEMORY": "1g", "SPARK_CONF_DIR": str(conf)}
        done = subprocess.run(
            [*command, "--spark-master", cluster.url],
            capture_output=True,
            text=True,
            timeout=JOB_TIMEOUT_S,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Plans for 5 clusters:" in done.stdout
        # The executors ran on the worker, not in the driver: the worker logged an application.
        assert any((tmp_path / "spark" / "work").iterdir())
    assert plan_files(remote) == plan_files(local)
    assert len(plan_files(remote)) == 15
    stages = json.loads((remote / "fleet-summary.json").read_text())["stage_seconds"]
    assert {"whole", "prepare", "place"} <= set(stages), stages
