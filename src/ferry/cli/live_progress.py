"""Live progress bars for ``ferry execute --wait`` / ``ferry resume --wait`` on a terminal (rich).

The executor only emits :mod:`ferry.execute.events`; this module turns them into bars: one for
the request (bytes copied of all bytes, rate and ETA as the executor estimates them) and one per
partition in flight, or one per receiving broker when more partitions are in flight than fit on a
screen. Other events (batches, finished moves) are printed above the bars as the same lines
``exec_render`` writes to logs, so a terminal session scrolls the same history a log keeps.

Bars are redrawn by rich's refresh thread; their numbers change only when the executor polls,
which is when it measures. The row maths (:func:`bar_rows`) and the text cells are pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, ProgressColumn, TaskID, TextColumn
from rich.progress import Progress as RichProgress
from rich.progress import Task as RichTask
from rich.text import Text

from ferry.cli.exec_render import event_line
from ferry.cli.render import human_bytes
from ferry.execute.events import Event, ProgressUpdate
from ferry.execute.progress import Estimate, Progress, ReplicaProgress
from ferry.model import TopicPartition

MAX_ROWS = 8
"""More partitions in flight than this and the bars are per receiving broker instead."""

_REQUEST_KEY = "request"


@dataclass(frozen=True, slots=True)
class BarRow:
    """One bar below the request's: a partition in flight, or a broker receiving replicas."""

    key: str
    label: str
    progress: Progress


def bar_rows(update: ProgressUpdate, max_rows: int = MAX_ROWS) -> tuple[BarRow, ...]:
    """The bars for the partitions in flight, or per receiving broker when there are too many.

    Only replicas of partitions in flight count: finished moves have their bar removed, and pending
    ones have no bytes moving yet.
    """
    moving = set(update.moving)
    replicas = [r for r in update.replicas if r.tp in moving]
    if len(moving) <= max_rows:
        return _per_partition(replicas)
    return _per_broker(replicas)


def _per_partition(replicas: Iterable[ReplicaProgress]) -> tuple[BarRow, ...]:
    rolled: dict[TopicPartition, tuple[list[int], Progress]] = {}
    for r in sorted(replicas, key=lambda r: (r.tp, r.broker)):
        brokers, progress = rolled.get(r.tp, ([], Progress(0, 0)))
        rolled[r.tp] = ([*brokers, r.broker], progress + r.progress)
    return tuple(
        BarRow(f"p:{tp}", f"{tp} → {','.join(map(str, brokers))}", p) for tp, (brokers, p) in rolled.items()
    )


def _per_broker(replicas: Iterable[ReplicaProgress]) -> tuple[BarRow, ...]:
    rolled: dict[int, tuple[int, Progress]] = {}
    for r in replicas:
        count, progress = rolled.get(r.broker, (0, Progress(0, 0)))
        rolled[r.broker] = (count + 1, progress + r.progress)
    return tuple(
        BarRow(f"b:{broker}", f"broker {broker} ← {count} replica(s)", p)
        for broker, (count, p) in sorted(rolled.items())
    )


def amount_text(progress: Progress) -> str:
    """``1.2 MiB / 3.0 MiB``."""
    return f"{human_bytes(progress.done)} / {human_bytes(progress.total)}"


def rate_eta_text(estimate: Estimate, remaining: int) -> str:
    """``1.1 MiB/s, ETA 0:02:05``; ``rate …`` / ``ETA …`` while there is not enough data yet."""
    rate = "rate …" if estimate.rate is None else f"{human_bytes(max(0, int(estimate.rate)))}/s"
    if estimate.eta_s is not None:
        return f"{rate}, ETA {clock_text(estimate.eta_s)}"
    return f"{rate}, ETA …" if remaining else rate


def clock_text(seconds: float) -> str:
    """``0:02:05`` (hours unbounded: a long reassignment may take a day)."""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def request_label(update: ProgressUpdate) -> str:
    """``request 7 (2/6 moves done, 3 in flight)``."""
    return (
        f"request {update.request_id} ({update.moves_done}/{update.moves_total} moves done,"
        f" {update.in_flight} in flight)"
    )


class _SpeedColumn(ProgressColumn):
    """The request bar shows the executor's rate/ETA (``info``); row bars rich's own speed."""

    def render(self, task: RichTask) -> Text:
        info = task.fields.get("info")
        if info:
            return Text(str(info))
        speed = task.speed
        return Text("" if speed is None else f"{human_bytes(max(0, int(speed)))}/s")


class LiveProgress:
    """A listener drawing bars on ``console``; use it as a context manager so the bars stop."""

    def __init__(self, console: Console, max_rows: int = MAX_ROWS) -> None:
        self._max_rows = max_rows
        self._bars = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=30),
            TextColumn("{task.percentage:>5.1f}%"),
            TextColumn("{task.fields[amount]}"),
            _SpeedColumn(),
            console=console,
            refresh_per_second=4,
        )
        self._ids: dict[str, TaskID] = {}

    def __enter__(self) -> LiveProgress:
        self._bars.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bars.stop()

    def __call__(self, event: Event) -> None:
        if isinstance(event, ProgressUpdate):
            self._update(event)
            return
        line = event_line(event)
        if line:
            self._bars.console.print(line, markup=False, highlight=False)

    def _update(self, update: ProgressUpdate) -> None:
        p = update.progress
        info = rate_eta_text(update.estimate, p.remaining)
        self._set(_REQUEST_KEY, request_label(update), p, info=info)
        rows = bar_rows(update, self._max_rows)
        for row in rows:
            self._set(row.key, f"  {row.label}", row.progress, info="")
        for key in set(self._ids) - {r.key for r in rows} - {_REQUEST_KEY}:
            self._bars.remove_task(self._ids.pop(key))

    def _set(self, key: str, label: str, progress: Progress, *, info: str) -> None:
        # A zero total would read as "no total" to rich; one byte keeps the bar at 0 % or 100 %.
        total = max(progress.total, 1)
        completed = progress.done if progress.total else total
        amount = amount_text(progress)
        if key not in self._ids:
            self._ids[key] = self._bars.add_task(
                label, total=total, completed=completed, amount=amount, info=info
            )
        else:
            self._bars.update(
                self._ids[key], description=label, total=total, completed=completed, amount=amount, info=info
            )
