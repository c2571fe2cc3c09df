"""Scale of the planning pipeline: generated Parquet snapshots, Spark (local[1], local[2]) vs --engine local.

Clusters: RF 3, 200 brokers in 10 racks, of which 10 are new and empty (one per rack); partitions
start balanced and rack-clean on the 190 old brokers; the goal is the default rebalance onto all
200. Cases: 100k and 1M partitions in topics of 100 partitions, 1M in topics of 1,000, 100k and 1M
in topics of 10 (10,000 and 100,000 topics: many small topics), and a fleet of 20 x 50k (topics of
100). The ``shape:`` cases are the 1M-partition shapes of `benchmarks/shapes.py` (grown clusters,
skewed starts, removals, mixed topic sizes), e.g. ``--cases "shape:grown 180->200"``; a removal
plans the removal of its brokers (``--remove-brokers``), the others the rebalance.

Each run is a fresh child process (so start-up and peak memory are its own); the parent samples
the RSS of the child's process tree (driver Python, the Spark JVM, Python workers) every 0.2 s.
Prints one Markdown row per run. Usage:

    .venv/bin/python benchmarks/pipeline_scale.py                     # every case
    .venv/bin/python benchmarks/pipeline_scale.py --cases 100k        # one case
    .venv/bin/python benchmarks/pipeline_scale.py --runs spark-2      # one engine/master
    .venv/bin/python benchmarks/pipeline_scale.py --tasks             # + Spark's task times
    .venv/bin/python benchmarks/pipeline_scale.py --cases "shape:remove 20 of 200" --seed 11   # another draw

``--tasks`` turns on Spark's event log for the Spark runs and adds a second table: per run, the
wall time of its Spark stages (union of their intervals) and the run time of their tasks summed,
as Spark measured them. Task seconds per stage-wall second is how many cores the tasks kept busy;
task seconds on local[2] over task seconds on local[1] is how much slower the same tasks ran when
two of them shared the machine. The CPU seconds of the process tree are split into the driver
(this child process), the JVM and the Python workers it forks.

Spark runs start the driver JVM from the class-data archive an earlier Spark run on this machine
left (ferry's default); a session started and stopped before the timed runs makes sure there is
one, also on a machine's first run; ``spark-2-cold`` starts without one and writes it, as a first
run does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ferry.pipeline.archive import ENV_DIR
from ferry.plan.gc_pause import paused

try:  # run as a script (benchmarks/ on the path) or imported as benchmarks.pipeline_scale
    import shapes
except ImportError:  # pragma: no cover
    from benchmarks import shapes

BROKERS, RACKS, NEW, RF = 200, 10, 10, 3
# (clusters, partitions per cluster, partitions per topic). The balance program grows with topics x
# brokers, so "1M-wide" (1,000 topics), "1M" (10,000) and "1M-topics" (100,000) load the kernel very
# differently.
CASES = {
    "100k": (1, 100_000, 100),
    "1M": (1, 1_000_000, 100),
    "1M-wide": (1, 1_000_000, 1_000),
    "100k-topics": (1, 100_000, 10),
    "1M-topics": (1, 1_000_000, 10),
    "fleet-20x50k": (20, 50_000, 100),
}
# (engine, master, fast-start JVM flags: C1-only JIT and serial GC, ferry's default;
# the -c1 names force them, the -c2 names turn them off: the full JIT)
RUNS: dict[str, tuple[str, str | None, bool]] = {
    "spark-2": ("spark", "local[2]", True),
    "spark-1": ("spark", "local[1]", True),
    "local": ("local", None, True),
    "spark-2-c1": ("spark", "local[2]", True),
    "spark-1-c1": ("spark", "local[1]", True),
    "spark-2-c2": ("spark", "local[2]", False),
    "spark-1-c2": ("spark", "local[1]", False),
    "spark-2-cold": ("spark", "local[2]", True),
}
COLD = {"spark-2-cold"}
"""Runs that start without the driver JVM's class-data archive (ferry.pipeline.archive) and write it,
as the first Spark run on a machine does; the others use the archive an earlier run left."""


def write_cluster(folder: Path, partitions: int, per_topic: int, seed: int) -> None:
    """One generated Parquet snapshot (see the module docstring), written as
    `benchmarks/shapes.py` writes its shapes."""
    rng = np.random.default_rng(seed)
    old = BROKERS - NEW
    # Broker ids interleave racks (id % 10), so RF consecutive old brokers sit in RF racks.
    start = rng.integers(0, old, partitions)
    replicas = ((start[:, None] + np.arange(RF)[None, :]) % old).astype(np.int32)
    index = np.arange(partitions)
    cols = shapes.Columns(
        topic=(index // per_topic).astype(np.int32),
        partition=(index % per_topic).astype(np.int32),
        replicas=replicas,
        size=rng.integers(10**6, 10**10, partitions, dtype=np.int64),
        brokers=BROKERS,
        racks=RACKS,
        removed=(),
    )
    shapes.write_parquet(cols, folder)


def generate(case: str, root: Path, seed: int = 7) -> Path:
    """The snapshot folder of ``case``, written on first use; ``seed``: the draw of a ``shape:``
    case (the other cases have fixed draws)."""
    target = root / case.replace(" ", "_").replace(">", "").replace(":", "-").replace(",", "")
    if case.startswith("shape:"):
        # Seed 7 keeps its folder's old name, so snapshots written before stay in use.
        target = target if seed == 7 else target.with_name(f"{target.name}-seed{seed}")
        if not target.exists():
            shapes.write_parquet(shapes.generate(_shape(case), seed), target / "cluster-00")
        return target
    clusters, partitions, per_topic = CASES[case]
    if not target.exists():
        for i in range(clusters):
            write_cluster(target / f"cluster-{i:02d}", partitions, per_topic, seed=i)
    return target


@dataclass
class Sampler:
    """Peak RSS (MiB) of a process tree, sampled from /proc."""

    pid: int
    peak_total: float = 0.0
    peak_driver: float = 0.0
    peak_driver_data: float = 0.0
    """The driver's VmData: what RLIMIT_DATA counts (written or writable private memory)."""
    peak_jvm: float = 0.0
    cpu: dict[int, float] = field(default_factory=dict)
    """Last CPU seconds (user + system) seen per process of the tree; exited ones keep theirs."""
    kinds: dict[int, str] = field(default_factory=dict)
    """driver, jvm or worker (the Python processes the JVM forks) per process of the tree."""
    stop: bool = False

    def cpu_by_kind(self) -> dict[str, float]:
        out = dict.fromkeys(("driver", "jvm", "worker"), 0.0)
        for p, seconds in self.cpu.items():
            out[self.kinds[p]] += seconds
        return out

    def run(self) -> None:
        while not self.stop:
            tree = _tree(self.pid)
            for p in tree:
                self.cpu[p] = max(self.cpu.get(p, 0.0), _cpu_seconds(p))
                # Seen again each time: the JVM starts as spark-submit's shell, which then runs java.
                if self.kinds.get(p) != "jvm":
                    self.kinds[p] = "driver" if p == self.pid else "jvm" if _is_java(p) else "worker"
            rss = {p: _rss_mib(p) for p in tree}
            jvm = sum(v for p, v in rss.items() if self.kinds.get(p) == "jvm")
            self.peak_total = max(self.peak_total, sum(rss.values()))
            self.peak_driver = max(self.peak_driver, rss.get(self.pid, 0.0))
            self.peak_driver_data = max(self.peak_driver_data, _rss_mib(self.pid, "VmData:"))
            self.peak_jvm = max(self.peak_jvm, jvm)
            time.sleep(0.2)


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                children = Path(f"/proc/{p}/task/{task}/children").read_text().split()
                todo.extend(int(c) for c in children)
        except OSError:
            continue
    return out


