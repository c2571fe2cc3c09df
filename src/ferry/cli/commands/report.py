"""``ferry report``: a plan folder as one self-contained HTML page with charts (see
:mod:`ferry.cli.html_report`)."""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path
from typing import Any

from ferry.cli.html_report import Timeline, write_html_report
from ferry.cli.options import add_journal_option
from ferry.cli.plan_view import plan_view
from ferry.cli.requests import journal_path, open_existing
from ferry.errors import InputError, UsageError
from ferry.formats import load_reassignment, parse_snapshot
from ferry.formats.json_text import decode_json, read_bytes
from ferry.formats.sources import load_any
from ferry.model import ClusterSnapshot

_DESCRIPTION = """\
Draw a plan folder (what 'ferry plan' wrote) as one HTML page that works offline: replicas, bytes
and preferred leaders per broker before and after, grouped by rack, with the spread the rack rule
forces; the per-topic spread of the 20 widest topics; and the bytes moved from each source broker
to each destination broker. The snapshot is the one report.json names (for a plan of a live
cluster, the snapshot.json beside it), or --snapshot."""


def register(subparsers: Any) -> None:
    """Add ``report`` to the ``ferry`` parser."""
    parser = subparsers.add_parser(
        "report",
        help="draw a plan as a self-contained HTML page with charts",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("plan_dir", type=Path, metavar="PLAN_DIR", help="a folder 'ferry plan' wrote")
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="the page to write (default: PLAN_DIR/report.html)"
    )
    parser.add_argument(
        "--snapshot",
        type=Path,
        metavar="FILE",
        help="the snapshot the plan was made from (default: report.json's)",
    )
    parser.add_argument(
        "--request",
        type=int,
        metavar="ID",
        help="also draw this executed request from the journal: bytes copied over time per receiving "
        "broker against the throttle, and the ETA shown against the real end",
    )
    add_journal_option(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    timeline = _timeline(args) if args.request is not None else None
    path = write_report(args.plan_dir, args.output, args.snapshot, timeline)
    print(path)
    return 0


def write_report(
    plan_dir: Path, output: Path | None = None, snapshot: Path | None = None, timeline: Timeline | None = None
) -> Path:
    """Write the HTML page of the plan in ``plan_dir``; returns its path.

    Raises:
        InputError: a plan file or the snapshot is missing or unreadable.
        UsageError: the page cannot be written.
    """
    report_path = plan_dir / "report.json"
    report = decode_json(read_bytes(report_path), str(report_path))
    if not isinstance(report, dict):
        raise InputError(f"{report_path}: expected the JSON object 'ferry plan' writes")
    cluster = load_any(snapshot) if snapshot is not None else _snapshot_of(report, report_path)
    targets = load_reassignment(plan_dir / "reassignment.json").targets
    brokers = report.get("target_brokers") or sorted(cluster.broker_ids)
    view = plan_view(cluster, targets, brokers)
    out = output or plan_dir / "report.html"
    try:
        write_html_report(out, view, report, title=f"ferry plan: {plan_dir}", timeline=timeline)
    except OSError as exc:
        raise UsageError(f"--output {out}: cannot write: {exc.strerror or exc}") from None
    return out


def _timeline(args: argparse.Namespace) -> Timeline:
    with open_existing(journal_path(args)) as journal:
        request = journal.request(args.request)
        samples = journal.progress_samples(request.id)
        paced = journal.pace_records(request.id)
    if not samples:
        raise InputError(
            f"{journal.path}: request {request.id} has no progress samples",
            hint="they are kept from this ferry version on, while a request runs",
        )
    return Timeline(request.id, samples, request.options.throttle, request.finished_at, paced)


def _snapshot_of(report: dict[str, Any], report_path: Path) -> ClusterSnapshot:
    named = report.get("snapshot")
    if isinstance(named, str) and named.startswith("example:"):
        # A plan of the bundled example ('ferry plan --example').
        name = named.removeprefix("example:")
        return parse_snapshot((resources.files("ferry") / "examples" / name).read_bytes(), named)
    if not isinstance(named, str):
        raise InputError(
            f"{report_path}: names no snapshot file ({json.dumps(named)})",
            hint="pass the snapshot the plan was made from with --snapshot",
        )
    return load_any(Path(named))
