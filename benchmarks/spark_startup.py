"""Spark start-up with and without the driver JVM's class-data archive (ferry.pipeline.archive).

Each run is a fresh process that opens ferry's Spark session (local[2], fast-start JVM flags, as
`ferry plan` does for small snapshots) and runs one trivial query. Reported per run: seconds from
process start to the session, to the first query's answer, and to process exit (which includes
the JVM writing the archive on the run that makes one). Modes: ``off`` (no archive), ``cold`` (a
fresh archive folder: this run writes the archive), ``warm`` (the archive the cold run left).
Usage:

    .venv/bin/python benchmarks/spark_startup.py [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ferry.pipeline.archive import ENV_DIR


def child(started: float) -> None:
    from ferry.pipeline.session import SessionSettings, spark_session

    with spark_session(SessionSettings(fast_start=True, class_archive=True)) as spark:
        session = time.time() - started
        spark.range(1000).count()
        query = time.time() - started
    print(json.dumps({"session": session, "query": query}))


def measure(archives: str) -> dict[str, float]:
    env = {**os.environ, ENV_DIR: archives}
    start = time.time()
    out = subprocess.run(
        [sys.executable, __file__, "--child", repr(start)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    result["exit"] = time.time() - start
    return result


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(float(sys.argv[2]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2, help="runs of the off and warm modes")
    args = parser.parse_args()
    print("| mode | session s | first query s | process exit s |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        archives = str(Path(folder) / "cds")
        plan = [("off", "")] * args.runs + [("cold", archives)] + [("warm", archives)] * args.runs
        for mode, where in plan:
            r = measure(where)
            print(f"| {mode} | {r['session']:.1f} | {r['query']:.1f} | {r['exit']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