def _rss_mib(pid: int, field: str = "VmRSS:") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cpu_seconds(pid: int) -> float:
    try:
        # Fields 14 and 15 of /proc/PID/stat (after the parenthesised command name): utime, stime.
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _is_java(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "java"
    except OSError:
        return False


def child(folder: Path, run: str, out: Path, removed: tuple[int, ...]) -> dict[str, Any]:
    """One run inside the child process: load, plan, write; returns stage seconds and figures."""
    from ferry.cli.engines import plan_clusters
    from ferry.formats import write_plan
    from ferry.formats.report_json import report_json
    from ferry.formats.sources import fleet_members, load_any
    from ferry.model import PlanJob
    from ferry.pipeline.early_session import SparkStart

    if len(fleet_members(folder)) > 1:
        return fleet_child(folder, run, out)
    stages: dict[str, float] = {}
    engine, master, fast_start = RUNS[run]
    # As `ferry plan` does: the JVM starts while the snapshot loads.
    early = SparkStart(master, fast_start=fast_start) if engine == "spark" else None
    with early if early is not None else nullcontext():
        mark = time.perf_counter()
        clusters = []
        for name, path in fleet_members(folder):
            snapshot = load_any(path)
            clusters.append(PlanJob(name, str(path), snapshot, _goal(snapshot, removed), path))
        stages["load"] = time.perf_counter() - mark
        mark = time.perf_counter()
        planned, spark_stages = plan_clusters(
            clusters, engine=engine, master=master, fast_start=fast_start, started=early
        )
    stages["plan"] = time.perf_counter() - mark
    mark = time.perf_counter()
    reports = []
    for item in planned:
        report = report_json(item.plan.figures)
        write_plan(out / item.cluster.name, item.plan, report)
        reports.append(report)
    stages["write"] = time.perf_counter() - mark
    return {"stages": stages, "spark": spark_stages, "quality": _quality(reports)}


def _shape(case: str) -> shapes.Shape:
    return next(s for s in shapes.SHAPES if s.name == case.removeprefix("shape:"))


def removed_of(case: str) -> tuple[int, ...]:
    """The brokers a ``shape:`` case removes (``--remove-brokers``; none: the rebalance)."""
    return shapes.removed_brokers(_shape(case)) if case.startswith("shape:") else ()


def _goal(snapshot: Any, removed: tuple[int, ...]) -> Any:
    """The removal of ``removed``, or the rebalance when there are none."""
    from ferry.model import Goal

    return Goal(brokers=frozenset(snapshot.broker_ids) - set(removed)) if removed else Goal()


def fleet_child(folder: Path, run: str, out: Path) -> dict[str, Any]:
    """A fleet planned as ``ferry plan --fleet`` plans it (reading, planning and writing are one
    stage there: on Spark the workers read the snapshots)."""
    from contextlib import redirect_stdout
    from io import StringIO

    from ferry.cli.main import main as ferry

    engine, master, fast_start = RUNS[run]
    if not fast_start:
        raise SystemExit(f"{run}: ferry plan --fleet always starts its JVM with the fast-start flags")
    argv = ["plan", "--fleet", str(folder), "--output-dir", str(out), "--engine", engine]
    argv += ["--spark-master", master] if master else []
    mark = time.perf_counter()
    with redirect_stdout(StringIO()):
        code = ferry(argv)
    if code != 0:
        raise SystemExit(f"ferry plan --fleet failed ({code})")
    seconds = time.perf_counter() - mark
    summary = json.loads((out / "fleet-summary.json").read_text())
    reports = [json.loads(path.read_text()) for path in sorted(out.glob("*/report.json"))]
    stages = {"load": 0.0, "plan": seconds, "write": 0.0}
    return {"stages": stages, "spark": summary["stage_seconds"], "quality": _quality(reports)}


def _over_bound(moves: int, bound: int) -> float | str | None:
    """Moves per move of the bound, to four places, and above it the excess too
    (:func:`shapes.excess`)."""
    if not bound:
        return None
    above = shapes.excess(moves, bound)
    return f"{moves / bound:.4f}{above}" if above else round(moves / bound, 4)


def _quality(reports: list[dict[str, Any]]) -> dict[str, Any]:
    moves = sum(r["replica_moves"] for r in reports)
    bound = sum(r["lower_bound"] for r in reports)
    after = [r["balance"]["after"] for r in reports]
    return {
        "partitions": sum(r["partitions"] for r in reports),
        "moves_over_bound": _over_bound(moves, bound),
        "replica_spread": max(a["replica_spread"] for a in after),
        "leader_spread": max(a["leader_spread"] for a in after),
        "topic_spread": max(a["topic_replica_spread_max"] for a in after),
        "rack_violations": sum(a["rack_violations"] for a in after),
        "fallbacks": sum(r.get("placement_fallbacks", 0) for r in reports),
    }


def measure(
    folder: Path, run: str, scratch: Path, *, tasks: bool = False, removed: tuple[int, ...] = ()
) -> dict[str, Any]:
    result_file = scratch / f"{folder.name}-{run}.json"
    command = [sys.executable, __file__, "--child", str(folder), run, str(result_file), json.dumps(removed)]
    env = dict(os.environ)
    if run in COLD:
        env[ENV_DIR] = str(scratch / f"cds-{folder.name}")
    events = scratch / f"events-{folder.name}-{run}"
    # A run named twice in --runs must not count the first one's event log again.
    shutil.rmtree(events, ignore_errors=True)
    if tasks and RUNS[run][0] == "spark":
        env["PYSPARK_SUBMIT_ARGS"] = _event_log_args(events)
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env)
    sampler = Sampler(process.pid)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    code = process.wait()
    wall = time.perf_counter() - start
    sampler.stop = True
    thread.join()
    if code != 0:
        return {"run": run, "failed": code, "wall": wall}
    result: dict[str, Any] = json.loads(result_file.read_text())
    result.update(run=run, wall=wall, peak_total=sampler.peak_total, peak_driver=sampler.peak_driver)
    result["peak_jvm"] = sampler.peak_jvm
    result["cpu"] = sum(sampler.cpu.values())
    result["cpu_by_kind"] = sampler.cpu_by_kind()
    if events.is_dir():
        result["tasks"] = task_times(events)
    return result


