"""Hostile inputs by the thousand: every file ferry reads, mutated, must be refused cleanly.

Generates ``--cases`` inputs with hypothesis (``tests/support/fuzzing.py``: snapshot JSON and
Parquet, reassignment JSON, ``--capacity``, ``--command-config``, journal, freeze record; valid files
truncated, flipped, restructured, nested deep, or arbitrary JSON), feeds each where ferry reads it,
and counts what happened. Usage:

    .venv/bin/python benchmarks/fuzz_inputs.py --cases 10000 --seed 1

The last line reads ``cases N, tracebacks T, files written W, exit codes {...}``; every case that
is not a clean refusal (or a clean acceptance) is printed above it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hypothesis import HealthCheck, given, seed, settings
from support.fuzzing import Case, cases, run_case


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=1000, help="how many inputs to generate (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="hypothesis seed (default 1)")
    args = parser.parse_args()
    # ferry's CLI sets up logging on every call; the kafka-python warnings of bad configs are noise here.
    logging.disable(logging.WARNING)
    codes: Counter[int] = Counter()
    kinds: Counter[str] = Counter()
    bad: list[str] = []
    crashes, written = [0], [0]

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)

        @seed(args.seed)
        @settings(
            max_examples=args.cases,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases())
        def fuzz(case: Case) -> None:
            folder = Path(tempfile.mkdtemp(dir=root))
            outcome = run_case(case, folder)
            codes[outcome.code] += 1
            kinds[case.kind] += 1
            crashes[0] += outcome.crashed
            written[0] += outcome.wrote
            if outcome.problem is not None:
                bad.append(f"{case.kind} ({case.how}): {outcome.problem}")
                print(bad[-1], flush=True)

        fuzz()
    print(f"kinds {dict(sorted(kinds.items()))}")
    total = sum(codes.values())
    print(
        f"cases {total}, tracebacks {crashes[0]}, files written {written[0]}, "
        f"exit codes {dict(sorted(codes.items()))}, other problems {len(bad) - crashes[0] - written[0]}"
    )


if __name__ == "__main__":
    main()
