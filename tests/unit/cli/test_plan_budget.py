"""`ferry plan --max-moves / --max-bytes`: the step is written like any plan, report.json and the
summary say what the budget used and what is left, and a bad budget is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ferry.cli.main import main
from ferry.cli.plan_args import parse_size
from ferry.formats import load_reassignment


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "--engine", "local", "--example", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--max-moves", "0"], "argument --max-moves: expected a whole number >= 1, got '0'"),
        (["--max-moves", "-3"], "argument --max-moves: expected a whole number >= 1, got '-3'"),
        (["--max-bytes", "lots"], "argument --max-bytes: expected a size such as 500GB or 2TiB, got 'lots'"),
        (["--max-bytes", "0GB"], "argument --max-bytes: expected a size of at least 1 byte, got '0GB'"),
        (["--max-bytes", "5iB"], "argument --max-bytes: expected a size such as 500GB or 2TiB"),
    ],
)
def test_a_bad_budget_is_a_usage_error_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], expected: str
) -> None:
    code, _, err = run(capsys, *args, "--output-dir", str(tmp_path / "out"))
    assert code == 2
    assert expected in err.splitlines()[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "size"),
    [("500GB", 500 * 10**9), ("2TiB", 2 * 2**40), ("1024", 1024), ("1.5 gib", 3 * 2**29), ("10k", 10_000)],
)
def test_sizes_read_decimal_and_binary_units(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_a_step_writes_its_moves_and_says_what_is_left(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "--output-dir", str(tmp_path / "full"))
    assert code == 0
    full = json.loads((tmp_path / "full" / "report.json").read_text())
    code, out, _ = run(capsys, "--max-moves", "5", "--output-dir", str(tmp_path / "step"))
    assert code == 0
    report = json.loads((tmp_path / "step" / "report.json").read_text())
    budget = report["budget"]
    assert report["goal"]["max_moves"] == 5
    assert report["replica_moves"] == budget["moves"] == 5
    assert budget["full_plan_moves"] == full["replica_moves"]
    assert budget["steps_left"] == -(-(full["replica_moves"] - 5) // 5)
    assert budget["imbalance_before"] - budget["imbalance_after"] == 5
    step = load_reassignment(tmp_path / "step" / "reassignment.json")
    rollback = load_reassignment(tmp_path / "step" / "rollback.json").targets
    assert sum(len(set(e.replicas) - set(rollback[e.tp])) for e in step.entries) == 5
    assert "budget" in out and "5 moves (used 5 moves" in out
    assert f"full plan              {full['replica_moves']} moves" in out
