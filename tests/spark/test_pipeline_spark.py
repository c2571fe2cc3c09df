"""The Spark engine on real local Spark: exactly the kernel's plans, for one cluster and for several
sharing one job."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from support.clusters import generated
from support.invariants import assert_valid
from support.plan_files import plan_files
from support.scenarios import named, random_cases

from ferry.cli.main import main
from ferry.formats import dump_reassignment, dumps_json
from ferry.formats.sources import write_any
from ferry.model import ClusterSnapshot, PlanJob
from ferry.pipeline.job import Stages, plan_jobs
from ferry.pipeline.transforms import warm_workers
from ferry.plan.planner import plan

FILES = ("reassignment.json", "rollback.json", "report.json")


def test_one_job_plans_every_case_exactly_like_the_kernel(spark: SparkSession, tmp_path: Path) -> None:
    cases = named() + random_cases(10)
    jobs = []
    for i, (name, snapshot, goal) in enumerate(cases):
        # Every third cluster comes from a Parquet snapshot that Spark scans itself.
        parquet = tmp_path / name if i % 3 == 0 else None
        if parquet is not None:
            write_any(snapshot, parquet)
        jobs.append(PlanJob(name, name, snapshot, goal, parquet))
    stages = Stages()
    # Every cluster's topics share the placing pass; replace goals are planned on the driver.
    plans = plan_jobs(lambda: spark, jobs, stages)
    assert set(stages.seconds) == {"extract", "prepare", "balance", "place", "assemble"}
    for name, snapshot, goal in cases:
        expected = plan(snapshot, goal)
        got = plans[name]
        assert dumps_json(dump_reassignment(got)) == dumps_json(dump_reassignment(expected)), name
        assert got.report == expected.report, name
        assert_valid(snapshot, goal, got)
        # Plan quality is the kernel's to prove (tests/unit/plan); here: a bound, and no fallback.
        assert got.figures.replica_moves >= got.figures.lower_bound or goal.replace, name
        assert (got.figures.placement_fallbacks or 0) == 0, name
    assert all(stages.clusters[job.name] > 0 for job in jobs)


def test_the_balance_programs_are_solved_while_the_session_is_awaited(spark: SparkSession) -> None:
    # The driver's own thread needs no Spark before the placing pass: a session that comes only once
    # every balance program is solved must not hold them up (it would wait here for ever).
    cases = named()[:2]
    jobs = [PlanJob(name, name, snapshot, goal) for name, snapshot, goal in cases]
    stages, asked = Stages(), []

    def session() -> SparkSession:
        deadline = time.monotonic() + 120
        while {c for c, s in stages.clusters.items() if s > 0} != {job.name for job in jobs}:
            assert time.monotonic() < deadline, "the balance programs waited for the session"
            time.sleep(0.01)
        asked.append(threading.current_thread() is threading.main_thread())
        return spark

    plans = plan_jobs(session, jobs, stages)
    assert asked == [False]
    for name, snapshot, goal in cases:
        expected = plan(snapshot, goal)
        assert dumps_json(dump_reassignment(plans[name])) == dumps_json(dump_reassignment(expected))


def test_a_session_that_did_not_start_fails_the_job_with_its_error() -> None:
    name, snapshot, goal = named()[0]

    def session() -> SparkSession:
        raise RuntimeError("the JVM did not start")

    with pytest.raises(RuntimeError, match="the JVM did not start"):
        plan_jobs(session, [PlanJob(name, name, snapshot, goal)])


def test_the_workers_warm_up_runs_and_the_next_plan_is_the_planners(spark: SparkSession) -> None:
    # The start runs it with its errors suppressed (a head start only): here they would surface.
    warm_workers(spark)
    name, snapshot, goal = named()[0]
    plans = plan_jobs(lambda: spark, [PlanJob(name, name, snapshot, goal)])
    assert dumps_json(dump_reassignment(plans[name])) == dumps_json(dump_reassignment(plan(snapshot, goal)))


@pytest.mark.usefixtures("spark")
def test_plan_command_gives_the_same_files_on_both_engines(tmp_path: Path) -> None:
    snapshot = generated(brokers=12, racks=3, topics=5, partitions=20, rf=3, seed=9, skew=1.5)
    write_any(snapshot, tmp_path / "s.json")
    for engine in ("spark", "local"):
        args = ["plan", "--snapshot", str(tmp_path / "s.json"), "--output-dir", str(tmp_path / engine)]
        assert main([*args, "--engine", engine, "--remove-brokers", "11"]) == 0
    assert plan_files(tmp_path / "spark") == plan_files(tmp_path / "local")
    assert len(plan_files(tmp_path / "spark")) == 3


@pytest.mark.usefixtures("spark")
def test_fleet_on_spark_writes_what_the_local_engine_writes(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    for i in range(4):
        snapshot = generated(brokers=8 + i, racks=i % 3 + 1, topics=4, partitions=10, rf=2, seed=i, skew=1.0)
        write_any(snapshot, fleet / f"c{i}" if i % 2 else fleet / f"c{i}.json")
    for engine in ("spark", "local"):
        args = ["plan", "--fleet", str(fleet), "--engine", engine, "--output-dir", str(tmp_path / engine)]
        assert main(args) == 0
    # The summary's stage times and seconds differ by engine; every plan file must not.
    spark_files = plan_files(tmp_path / "spark")
    assert spark_files == plan_files(tmp_path / "local")
    assert len(spark_files) == 4 * len(FILES)


@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize("form", ["s.json", "s-parquet"])
def test_byte_balance_gives_the_same_files_on_both_engines(tmp_path: Path, form: str) -> None:
    base = generated(brokers=9, racks=3, topics=6, partitions=30, rf=3, seed=3, occupied=6)
    # Every third partition carries measured sizes that differ by replica, as a live snapshot's do
    # (followers a little behind the leader).
    parts = [
        replace(p, replica_bytes=tuple((b, p.size - k * (p.size // 50)) for k, b in enumerate(p.replicas)))
        if i % 3 == 0
        else p
        for i, p in enumerate(base.partitions)
    ]
    write_any(ClusterSnapshot.of(base.brokers, parts), tmp_path / form)
    (tmp_path / "disks.json").write_text(json.dumps({str(b): 10**12 * (1 + b % 2) for b in base.broker_ids}))
    for engine in ("spark", "local"):
        args = ["plan", "--snapshot", str(tmp_path / form), "--output-dir", str(tmp_path / engine)]
        args += ["--balance", "bytes", "--capacity", str(tmp_path / "disks.json")]
        assert main([*args, "--engine", engine]) == 0
    assert plan_files(tmp_path / "spark") == plan_files(tmp_path / "local")
    report = json.loads((tmp_path / "local" / "report.json").read_text())
    # Every broker within 5 % of its share of the rack's bytes (rack totals are forced by RF 3 over
    # three racks, whatever the disks).
    assert report["disk"]["after"]["off_target_max"] <= 0.05


@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize("budget", [["--max-moves", "7"], ["--max-bytes", "20GB", "--balance", "bytes"]])
def test_a_budgeted_step_gives_the_same_files_on_both_engines(tmp_path: Path, budget: list[str]) -> None:
    snapshot = generated(brokers=12, racks=3, topics=5, partitions=20, rf=3, seed=9, skew=1.5)
    write_any(snapshot, tmp_path / "s.json")
    for engine in ("spark", "local"):
        args = ["plan", "--snapshot", str(tmp_path / "s.json"), "--output-dir", str(tmp_path / engine)]
        assert main([*args, "--engine", engine, *budget]) == 0
    assert plan_files(tmp_path / "spark") == plan_files(tmp_path / "local")
    report = json.loads((tmp_path / "local" / "report.json").read_text())
    assert 0 < report["budget"]["moves"] < report["budget"]["full_plan_moves"]


@pytest.mark.usefixtures("spark")
def test_a_drain_gives_the_same_files_on_both_engines(tmp_path: Path) -> None:
    snapshot = generated(brokers=9, racks=3, topics=6, partitions=20, rf=3, seed=4, skew=1.5)
    write_any(snapshot, tmp_path / "s.json")
    used = dict.fromkeys(snapshot.broker_ids, 0)
    for p in snapshot.partitions:
        for b in p.replicas:
            used[b] += p.size
    disk = int(max(used.values()) / 0.95)
    (tmp_path / "disks.json").write_text(json.dumps({str(b): disk for b in snapshot.broker_ids}))
    for engine in ("spark", "local"):
        args = ["plan", "--snapshot", str(tmp_path / "s.json"), "--output-dir", str(tmp_path / engine)]
        args += ["--capacity", str(tmp_path / "disks.json"), "--drain-above", "0.75"]
        assert main([*args, "--engine", engine]) == 0
    assert plan_files(tmp_path / "spark") == plan_files(tmp_path / "local")
    report = json.loads((tmp_path / "local" / "report.json").read_text())
    assert report["drain"]["senders"] and max(report["drain"]["after"].values()) <= 0.75
