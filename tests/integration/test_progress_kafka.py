"""``ferry progress`` while a throttled ``ferry execute`` moves real data, with a broker stopped, and
after it ended."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from ferry_process import executing, write_plan
from kafka_helpers import create_topics, produce, stopped, timed, wait_until

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.states import RequestState, TaskState
from ferry.kafka.client import KafkaPythonAdmin
from ferry.model import TopicPartition
from ferry.sandbox import Sandbox, SandboxState

MB = 1024 * 1024
STOP_S = 6.0
"""How long broker 3 stays stopped in the test of a stopped broker."""


def _submitted(journal_path: Path) -> bool:
    if not journal_path.exists():
        return False
    with Journal.open(journal_path) as journal:
        return bool(journal.tasks(states=[TaskState.SUBMITTED]))


def _progress(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["progress", *args, "--json"]) == 0, capsys.readouterr().err
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_progress_while_running_and_when_done(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {"pg-data": {"assignments": {0: [1, 2], 1: [2, 3]}}})
    produce(bootstrap, "pg-data", 5 * MB)  # ~2.5 MB per partition
    plan = write_plan(tmp_path / "plan.json", "pg-data", {0: [1, 3], 1: [2, 4]})
    journal_path = tmp_path / "journal.sqlite"
    common = ["--bootstrap-server", bootstrap, "--journal", str(journal_path)]
    with executing(plan, bootstrap, journal_path, "--throttle", "300000") as process:
        wait_until(lambda: _submitted(journal_path), 30, "moves to be submitted")
        wait_until(lambda: bool(admin.list_reassignments(["pg-data"])), 15, "moves in flight")
        before = admin.describe_replica_sizes(["pg-data"])
        doc = _progress(capsys, *common, "--interval", "1")  # no id: the running request
        after = admin.describe_replica_sizes(["pg-data"])
        assert doc["state"] == "running" and doc["in_flight"] == 2
        done, total = doc["done_bytes"], doc["total_bytes"]
        assert isinstance(done, int) and isinstance(total, int)
        assert 0 < done < total
        assert doc["rate_bytes_per_s"] is not None
        partitions = doc["partitions"]
        assert isinstance(partitions, list)
        for entry in partitions:
            tp = TopicPartition("pg-data", entry["partition"])
            (adding,) = entry["adding"]
            leader = entry["replicas"][0]
            # The denominator is the leader's size (no writes meanwhile, so it is stable);
            # the numerator lies between the new replica's sizes read just before and after.
            assert adding["total_bytes"] == before[tp][leader] == after[tp][leader]
            assert before[tp].get(adding["broker"], 0) <= adding["done_bytes"] <= after[tp][adding["broker"]]
        request_id = doc["request"]
        assert main(["progress", str(request_id), *common, "--interval", "0"]) == 0
        table = capsys.readouterr().out
        assert f"request {request_id} (running)" in table and "pg-data-0" in table and "in flight" in table
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    doc = _progress(capsys, str(request_id), *common)
    assert (doc["state"], doc["fraction"], doc["moves_done"], doc["in_flight"]) == ("done", 1.0, 2, 0)
    assert doc["done_bytes"] == doc["total_bytes"] == total
    with Journal.open(journal_path) as journal:
        assert journal.request(int(str(request_id))).state is RequestState.DONE


_LINE = re.compile(
    r"request \d+: (?P<pct>[\d.]+)% \(.*?\), \d+/\d+ moves done, (?P<moving>\d+) in flight(?P<rest>.*)"
)


def test_progress_is_monotone_reaches_100_and_has_an_eta_while_moving(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sampled from outside (``ferry progress --json``) and inside (``--wait``'s plain lines).

    Three moves under one move per broker run in two batches (0 first: 1 and 2 share brokers
    with it), so the samples span tasks finishing and new ones starting, where the roll-up
    switches from measured to recorded sizes.
    """
    create_topics(bootstrap, {"pm-data": {"assignments": {p: [1, 2] for p in range(3)}}})
    produce(bootstrap, "pm-data", 9 * MB)  # ~3 MB per partition: ~5 s each at 600 kB/s
    plan = write_plan(tmp_path / "plan.json", "pm-data", {0: [1, 3], 1: [1, 4], 2: [2, 3]})
    journal_path = tmp_path / "journal.sqlite"
    common = ["--bootstrap-server", bootstrap, "--journal", str(journal_path)]
    limits = ["--throttle", "600000", "--max-moves-per-broker", "1", "--wait"]
    samples: list[dict[str, Any]] = []
    with executing(plan, bootstrap, journal_path, *limits) as process:
        assert process.stdout is not None
        request_id = process.stdout.readline().strip()
        while process.poll() is None:
            samples.append(_progress(capsys, request_id, *common, "--interval", "0.5"))
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
    samples.append(_progress(capsys, request_id, *common))
    # From outside: bytes copied never go back, the end is 100 %, and moving meant an ETA.
    done = [s["done_bytes"] for s in samples]
    assert done == sorted(done), done
    assert len({s["total_bytes"] for s in samples}) == 1
    assert (samples[-1]["state"], samples[-1]["fraction"]) == ("done", 1.0)
    moving = [s for s in samples if s["in_flight"] and s["state"] == "running"]
    assert len(moving) >= 5, samples
    assert any(s["eta_s"] is not None and s["eta_s"] > 0 for s in moving), moving
    # From inside: the executor's own lines, every few seconds while moving and a last one at 100 %.
    lines = [m for m in map(_LINE.search, err.splitlines()) if m]
    percents = [float(m["pct"]) for m in lines]
    assert percents == sorted(percents) and percents[-1] == 100.0, err
    assert any(int(m["moving"]) and "ETA" in m["rest"] for m in lines), err


