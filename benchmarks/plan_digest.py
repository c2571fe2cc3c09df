"""A digest of the planner's output on a fixed set of clusters, to show a change leaves plans alone.

Plans every named scenario, 40 random clusters of the property tests' generator, plan_quality's
small, unequal-rack and byte cases, and 50 of them again with ``--balance bytes``, in process; prints
one SHA-256 per case (of reassignment.json's content and the report) and one over all. ``--large``
adds plan_quality's 100,000-partition cases (a minute more), where the solver's programs split into
parts and are solved again from a kept basis. ``--budgets`` digests budgeted steps instead
(``--max-moves`` and ``--max-bytes`` at 3, 10 and 40 % of each full plan's moves and bytes, on
benchmarks/budget.py's convergence cases, and with ``--large`` on the 100k cases but the 2,000-topic
one). Run it on two commits and compare the last line:

    .venv/bin/python benchmarks/plan_digest.py [--large] [--budgets]
    PYTHONPATH=<other checkout>/src .venv/bin/python <other checkout>/benchmarks/plan_digest.py
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from support.scenarios import named, random_cases  # noqa: E402

import plan_quality  # noqa: E402
from ferry.formats import dump_reassignment, dumps_json  # noqa: E402
from ferry.model import BalanceMode, ClusterSnapshot, Goal  # noqa: E402
from ferry.plan.planner import plan  # noqa: E402


def cases(large: bool = False) -> list[tuple[str, ClusterSnapshot, Goal]]:
    out = list(named()) + list(random_cases(40))
    for case in plan_quality.SMALL + plan_quality.UNEQUAL + plan_quality.BYTES[:7]:
        snapshot, goal = plan_quality.generate(case)
        out.append((case.name, snapshot, goal))
    out += [
        (f"{n} (bytes)", s, replace(g, balance=BalanceMode.BYTES)) for n, s, g in out[:50] if not g.replace
    ]
    for case in plan_quality.LARGE if large else []:
        out.append((case.name, *plan_quality.generate(case)))
    return out


BUDGET_SHARES = (0.03, 0.1, 0.4)


def budget_cases(large: bool = False) -> list[tuple[str, ClusterSnapshot, Goal]]:
    """Each case's budgeted steps: both budgets at each of :data:`BUDGET_SHARES` of its full plan."""
    from budget import CONVERGE

    chosen = list(CONVERGE) + [c for c in plan_quality.LARGE if large and "2,000 topics" not in c.name]
    out = []
    for case in chosen:
        snapshot, goal = plan_quality.generate(case)
        full = plan(snapshot, goal).report
        assert full is not None
        for share in BUDGET_SHARES:
            moves, data = max(1, round(share * full.replica_moves)), max(1, round(share * full.bytes_moved))
            out.append((f"{case.name}, {moves} moves", snapshot, replace(goal, max_moves=moves)))
            out.append((f"{case.name}, {data} bytes", snapshot, replace(goal, max_bytes=data)))
    return out


def report_doc(report: object) -> object:
    if isinstance(report, Mapping):  # before the planner's report was typed
        return dict(report)
    from ferry.formats.report_json import report_json

    return report_json(report)  # type: ignore[arg-type]


def digest(snapshot: ClusterSnapshot, goal: Goal) -> str:
    try:
        result = plan(snapshot, goal)
        text = dumps_json(dump_reassignment(result)) + json.dumps(report_doc(result.report), sort_keys=True)
    except Exception as exc:  # a refusal is an outcome too
        text = f"{type(exc).__name__}: {exc}"
    return hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="add the 100,000-partition cases")
    parser.add_argument("--budgets", action="store_true", help="budgeted steps instead of full plans")
    args = parser.parse_args()
    overall = hashlib.sha256()
    for name, snapshot, goal in (budget_cases if args.budgets else cases)(args.large):
        one = digest(snapshot, goal)
        overall.update(one.encode())
        print(f"{one[:16]}  {name}")
    print(f"all: {overall.hexdigest()}")


if __name__ == "__main__":
    main()
