"""The Spark session started while the snapshot loads (ferry.pipeline.early_session), against after it.

Each run is a fresh process that reads a Parquet snapshot and opens ferry's Spark session as
`ferry plan` does (local[2], fast-start flags, the class-data archive), then runs one trivial
query: ``after`` loads, then starts Spark; ``beside`` starts Spark in its thread, then loads.
Reported per run: seconds from process start to the snapshot loaded, to the session ready and to
the query's answer. The modes alternate. The snapshot is `benchmarks/pipeline_scale.py`'s
"shape:grown 180->200" (1M partitions), generated once into --data. Usage:

    .venv/bin/python benchmarks/early_start.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASE = "shape:grown 180->200"


def child(snapshot: Path, mode: str, started: float) -> None:
    from ferry.formats.sources import load_any
    from ferry.pipeline.early_session import SparkStart
    from ferry.pipeline.session import plan_session, spark_session

    marks: dict[str, float] = {}
    if mode == "after":
        load_any(snapshot)
        marks["loaded"] = time.time() - started
        with spark_session(plan_session(None, debug=False)) as spark:
            marks["session"] = time.time() - started
            spark.range(1000).count()
            marks["query"] = time.time() - started
    else:
        with SparkStart(None) as early:
            load_any(snapshot)
            marks["loaded"] = time.time() - started
            spark = early.session()
            marks["session"] = time.time() - started
            spark.range(1000).count()
            marks["query"] = time.time() - started
    print(json.dumps(marks))


def measure(snapshot: Path, mode: str) -> dict[str, float]:
    start = time.time()
    command = [sys.executable, __file__, "--child", str(snapshot), mode, repr(start)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    if len(sys.argv) > 4 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode, alternating")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "ferry-pipeline-scale")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from pipeline_scale import generate

    snapshot = generate(CASE, args.data) / "cluster-00"
    print("| mode | snapshot loaded s | session ready s | first query s |\n|---|---|---|---|")
    for _ in range(args.runs):
        for mode in ("after", "beside"):
            r = measure(snapshot, mode)
            print(f"| {mode} | {r['loaded']:.1f} | {r['session']:.1f} | {r['query']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
