"""``ferry progress`` as a human table (rich, rendered to a string: pure, testable wording)."""

from __future__ import annotations

import io
from collections.abc import Collection

from rich.console import Console
from rich.table import Table

from ferry.cli.render import human_bytes, progress_line
from ferry.execute.progress import ANSWER_WITHIN_S, Progress
from ferry.execute.report import RequestProgress

_WIDTH = 100


def progress_table(report: RequestProgress) -> str:
    """Per partition, per receiving broker, then the request's totals with rate and ETA."""
    partitions = Table(
        title=f"request {report.request_id} ({report.state}): partitions", title_justify="left"
    )
    for column in ("partition", "state", "target", "adding", "copied", "of", "%"):
        partitions.add_column(column, justify="right" if column in ("copied", "of", "%") else "left")
    rolled = report.partitions
    adding: dict[object, list[int]] = {}
    for r in report.replicas:
        adding.setdefault(r.tp, []).append(r.broker)
    for task in sorted(report.tasks, key=lambda t: t.tp):
        p = rolled.get(task.tp, Progress(0, 0))
        partitions.add_row(
            str(task.tp),
            task.state.value,
            ",".join(map(str, task.target)),
            ",".join(map(str, adding.get(task.tp, []))) or "-",
            *_cells(p),
        )
    brokers = Table(title="receiving brokers", title_justify="left")
    for column in ("broker", "copied", "of", "%"):
        brokers.add_column(column, justify="left" if column == "broker" else "right")
    for broker, p in sorted(report.brokers.items()):
        brokers.add_row(str(broker), *_cells(p))
    buffer = io.StringIO()
    console = Console(file=buffer, width=_WIDTH, color_system=None, highlight=False)
    console.print(partitions)
    console.print(brokers)
    console.print(summary_line(report))
    if report.silent:
        console.print(silent_text(report.silent))
    return buffer.getvalue()


def silent_text(brokers: Collection[int]) -> str:
    """What a measurement says of the brokers of its moves that did not answer it in time."""
    named = ", ".join(map(str, sorted(brokers)))
    return (
        f"broker(s) {named} did not answer within {ANSWER_WITHIN_S:g} s: their log dirs were not read, and "
        "the replicas they receive count what an earlier reading saw (nothing without one)"
    )


def summary_line(report: RequestProgress) -> str:
    """``42.0% (1.2 MiB of 3.0 MiB), 2/6 moves done, 3 in flight, 1.1 MiB/s, ETA 2 s``."""
    return progress_line(
        report.total,
        report.estimate,
        done=report.moves_done,
        total=len(report.tasks),
        in_flight=report.in_flight,
        say_unknown=True,
    )


def _cells(p: Progress) -> tuple[str, str, str]:
    return human_bytes(p.done), human_bytes(p.total), f"{p.fraction * 100:.1f}"