def _event_log_args(events: Path) -> str:
    """spark-submit arguments that turn the (uncompressed) event log on.

    Not a SPARK_CONF_DIR with a spark-defaults.conf: Spark's launcher puts that folder on the class
    path, and a driver JVM with a folder holding files on its class path starts without ferry's
    class-data archive (2-3 s slower), so the timed runs would not be the runs ferry makes.
    """
    events.mkdir(parents=True, exist_ok=True)
    settings = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        "spark.eventLog.compress": "false",
    }
    return " ".join(f"--conf {key}={value}" for key, value in settings.items()) + " pyspark-shell"


def task_times(events: Path) -> dict[str, float]:
    """Spark stages' wall time (union of their intervals), tasks' summed run time, and the tasks."""
    intervals: list[tuple[float, float]] = []
    run_ms = count = 0
    for log in events.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event["Event"] == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                if "Submission Time" in info and "Completion Time" in info:
                    intervals.append((info["Submission Time"] / 1000, info["Completion Time"] / 1000))
            elif event["Event"] == "SparkListenerTaskEnd" and event.get("Task Metrics"):
                run_ms += event["Task Metrics"]["Executor Run Time"]
                count += 1
    wall, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        wall += max(0.0, stop - max(start, end))
        end = max(end, stop)
    return {"stage_wall": wall, "task_seconds": run_ms / 1000, "tasks": count}


