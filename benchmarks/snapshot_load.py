"""How long a snapshot takes to load: JSON and Parquet, 1M partitions by default.

The cluster is a shape of `benchmarks/shapes.py` (default: the first, a cluster grown from 180 to
200 brokers, ~80,000 topics). Each load runs in a fresh process with the garbage collector paused,
as `ferry plan` loads (ferry.plan.gc_pause); prints one Markdown row per format and run with the
wall seconds and the process's peak RSS. Usage:

    .venv/bin/python benchmarks/snapshot_load.py                 # JSON and Parquet, 3 runs each
    .venv/bin/python benchmarks/snapshot_load.py --scale 0.1     # 100k partitions
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import shapes


def child(path: str) -> None:
    from ferry.formats.sources import load_any
    from ferry.plan.gc_pause import paused

    start = time.perf_counter()
    with paused():
        snapshot = load_any(Path(path))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak, "partitions": len(snapshot.partitions)}))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="times the shape's 1M partitions")
    parser.add_argument("--shape", type=int, default=0, help="index into benchmarks/shapes.py SHAPES")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    shape = shapes.SHAPES[args.shape].scaled(args.scale, f"{args.scale:g}x")
    print("| shape | format | file MB | partitions | seconds | peak MiB |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        cols = shapes.generate(shape)
        json_file, parquet_dir = Path(scratch) / "snapshot.json", Path(scratch) / "snapshot"
        shapes.write_json(cols, json_file)
        shapes.write_parquet(cols, parquet_dir)
        del cols
        for name, path in (("JSON", json_file), ("Parquet", parquet_dir)):
            size = sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() else path.stat().st_size
            for _ in range(args.runs):
                out = subprocess.run(
                    [sys.executable, __file__, "--child", str(path)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                r = json.loads(out.stdout)
                figures = f"{r['partitions']:,} | {r['seconds']:.2f} | {r['peak_mib']:,.0f}"
                print(f"| {shape.name} | {name} | {size / 1e6:,.0f} | {figures} |", flush=True)


if __name__ == "__main__":
    main()
