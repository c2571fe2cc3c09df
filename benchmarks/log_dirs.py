"""Log dirs on the real sandbox (JBOD): emptying a dir under a log-dir throttle, then
``--disks balance``.

Starts its own sandbox (1 controller + 2 brokers, no racks, 3 log dirs per broker: data, data2,
data3; always stopped at the end). Topic ``ev``: ``--partitions`` partitions on broker 1 (RF 1),
written by Kafka's ProducerPerformance (uncompressed, null keys: partition sizes differ a little),
then all moved into ``data`` (AlterReplicaLogDirs, waited out). Then, with ferry's own commands:

* evacuate: ``ferry plan --evacuate-dir 1:DATA``, ``ferry execute --dir-throttle T``. Completion
  is the journal's time from the first task submitted to the last finished; ideal is the bytes
  copied / T (one broker copies, ``--max-dir-moves-per-broker`` replicas at a time, all under the
  one broker-wide throttle). Figures: completion / ideal, and whether ``data`` ended empty.
* balance: ``data`` is now empty, ``data2`` and ``data3`` hold everything: far from their shares.
  ``ferry plan --disks balance``, execute, then each dir's bytes against its share (a third of the
  broker's bytes): the largest deviation, against the 5 % band and the largest replica.

Usage::

    .venv/bin/python benchmarks/log_dirs.py                              # 8 x 48 MiB at 20 MB/s
    .venv/bin/python benchmarks/log_dirs.py --partitions 6 --mib 64 --throttle-mb 40
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute_throughput import _java as java
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.model import TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars
from sigterm import exit_on_sigterm

MIB = 1024 * 1024
RECORD = 10_000
QUOTA_WINDOW_S = 12
TOPIC = "ev"


def _ferry(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ferry", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ferry {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stderr


def _where(admin: KafkaPythonAdmin) -> dict[int, tuple[str, str | None, int]]:
    """Partition -> (dir, future dir, bytes) of ``ev`` on broker 1."""
    held = admin.describe_log_dirs([TOPIC])[1].replicas
    return {tp.partition: (r.path, r.future_path, r.size) for tp, r in held.items()}


def _fill(lib: Path, bootstrap: str, admin: KafkaPythonAdmin, partitions: int, mib: int, data: str) -> None:
    java(
        lib,
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--replica-assignment",
        ",".join("1" for _ in range(partitions)),
    )
    records = partitions * mib * MIB // RECORD
    java(
        lib,
        "org.apache.kafka.tools.ProducerPerformance",
        *(
            "--topic",
            TOPIC,
            "--num-records",
            str(records),
            "--record-size",
            str(RECORD),
            "--throughput",
            "-1",
        ),
        *("--producer-props", f"bootstrap.servers={bootstrap}", "acks=1", "compression.type=none"),
        *("batch.size=262144", "linger.ms=5"),
        timeout_s=900,
    )
    admin.alter_replica_log_dirs({(TopicPartition(TOPIC, p), 1): data for p in range(partitions)})
    deadline = time.monotonic() + 600
    while any(path != data or future for path, future, _ in _where(admin).values()):
        if time.monotonic() > deadline:
            raise RuntimeError("the replicas did not all reach the first dir")
        time.sleep(1)
    # The broker counts the bytes of every dir move against its log-dir quota, throttled or not,
    # over its quota window (replication.quota.window.num x .size.seconds: 11 x 1 s). Moved
    # unthrottled just now, this fill would hold the measured move back until it left the window.
    time.sleep(QUOTA_WINDOW_S)


def _copies(journal: Path) -> list[tuple[float, float, int]]:
    """The last request's tasks as (submitted, finished, bytes), in order of submission."""
    conn = sqlite3.connect(journal)
    try:
        (rid,) = conn.execute("SELECT max(id) FROM requests").fetchone()
        rows = conn.execute(
            "SELECT submitted_at, finished_at, size_bytes FROM tasks WHERE request_id = ?"
            " ORDER BY submitted_at",
            (rid,),
        ).fetchall()
    finally:
        conn.close()
    return [(float(a), float(b), int(n)) for a, b, n in rows]


def _span(copies: list[tuple[float, float, int]]) -> float:
    """Seconds from the first task submitted to the last task finished."""
    return max(b for _, b, _ in copies) - min(a for a, _, _ in copies)


def _run(args: argparse.Namespace, home: Path, bootstrap: str, lib: Path) -> dict[str, object]:
    data, journal = str(home / "broker-1" / "data"), home / "journal.sqlite"
    common = ["--bootstrap-server", bootstrap]
    throttle = args.throttle_mb * 1_000_000
    with KafkaPythonAdmin(bootstrap, timeout_s=30) as admin:
        _fill(lib, bootstrap, admin, args.partitions, args.mib, data)
        moved = sum(size for _, _, size in _where(admin).values())
        _ferry("plan", *common, "--evacuate-dir", f"1:{data}", "--output-dir", str(home / "evacuate"))
        execute = ["execute", *common, "--journal", str(journal), "--dir-throttle", str(throttle)]
        execute += ["--max-dir-moves-per-broker", str(args.per_broker)]
        _ferry(*execute, "--plan", str(home / "evacuate" / "reassignment.json"))
        copies = _copies(journal)
        span, ideal = _span(copies), moved / throttle
        start = copies[0][0]
        # Per copy: when it was sent and how long it took against its bytes / throttle.
        timeline = [[round(a - start, 1), round(b - a, 1), round(n / throttle, 1)] for a, b, n in copies]
        left = [p for p, (path, _, _) in _where(admin).items() if path == data]
        _ferry("plan", *common, "--disks", "balance", "--output-dir", str(home / "balance"))
        report = json.loads((home / "balance" / "report.json").read_text())
        _ferry(*execute, "--plan", str(home / "balance" / "reassignment.json"))
        balanced = _where(admin)
    sizes = [size for _, _, size in balanced.values()]
    per_dir: dict[str, int] = {}
    for path, _, size in balanced.values():
        per_dir[path] = per_dir.get(path, 0) + size
    share = sum(sizes) / 3
    worst = max(
        abs(per_dir.get(str(home / "broker-1" / d), 0) - share) / share for d in ("data", "data2", "data3")
    )
    return {
        "bytes_evacuated": moved,
        "evacuate_s": round(span, 1),
        "ideal_s": round(ideal, 1),
        "completion_over_ideal": round(span / ideal, 3),
        "copies_sent_took_ideal_s": timeline,
        "left_in_dir": len(left),
        "balance_moves": report["replica_moves"],
        "balance_bytes": report["bytes_moved"],
        "largest_deviation_from_share": round(worst, 4),
        "largest_replica_over_share": round(max(sizes) / share, 4),
        "bytes_per_dir_after": per_dir,
    }


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--mib", type=int, default=48, help="MiB per partition")
    parser.add_argument("--throttle-mb", type=int, default=20, help="--dir-throttle, MB/s")
    parser.add_argument("--per-broker", type=int, default=1, help="--max-dir-moves-per-broker")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferry-dirs-") as tmp:
        home = Path(tmp)
        sandbox = Sandbox(home / "sandbox")
        lib = ensure_jars()
        try:
            state = sandbox.up(ClusterSpec(brokers=2, racks=0, log_dirs=3), lib, ready_brokers, timeout_s=180)
            result = _run(args, home / "sandbox", state.bootstrap, lib)
        finally:
            sandbox.down()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
