"""Prometheus metrics of a real, throttled ``ferry execute`` (scraped over HTTP on 127.0.0.1 while
it runs) and of ``ferry progress --metrics-textfile``."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest
from ferry_process import executing, write_plan
from kafka_helpers import create_topics, produce, wait_until
from prometheus_client.parser import text_string_to_metric_families

from ferry.cli.main import main
from ferry.kafka.client import KafkaPythonAdmin

MB = 1024 * 1024
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(port: int) -> Samples | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return _parse(response.read().decode())
    except OSError:
        return None


def _value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_execute_serves_its_progress_and_progress_writes_a_textfile(
    bootstrap: str, admin: KafkaPythonAdmin, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    create_topics(bootstrap, {"mx-data": {"assignments": {0: [1, 2], 1: [2, 3]}}})
    produce(bootstrap, "mx-data", 6 * MB)
    plan = write_plan(tmp_path / "plan.json", "mx-data", {0: [1, 3], 1: [2, 4]})
    journal = tmp_path / "journal.sqlite"
    port = _free_port()
    seen: list[Samples] = []

    def moving() -> bool:
        samples = _scrape(port)
        if samples is None:
            return False
        seen.append(samples)
        return (_value(samples, "ferry_bytes_copied", request="1") or 0) > 0 and (
            _value(samples, "ferry_moves", request="1", state="in_flight") or 0
        ) > 0

    with executing(plan, bootstrap, journal, "--throttle", "300000", "--metrics-port", str(port)) as process:
        wait_until(moving, 60, "the metrics to show bytes copied with moves in flight")
        textfile = tmp_path / "ferry.prom"
        code = main(
            ["progress", "--bootstrap-server", bootstrap, "--journal", str(journal), "--interval", "0"]
        )
        assert code == 0
        args = [
            "progress",
            "1",
            "--bootstrap-server",
            bootstrap,
            "--journal",
            str(journal),
            "--interval",
            "1",
        ]
        assert main([*args, "--metrics-textfile", str(textfile)]) == 0, capsys.readouterr().err
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
    during = seen[-1]
    total = _value(during, "ferry_bytes_total", request="1")
    assert total is not None and total > MB
    assert 0 < (_value(during, "ferry_bytes_copied", request="1") or 0) <= total
    receiving = {3, 4}
    brokers = {int(dict(labels)["broker"]) for name, labels in during if name == "ferry_broker_bytes_total"}
    assert brokers == receiving
    assert (
        sum(_value(during, "ferry_broker_bytes_total", request="1", broker=str(b)) or 0 for b in brokers)
        == total
    )
    assert _value(during, "ferry_throttle_bytes_per_second", request="1") == 300000
    assert _value(during, "ferry_frozen", request="1") == 0
    moves = {s: _value(during, "ferry_moves", request="1", state=s) for s in ("done", "in_flight", "pending")}
    assert sum(v or 0 for v in moves.values()) == 2 and (moves["in_flight"] or 0) >= 1
    # The port is closed with the run.
    assert _scrape(port) is None
    written = _parse(textfile.read_text())
    assert _value(written, "ferry_bytes_total", request="1") == total
    assert 0 < (_value(written, "ferry_bytes_copied", request="1") or 0) <= total
    assert _value(written, "ferry_frozen", request="1") == 0
