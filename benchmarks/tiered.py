"""Progress and ETA of a move of a tiered topic (KIP-405), with KIP-1023 off and on.

For each mode a sandbox of its own (1 controller + 3 brokers, no racks, ``--tiered``, and with
``--fetch-last-tiered-offset`` for "on"; always stopped at the end). Topic ``tt``: one partition on
broker 1 (RF 1), ``remote.storage.enable``, ``--segment-mib`` MiB segments,
``local.retention.bytes`` of ``--retention-mib`` MiB, ``--mib`` MiB written by Kafka's
ProducerPerformance; once every rolled segment is uploaded and the
local log trimmed, the partition moves to broker 2 under ``--throttle`` (ferry's executor in this
process, listening to its progress events). A sampler reads broker 2's bytes every 0.2 s; the end
is when they stop growing for good (the last byte). Figures per mode:

* local / copied: the leader's local bytes and what the new replica copied (its bytes at the end);
* the ETA error at 25 % and 50 % progress: |ETA at the first progress event past that point -
  time actually left until the last byte| / time actually left;
* the largest progress the leader's local size alone would show (copied / local): under KIP-1023,
  what progress without the offsets estimate would have reached before jumping to done.

Usage::

    .venv/bin/python benchmarks/tiered.py        # 88 MiB, 32 MiB segments, 48 MiB local, 1 MB/s
    .venv/bin/python benchmarks/tiered.py --mib 60 --throttle 500000 --only on
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from execute_throughput import _java as java
from ferry.execute.events import Event, ProgressUpdate
from ferry.execute.executor import Executor
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.kafka.client import KafkaPythonAdmin, ready_brokers
from ferry.model import Move, Plan, TopicPartition
from ferry.sandbox import ClusterSpec, Sandbox, ensure_jars
from sigterm import exit_on_sigterm

MIB = 1024 * 1024
TP = TopicPartition("tt", 0)


def _size(admin: KafkaPythonAdmin, broker: int) -> int:
    held = admin.describe_log_dirs([TP.topic]).get(broker)
    replica = held.replicas.get(TP) if held is not None else None
    return replica.size if replica is not None else 0


def _fill(lib: Path, bootstrap: str, admin: KafkaPythonAdmin, args: argparse.Namespace) -> None:
    segment, retention = (
        f"segment.bytes={args.segment_mib * MIB}",
        f"local.retention.bytes={args.retention_mib * MIB}",
    )
    configs = ("remote.storage.enable=true", segment, retention)
    create = ["--bootstrap-server", bootstrap, "--create", "--topic", TP.topic, "--replica-assignment", "1"]
    java(lib, "org.apache.kafka.tools.TopicCommand", *create, *(x for c in configs for x in ("--config", c)))
    java(
        lib,
        "org.apache.kafka.tools.ProducerPerformance",
        *("--topic", TP.topic, "--num-records", str(args.mib * MIB // 10_000), "--record-size", "10000"),
        *("--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=1"),
        timeout_s=600,
    )
    # Wait until every rolled segment is uploaded and the local log trimmed to its retention.
    deadline, last = time.monotonic() + 120, -1
    while time.monotonic() < deadline:
        now = _size(admin, 1)
        if now == last and now <= (args.retention_mib + args.segment_mib) * MIB:
            return
        last = now
        time.sleep(3)


def _run(mode: str, args: argparse.Namespace, lib: Path) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix=f"ferry-tiered-{mode}-") as tmp:
        sandbox = Sandbox(Path(tmp) / "sandbox")
        spec = ClusterSpec(brokers=3, racks=0, tiered=True, fetch_last_tiered_offset=mode == "on")
        try:
            state = sandbox.up(spec, lib, ready_brokers, timeout_s=180)
            with KafkaPythonAdmin(state.bootstrap, timeout_s=30) as admin:
                _fill(lib, state.bootstrap, admin, args)
                return _move(admin, state.bootstrap, Path(tmp), args.throttle) | {"mode": mode}
        finally:
            sandbox.down()


def _move(admin: KafkaPythonAdmin, bootstrap: str, tmp: Path, throttle: int) -> dict[str, object]:
    local = _size(admin, 1)
    etas: list[tuple[float, float, float | None]] = []
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def listen(event: Event) -> None:
        if isinstance(event, ProgressUpdate):
            etas.append((time.monotonic() - start, event.progress.fraction, event.estimate.eta_s))

    def sample() -> None:
        with KafkaPythonAdmin(bootstrap, timeout_s=10) as watcher:
            while not stop.wait(0.2):
                samples.append((time.monotonic() - start, _size(watcher, 2)))

    with Journal.open(tmp / "journal.sqlite") as journal:
        executor = Executor(admin, journal, listener=listen)
        request = executor.prepare(
            Plan.of([Move(TP, (1,), (2,), local)]),
            bootstrap=bootstrap,
            options=ExecuteOptions(throttle=throttle),
        )
        start = time.monotonic()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            executor.run(request)
        finally:
            stop.set()
            sampler.join(timeout=15)
    copied = max((n for _, n in samples), default=0)
    end = next(t for t, n in samples if n == copied)
    return {
        "local_bytes": local,
        "copied_bytes": copied,
        "copied_over_local": round(copied / local, 3),
        "last_byte_s": round(end, 1),
        "eta_error_25": _error(etas, 0.25, end),
        "eta_error_50": _error(etas, 0.50, end),
    }


def _error(etas: list[tuple[float, float, float | None]], at: float, end: float) -> float | None:
    for t, fraction, eta in etas:
        if fraction >= at and eta is not None and end > t:
            return round(abs(eta - (end - t)) / (end - t), 3)
    return None


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mib", type=int, default=88, help="MiB written to the partition")
    parser.add_argument("--segment-mib", type=int, default=32, help="segment.bytes, MiB")
    parser.add_argument("--retention-mib", type=int, default=48, help="local.retention.bytes, MiB")
    parser.add_argument("--throttle", type=int, default=1_000_000, help="bytes/s")
    parser.add_argument("--only", choices=("off", "on"), help="one mode only")
    args = parser.parse_args()
    lib = ensure_jars()
    results = [_run(mode, args, lib) for mode in ("off", "on") if args.only in (None, mode)]
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