def test_progress_names_a_stopped_receiving_broker_and_does_not_wait_for_it(
    kafka_sandbox: tuple[Sandbox, SandboxState],
    bootstrap: str,
    admin: KafkaPythonAdmin,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Broker 3 receives one of two moves and is stopped (SIGSTOP: its connections stay open and
    nothing answers): ``ferry progress`` and ``ferry requests`` answer within their bound, name it,
    and measure what broker 4 receives."""
    sandbox, _ = kafka_sandbox
    create_topics(bootstrap, {"ps-data": {"assignments": {0: [1, 2], 1: [2, 1]}}})
    # ~8 MB per partition: at 100 kB/s neither move can end during the stops, whatever burst the
    # throttle lets through first.
    produce(bootstrap, "ps-data", 16 * MB)
    plan = write_plan(tmp_path / "plan.json", "ps-data", {0: [1, 3], 1: [2, 4]})
    journal_path = tmp_path / "journal.sqlite"
    # Bootstrapped from the other brokers: kafka-python's own bootstrap, before any ferry read, may
    # pick the stopped one and wait for it.
    others = ",".join(f"127.0.0.1:{sandbox.state().node(b).port}" for b in (1, 2, 4))
    common = ["--bootstrap-server", others, "--journal", str(journal_path)]
    p1 = TopicPartition("ps-data", 1)
    with executing(plan, bootstrap, journal_path, "--throttle", "100000") as process:
        wait_until(lambda: _submitted(journal_path), 30, "moves to be submitted")
        wait_until(lambda: admin.describe_replica_sizes(["ps-data"])[p1].get(4, 0) > 0, 15, "a copy to 4")
        # Each command in a stop of its own, longer than its bound and the hedges before it: a
        # command that waits for broker 3 takes all of it. Under the 9-s broker session timeout.
        with stopped(sandbox, (3,), for_s=STOP_S):
            doc, took = timed(lambda: _progress(capsys, *common, "--interval", "0"))
        with stopped(sandbox, (3,), for_s=STOP_S):
            code, took_requests = timed(lambda: main(["requests", *common, "--interval", "0"]))
            listed = capsys.readouterr().out
        assert code == 0
        assert doc["silent_brokers"] == [3], doc
        adding = {entry["partition"]: entry["adding"][0] for entry in doc["partitions"]}
        assert adding[0]["broker"] == 3 and adding[0]["done_bytes"] == 0  # not read
        assert adding[1]["broker"] == 4 and 0 < adding[1]["done_bytes"] < adding[1]["total_bytes"]
        assert "broker(s) 3 did not answer within 3 s" in listed, listed
        # The 3-s bound, a hedge or two of 0.5 s (a new client may ask broker 3 first) and a
        # client's start; read unbounded, broker 3 would hold either until it is back.
        assert max(took, took_requests) < STOP_S - 1.0, (took, took_requests)
        request_id = str(doc["request"])
        assert main(["cancel", "--request", request_id, *common]) == 0  # its throttles go with it
        process.communicate(timeout=60)
        wait_until(lambda: not admin.list_reassignments(["ps-data"]), 30, "the moves cancelled")
