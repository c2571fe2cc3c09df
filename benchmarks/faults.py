"""Faults at random moments: no acknowledged message lost, no partition wrong, no throttle left.

Starts the project's sandbox (4 brokers in 2 racks, 3 KRaft controllers, on 127.0.0.1; stopped
at the end whatever happens), then runs ``--runs`` seeded runs one after another. Each run
(``tests/support/fault_harness``) creates three RF 3 topics (min.insync.replicas 2, 1 MiB a partition),
writes sequence-numbered messages to them (idempotent producers, acks=all) and reads them back
for the whole run, while a ferry scenario moves every partition under a throttle:

* execute, then ``ferry cancel`` of the request;
* execute to the end, then ``ferry rollback`` of it;
* execute, then a second execute re-targeting the same partitions.

At a moment drawn from the seed one fault hits: kill -9 of the running ferry processes; kill -9 of a
broker sending or receiving a replica (restarted after a few seconds); kill -9 of the metadata
quorum's leader (restarted); or a broker's JVM paused with SIGSTOP for a few seconds. Once the fault
is healed, every request the journal shows unfinished is resumed (``ferry resume``), the clients
drain, and the run checks that every acknowledged message was consumed exactly once, that every
partition is where the scenario and the journal say (nothing in flight), and that every throttle
config is as before the run (one broker and one topic carry throttles of their own).

Runs 0..3 cover each fault kind once, runs 0..11 each (scenario, fault) pair. Usage:

    .venv/bin/python benchmarks/faults.py --runs 50 --seed 1

Prints one line per run, runs per fault kind, and last
``runs N, acked M, lost L, duplicated D, partitions wrong W, throttles left T``.
Exits 1 if any run was not clean.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.fault_harness.run import FaultHarness, RunResult, summary

from ferry.kafka.client import ready_brokers
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars
from sigterm import exit_on_sigterm


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=4, help="how many runs (default 4)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the fault moments (default 1)")
    parser.add_argument("--first", type=int, default=0, help="index of the first run (default 0)")
    parser.add_argument(
        "--keep",
        type=Path,
        default=Path(tempfile.gettempdir()) / "ferry-faults",
        help="where the journal and ferry's output of a run that was not clean go (default %(default)s)",
    )
    parser.add_argument("--keep-all", action="store_true", help="keep every run's files, clean or not")
    args = parser.parse_args()
    # Clients log every broker they lose; the faults make that expected, the checks judge it.
    logging.disable(logging.ERROR)
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="ferry-faults-sandbox-") as tmp:
        sandbox = Sandbox(Path(tmp))
        try:
            started = time.monotonic()
            sandbox.up(
                ClusterSpec(brokers=4, racks=2, controllers=3), ensure_jars(), ready_brokers, timeout_s=180
            )
            print(f"sandbox up in {time.monotonic() - started:.0f} s", flush=True)
            harness = FaultHarness(sandbox, args.seed, args.keep, keep_all=args.keep_all)
            for index in range(args.first, args.first + args.runs):
                results.append(harness.run(index))
                print(results[-1].line(), flush=True)
        finally:
            sandbox.down()
    for line in summary(results):
        print(line)
    return 0 if all(r.clean for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
