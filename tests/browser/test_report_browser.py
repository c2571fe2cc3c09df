"""The HTML report, rendered by a real headless Chromium: its charts are drawn, with data points.

Chromium runs the page's scripts (Plotly, inlined) and hands back the DOM they built; the test counts
the bars and heatmap cells in it, and keeps a screenshot beside the page.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ferry.cli.main import main
from ferry.execute.journal import Journal
from ferry.execute.options import ExecuteOptions
from ferry.execute.pace.controller import Pace, Role, State
from ferry.execute.pace.settings import PaceSettings
from ferry.execute.progress import Progress
from ferry.model import Move, Plan, TopicPartition

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=15000",
]


def _chromium() -> str:
    found = shutil.which("chromium")
    assert found, "Debian's chromium is needed: scripts/test installs it (apt-get install chromium)"
    return found


def _render(page: Path, profile: Path, *args: str) -> str:
    command = [_chromium(), *_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _chart(dom: str, chart: str) -> str:
    """The markup of one chart's div (up to the next chart or the end of the page)."""
    start = dom.index(f'id="chart-{chart}"')
    following = [dom.find('id="chart-', start + 1), len(dom)]
    return dom[start : min(i for i in following if i > 0)]


def test_the_report_draws_every_chart_with_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan"
    assert main(["plan", "--engine", "local", "--example", "--html", "--output-dir", str(out)]) == 0
    capsys.readouterr()
    page = out / "report.html"
    text = page.read_text()
    assert "<script" in text and not re.search(r"<script[^>]*\bsrc=", text)  # nothing fetched: offline
    dom = _render(page, tmp_path / "profile", "--dump-dom")
    brokers, topics, moved = (_chart(dom, name) for name in ("brokers", "topics", "moved"))
    # 8 brokers x (replicas, bytes, leaders) x (before, after): 48 bars; 6 topics x 2 series.
    assert len(re.findall(r'class="point"', brokers)) == 48
    assert len(re.findall(r'class="trace bars"', brokers)) == 6
    assert "fewest after" in brokers or "forced spread" in brokers
    assert len(re.findall(r'class="point"', topics)) == 12
    assert "heatmaplayer" in moved and re.search(r'<image[^>]+href="data:image/png', moved)
    assert "from 6" in moved and "to 8" in moved
    shot = out / "report.png"
    _render(page, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1280,2400")
    assert shot.stat().st_size > 20_000


def test_an_executed_request_draws_its_copy_against_the_throttle_and_its_eta(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, journal_path = tmp_path / "plan", tmp_path / "journal.sqlite"
    assert main(["plan", "--engine", "local", "--example", "--output-dir", str(out)]) == 0
    now = [1000.0]
    with Journal.open(journal_path, clock=lambda: now[0]) as journal:
        plan = Plan.of([Move(TopicPartition("orders", 0), (1, 2, 3), (7, 2, 3), 1000)])
        rid = journal.record_request(plan, bootstrap="b", options=ExecuteOptions(throttle=10_000_000))
        for step in range(5):  # 5 samples, 5 s apart: broker 7 copies 40 MB, broker 8 20 MB
            now[0] = 1000.0 + 5 * step
            progress = {7: Progress(10_000_000 * step, 40_000_000), 8: Progress(5_000_000 * step, 20_000_000)}
            journal.record_progress(rid, progress, 20.0 - 5 * step)
    capsys.readouterr()
    page = tmp_path / "run.html"
    args = ["report", str(out), "--journal", str(journal_path), "--request", str(rid), "-o", str(page)]
    assert main(args) == 0, capsys.readouterr().err
    dom = _render(page, tmp_path / "profile", "--dump-dom")
    copied, eta = _chart(dom, "copied"), _chart(dom, "eta")
    assert len(re.findall(r'class="trace scatter', copied)) == 3  # brokers 7 and 8, the throttle
    assert "broker 7" in copied and "throttle" in copied
    assert len(re.findall(r'class="trace scatter', eta)) == 2
    assert "ETA shown" in eta


def test_a_paced_request_draws_each_follower_throttle_against_its_copy_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, journal_path = tmp_path / "plan", tmp_path / "journal.sqlite"
    assert main(["plan", "--engine", "local", "--example", "--output-dir", str(out)]) == 0
    now = [1000.0]
    with Journal.open(journal_path, clock=lambda: now[0]) as journal:
        plan = Plan.of([Move(TopicPartition("orders", 0), (1, 2, 3), (7, 2, 3), 1000)])
        options = ExecuteOptions(throttle=1_000_000, pace=PaceSettings())
        rid = journal.record_request(plan, bootstrap="b", options=options)
        for step in range(5):  # broker 7 copies at 2, then 4 MB/s as the pace raises its throttle
            now[0] = 1000.0 + 20 * step
            journal.record_progress(rid, {7: Progress(40_000_000 * step, 400_000_000)}, None)
            rate = 2_000_000 if step < 2 else 4_000_000
            pace = Pace(
                rate, 5, State.FLOOR if step < 2 else State.RAISE, "produce rate" if step < 2 else "healthy"
            )
            journal.record_pace(rid, {(7, Role.FOLLOWER): pace}, {})
    capsys.readouterr()
    page = tmp_path / "run.html"
    args = ["report", str(out), "--journal", str(journal_path), "--request", str(rid), "-o", str(page)]
    assert main(args) == 0, capsys.readouterr().err
    dom = _render(page, tmp_path / "profile", "--dump-dom")
    paced = _chart(dom, "pace")
    assert len(re.findall(r'class="trace scatter', paced)) == 2  # broker 7's copy rate and throttle
    assert "broker 7 throttle" in paced and "broker 7 copied" in paced
