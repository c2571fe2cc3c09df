"""Pure text renderers for the command line: values in, ``str`` out (Kafka's ``*ToString``).

Nothing here prints; commands print what these return, which keeps the wording testable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ferry.execute.progress import Estimate, Progress

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
_MISSING = "n/a"


def human_bytes(size: int) -> str:
    """``size`` in binary units with one decimal, e.g. ``1.5 GiB``; plain bytes below 1 KiB."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.1f} {_UNITS[unit]}"


def progress_line(
    progress: Progress,
    estimate: Estimate,
    *,
    done: int,
    total: int,
    in_flight: int,
    say_unknown: bool,
) -> str:
    """``42.0% (1.2 MiB of 3.0 MiB), 2/6 moves done, 3 in flight, 1.1 MiB/s, ETA 2 s``.

    ``say_unknown``: write "rate unknown" and "ETA unknown" where there is no figure yet, as a
    one-shot ``ferry progress`` does; ``execute --wait`` logs a line every few seconds and leaves
    them out until the figures come.
    """
    parts = [
        f"{progress.fraction * 100:.1f}% ({human_bytes(progress.done)} of {human_bytes(progress.total)})",
        f"{done}/{total} moves done",
        f"{in_flight} in flight",
    ]
    if estimate.rate is not None:
        parts.append(f"{human_bytes(max(0, int(estimate.rate)))}/s")
    elif say_unknown:
        parts.append("rate unknown")
    if estimate.eta_s is not None:
        parts.append(f"ETA {estimate.eta_s:.0f} s")
    elif say_unknown and progress.remaining:
        parts.append("ETA unknown")
    return ", ".join(parts)


def plan_summary(report: Mapping[str, Any], *, snapshot: str, files: Sequence[Path]) -> str:
    """A short human summary of a plan's report and where its files were written.

    Args:
        report: the planner's report (see ``ferry.model.Plan.report``).
        snapshot: the snapshot's name, as given by the user.
        files: the files written, reassignment first.
    """
    moves_bytes = _get(report, "bytes_moved")
    data = human_bytes(moves_bytes) if isinstance(moves_bytes, int) else _MISSING
    disk = report.get("disk")
    if isinstance(disk, Mapping):
        # The byte balance bounds the bytes moved, not the replicas.
        bound = disk.get("bytes_lower_bound")
        moves = [
            ("replica moves", _get(report, "replica_moves")),
            (
                "data to move",
                f"{data} (lower bound {human_bytes(bound) if isinstance(bound, int) else _MISSING})",
            ),
            ("disk spread", _disk_spread(disk)),
        ]
    elif isinstance(report.get("drain"), Mapping):
        # A drain is bounded by the bytes that must leave the brokers over it, not by replicas.
        ratio = report["drain"].get("bytes_moved_over_bound")
        over = f" ({ratio:g} x what must leave)" if isinstance(ratio, float) else ""
        moves = [("replica moves", _get(report, "replica_moves")), ("data to move", f"{data}{over}")]
    else:
        moves = [
            ("replica moves", f"{_get(report, 'replica_moves')} (lower bound {_get(report, 'lower_bound')})"),
            ("data to move", data),
        ]
    rows = [
        ("partitions in scope", _get(report, "partitions")),
        ("partitions changed", _get(report, "partitions_changed")),
        *moves,
        *_budget_rows(report.get("budget")),
        *_drain_rows(report.get("drain")),
        ("leader changes", _get(report, "leader_changes")),
        ("replica spread", _before_after(report, "replica_spread")),
        ("topic replica spread", _before_after(report, "topic_replica_spread_max")),
        ("leader spread", _before_after(report, "leader_spread")),
        ("rack violations", _before_after(report, "rack_violations")),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"Plan for {snapshot}:"]
    lines += [f"  {label.ljust(width)}  {value}" for label, value in rows]
    lines.append("  (spread: most minus fewest replicas or leaders per target broker)")
    lines += _files_lines(report, files)
    return "\n".join(lines)