def task_row(case: str, r: dict[str, Any]) -> str:
    t = r["tasks"]
    busy = t["task_seconds"] / t["stage_wall"] if t["stage_wall"] else 0.0
    figures = f"{t['stage_wall']:.1f} | {t['task_seconds']:.1f} | {busy:.2f} | {t['tasks']}"
    kinds = " / ".join(f"{r['cpu_by_kind'][k]:.1f}" for k in ("driver", "jvm", "worker"))
    return f"| {case} | {r['run']} | {figures} | {r['cpu']:.1f} | {kinds} | {r['cpu'] / r['wall']:.2f} |"


TASK_HEADER = (
    "| case | run | Spark stages wall s | task run time s (sum) | tasks per stage-second | tasks | "
    "CPU s (process tree) | of which driver / JVM / workers | CPU s per wall s |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def row(case: str, r: dict[str, Any]) -> str:
    if "failed" in r:
        return f"| {case} | {r['run']} | failed ({r['failed']}) after {r['wall']:.1f} s |"
    q, s, sp = r["quality"], r["stages"], r["spark"]
    spark = " / ".join(f"{sp.get(k, 0):.1f}" for k in SPARK_STAGES)
    return (
        f"| {case} | {r['run']} | {r['wall']:.1f} | {q['partitions'] / r['wall']:,.0f} | {s['load']:.1f} | "
        f"{s['plan']:.1f} | {spark if sp else '-'} | {s['write']:.1f} | {r['peak_driver']:.0f} | "
        f"{r['peak_jvm']:.0f} | {r['peak_total']:.0f} | {q['moves_over_bound']} | {q['replica_spread']}/"
        f"{q['topic_spread']}/{q['leader_spread']} | {q['rack_violations']} |"
    )


SPARK_STAGES = ("whole", "extract", "prepare", "balance", "place", "assemble")
"""``whole``: a fleet's small clusters read, planned and written, one task each
(ferry.pipeline.driver.whole_by_size); its load and write are inside it."""

HEADER = (
    "| case | run | wall s (process) | partitions/s | load s | plan s | whole / extract / prepare / "
    "balance / place / assemble s | write s | driver py MiB | JVM MiB | tree MiB | moves/bound | "
    "spreads r/t/l | rack viol. |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def warm_up(runs: list[str]) -> None:
    """Start and stop ferry's Spark session once per master and JIT setting of ``runs`` (in a
    process of its own each), so that the timed runs map the class-data archive as every run after
    a machine's first does: on a fresh machine the first timed Spark run would otherwise write it
    as it exits, about 10 s more (ferry.pipeline.archive)."""
    for setting in {RUNS[run][1:] for run in runs if RUNS[run][0] == "spark" and run not in COLD}:
        subprocess.run([sys.executable, __file__, "--warm-up", json.dumps(setting)], check=True)


def _start_and_stop(master: str, fast_start: bool) -> None:
    from ferry.pipeline.early_session import SparkStart

    with SparkStart(master, fast_start=fast_start) as started:
        started.session()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--warm-up":
        _start_and_stop(*json.loads(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        folder, run, result_file, removed = sys.argv[2:6]
        # As `ferry plan` runs (ferry.plan.gc_pause).
        with tempfile.TemporaryDirectory() as out, paused():
            result = child(Path(folder), run, Path(out), tuple(json.loads(removed)))
        Path(result_file).write_text(json.dumps(result))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--runs", default="spark-2,spark-1,local")
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "ferry-pipeline-scale")
    parser.add_argument("--tasks", action="store_true", help="also report Spark's task times (event log)")
    parser.add_argument("--seed", type=int, default=7, help="the draw of the shape: cases (default 7)")
    args = parser.parse_args()
    warm_up(args.runs.split(","))
    print(HEADER, flush=True)
    timed: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        # A comma and a space belong to a shape's name ("shape:skewed rebalance, 200 brokers").
        for case in re.split(r",(?! )", args.cases):
            folder = generate(case, args.data, args.seed)
            for run in args.runs.split(","):
                result = measure(folder, run, Path(scratch), tasks=args.tasks, removed=removed_of(case))
                print(row(case, result), flush=True)
                if "tasks" in result:
                    timed.append(task_row(case, result))
    if timed:
        print("\n" + TASK_HEADER)
        print("\n".join(timed))


if __name__ == "__main__":
    main()
