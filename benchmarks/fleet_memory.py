"""A fleet bigger than the driver's memory, planned on a Spark standalone cluster of two workers.

Generates a fleet of ``--clusters`` snapshots (the shapes of `benchmarks/shapes.py` scaled to about
``--partitions`` each: grown and add, mixed partitions per topic, JSON and Parquet alternating),
then runs ``ferry plan --fleet`` three ways, each in a child process whose RSS is sampled:

1. ``--engine local``, no limit (skipped with ``--no-unlimited``);
2. ``--engine local`` with the driver's data limited to ``--limit-gib`` (``RLIMIT_DATA``, per
   process, inherited by the JVM): it holds one snapshot at a time, so it fits where the fleet
   held at once would not;
3. the Spark engine against a standalone master with two workers of one core each, on 127.0.0.1,
   with the same limit on the driver: the workers read the snapshots; its plan files must equal
   run 1's.

Prints one row per run and writes the figures as JSON (``--out``).

    .venv/bin/python benchmarks/fleet_memory.py --clusters 12 --partitions 100000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "spark"))

from standalone import FAST_JVM, standalone_cluster
from support.plan_files import plan_files

import shapes
from pipeline_scale import Sampler

# The grown and add shapes of ten even racks and uniform sizes (those of unequal racks plan far
# slower; the fleet as measured in docs/benchmarks.md, before the six-rack shapes joined).
KINDS = [s for s in shapes.SHAPES if s.start in ("grown", "add") and not s.rack_sizes and s.racks == 10]
LIMITED = """
import resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
from ferry.cli.main import main
raise SystemExit(main(sys.argv[2:]))
"""


def write_fleet(folder: Path, clusters: int, partitions: int) -> int:
    """The fleet's snapshots (kept between runs of the same size); returns its partitions."""
    total = 0
    for i in range(clusters):
        kind = KINDS[i % len(KINDS)]
        # Scaled from the 1M shapes, topics rounded: about ``partitions`` each.
        shape = kind.scaled(partitions / 1_000_000, f"fleet {i}")
        cols = shapes.generate(shape, seed=100 + i)
        total += len(cols)
        name = f"cluster-{i:02d}"
        if (folder / name).exists() or (folder / f"{name}.json").exists():
            continue
        folder.mkdir(parents=True, exist_ok=True)
        if i % 2:
            shapes.write_json(cols, folder / f"{name}.json")
        else:
            shapes.write_parquet(cols, folder / name)
    return total


def run(command: list[str], env: dict[str, str], *, limit: int | None) -> dict[str, Any]:
    """One ``ferry`` run in a child process, with its wall time and peak RSS (driver, JVM, tree)."""
    prefix = [sys.executable, "-c", LIMITED, str(limit)] if limit else [sys.executable, "-m", "ferry"]
    start = time.perf_counter()
    process = subprocess.Popen(
        [*prefix, *command], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    sampler = Sampler(process.pid)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    _, err = process.communicate()
    sampler.stop = True
    thread.join()
    return {
        "exit": process.returncode,
        "wall": round(time.perf_counter() - start, 1),
        "driver_mib": round(sampler.peak_driver),
        "driver_data_mib": round(sampler.peak_driver_data),
        "jvm_mib": round(sampler.peak_jvm),
        "error": err.strip().splitlines()[-1] if process.returncode and err.strip() else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=12)
    parser.add_argument("--partitions", type=int, default=100_000, help="about this many per cluster")
    parser.add_argument("--limit-gib", type=float, default=1.5, help="the driver's data limit")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="4g")
    parser.add_argument("--no-unlimited", action="store_true", help="skip run 1 (the fleet in one process)")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "ferry-fleet-memory")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    fleet = args.scratch / f"fleet-{args.clusters}x{args.partitions}"
    total = write_fleet(fleet, args.clusters, args.partitions)
    limit = int(args.limit_gib * 2**30)
    env = {**os.environ, "SPARK_DRIVER_MEMORY": "1g", "SPARK_LOCAL_IP": "127.0.0.1"}
    figures: dict[str, Any] = {"clusters": args.clusters, "partitions": total, "limit_gib": args.limit_gib}
    print(f"fleet: {args.clusters} clusters, {total:,} partitions; driver data limit {args.limit_gib} GiB")
    out = {name: args.scratch / f"out-{name}" for name in ("local", "limited", "standalone")}
    base = ["plan", "--fleet", str(fleet)]
    local = [*base, "--engine", "local", "--output-dir"]
    if not args.no_unlimited:
        figures["local"] = run([*local, str(out["local"])], env, limit=None)
    figures["limited"] = run([*local, str(out["limited"])], env, limit=limit)
    conf = args.scratch / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.executor.memory 2g\nspark.executor.extraJavaOptions {FAST_JVM}\n"
    )
    spark = args.scratch / "spark"
    with standalone_cluster(spark, workers=args.workers, cores=1, memory=args.worker_memory) as c:
        command = [*base, "--spark-master", c.url, "--output-dir", str(out["standalone"])]
        figures["standalone"] = run(command, {**env, "SPARK_CONF_DIR": str(conf)}, limit=limit)
    if "local" in figures and figures["standalone"]["exit"] == 0:
        figures["standalone"]["same_plans"] = plan_files(out["standalone"]) == plan_files(out["local"])
    for name in ("local", "limited", "standalone"):
        if name in figures:
            print(f"{name:>10}: {figures[name]}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