def _budget_rows(budget: object) -> list[tuple[str, object]]:
    """A budgeted step: the budget and what it used, the imbalance it leaves, the full plan."""
    if not isinstance(budget, Mapping):
        return []
    limits = []
    if isinstance(budget.get("max_moves"), int):
        limits.append(f"{budget['max_moves']} moves")
    if isinstance(budget.get("max_bytes"), int):
        limits.append(human_bytes(budget["max_bytes"]))
    used = f"{_get(budget, 'moves')} moves, {_human(budget.get('bytes'))}"
    unit = budget.get("imbalance_unit")
    shown = _human if unit == "bytes" else str
    before, after = shown(budget.get("imbalance_before")), shown(budget.get("imbalance_after"))
    imbalance = f"{before} -> {after} (0 after the full plan)"
    steps = budget.get("steps_left")
    full = f"{_get(budget, 'full_plan_moves')} moves, {_human(budget.get('full_plan_bytes'))}"
    return [
        ("budget", f"{' and '.join(limits)} (used {used})"),
        (f"{unit} out of place", imbalance),
        ("full plan", f"{full}; {steps} more step{'s' if steps != 1 else ''} at this budget"),
    ]


def _drain_rows(drain: object) -> list[tuple[str, object]]:
    """A drain: the threshold, who sent, and the fullest broker before and after."""
    if not isinstance(drain, Mapping):
        return []
    senders = drain.get("senders") or []
    fullest = [max(side.values(), default=0.0) for side in (drain.get("before", {}), drain.get("after", {}))]
    return [
        (
            "drain above",
            f"{drain.get('threshold', 0):.0%} of capacity; senders: {', '.join(map(str, senders)) or 'none'}",
        ),
        ("must leave them", _human(drain.get("bytes_to_leave"))),
        ("fullest broker", f"{fullest[0]:.1%} -> {fullest[1]:.1%} of its capacity"),
    ]


def _human(value: object) -> str:
    return human_bytes(value) if isinstance(value, int) else _MISSING


def _disk_spread(disk: Mapping[str, Any]) -> str:
    """Fullest minus emptiest broker, as a share of the mean (of the fraction in use, with capacities)."""
    shares = [_get(disk, side, "spread_of_mean") for side in ("before", "after")]
    before, after = (f"{100 * v:.1f} %" if isinstance(v, int | float) else _MISSING for v in shares)
    return f"{before} -> {after} of the mean"


def _files_lines(report: Mapping[str, Any], files: Sequence[Path]) -> list[str]:
    lines = ["Wrote " + ", ".join(str(f) for f in files) + "."]
    if report.get("partitions_changed") == 0:
        lines.append("Nothing to move: the cluster already meets the goal.")
    elif files:
        # Point at Kafka's own tool: the plan is plain reassignment JSON and needs no ferry to run.
        lines.append(f"Review {files[0].name}; kafka-reassign-partitions.sh --execute takes it as is.")
        if len(files) > 1:
            lines.append(f"{files[1].name} puts the current replicas back.")
    return lines


def _before_after(report: Mapping[str, Any], key: str) -> str:
    before = _get(report, "balance", "before", key)
    after = _get(report, "balance", "after", key)
    return f"{before} -> {after}"


def _get(report: Mapping[str, Any], *keys: str) -> Any:
    # The report is loosely typed JSON-ready data; a missing figure shows as n/a rather than
    # failing after the plan files are already written.
    value: Any = report
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return value


_FLEET_COLUMNS = (
    ("cluster", "cluster"),
    ("partitions", "partitions"),
    ("moves", "replica_moves"),
    ("bound", "lower_bound"),
    ("data", "bytes_moved"),
    ("replica spread", "replica_spread"),
    ("leader spread", "leader_spread"),
    ("rack viol.", "rack_violations"),
    ("seconds", "seconds"),
)


def fleet_summary(rows: Sequence[Mapping[str, Any]], *, files: Sequence[Path]) -> str:
    """One line per cluster of a fleet plan (spreads and violations as before -> after)."""
    table = [[label for label, _ in _FLEET_COLUMNS]]
    for row in rows:
        cells = []
        for _, key in _FLEET_COLUMNS:
            if key == "bytes_moved":
                cells.append(human_bytes(row[key]))
            elif key in row:
                cells.append(str(row[key]))
            else:
                cells.append(f"{row[key + '_before']} -> {row[key + '_after']}")
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(_FLEET_COLUMNS))]
    lines = [f"Plans for {len(rows)} clusters:"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.append(
        "Wrote <cluster>/reassignment.json, rollback.json, report.json and "
        + ", ".join(str(f) for f in files)
        + "."
    )
    return "\n".join(lines)
