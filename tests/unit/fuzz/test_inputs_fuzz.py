"""Hostile inputs, generated: every file ferry reads is refused with a clean error or accepted.

The CI-sized run; ``benchmarks/fuzz_inputs.py`` runs the same cases by the ten thousand.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from support.fuzzing import Case, cases, run_case, valid

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.kafka.freeze import decode_freeze
from ferry.model import Move, Plan, TopicPartition


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(case=cases())
def test_every_hostile_input_is_refused_cleanly(case: Case, tmp_path_factory: pytest.TempPathFactory) -> None:
    outcome = run_case(case, tmp_path_factory.mktemp(case.kind))
    assert outcome.problem is None, f"{case.kind} ({case.how}): {outcome.problem}"


NESTED = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize("kind", ["snapshot", "capacity"])
def test_deeply_nested_json_is_an_input_error_naming_the_file(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot, disks, out = tmp_path / "s.json", tmp_path / "disks.json", tmp_path / "out"
    snapshot.write_bytes(NESTED if kind == "snapshot" else valid("snapshot"))
    disks.write_bytes(NESTED)
    extra = ["--balance", "bytes", "--capacity", str(disks)] if kind == "capacity" else []
    code = main(["plan", "--engine", "local", "--snapshot", str(snapshot), *extra, "--output-dir", str(out)])
    bad = snapshot if kind == "snapshot" else disks
    assert code == 3
    assert (
        capsys.readouterr().err.splitlines()[0]
        == f"ferry: error: {bad}: not valid ferry input: JSON nested too deeply"
    )
    assert not out.exists()


def test_a_journal_row_changed_by_hand_is_an_input_error_naming_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal.sqlite"
    with Journal.open(path) as journal:
        journal.record_request(Plan.of([Move(TopicPartition("t", 0), (1, 2), (2, 3), 10)]), bootstrap="b")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE tasks SET state = 'bogus'")
    conn.close()
    assert main(["requests", "--journal", str(path)]) == 3
    assert capsys.readouterr().err.splitlines()[0] == (
        f"ferry: error: {path}: task 1 of request 1 is unreadable: "
        "ValueError: 'bogus' is not a valid TaskState"
    )


def test_a_freeze_record_of_garbage_or_deep_nesting_counts_as_frozen() -> None:
    for value in (b"\xff\xfe", NESTED, b'{"frozen": "yes"}'):
        state = decode_freeze(value, 0)
        assert state is not None and state.frozen and "unreadable freeze record" in state.reason
