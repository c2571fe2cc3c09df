"""Read and write the files kafka-ferry exchanges: cluster snapshots and Kafka reassignment JSON.

Readers validate everything and raise one :class:`~ferry.errors.InputError` listing every problem
with its file and JSON path; writers go through :mod:`ferry.formats.atomic`.
"""

from ferry.formats.atomic import (
    dumps_json,
    write_files_atomic,
    write_json_atomic,
    write_text_atomic,
)
from ferry.formats.reassignment_json import (
    Reassignment,
    ReassignmentEntry,
    dump_reassignment,
    dump_rollback,
    load_reassignment,
    parse_reassignment,
    plan_files,
    write_plan,
)
from ferry.formats.snapshot_json import (
    SnapshotDetails,
    dump_snapshot,
    load_snapshot,
    parse_snapshot,
    parse_snapshot_details,
    render_snapshot,
)

__all__ = [
    "Reassignment",
    "ReassignmentEntry",
    "SnapshotDetails",
    "dump_reassignment",
    "dump_rollback",
    "dump_snapshot",
    "dumps_json",
    "load_reassignment",
    "load_snapshot",
    "parse_reassignment",
    "parse_snapshot",
    "parse_snapshot_details",
    "plan_files",
    "render_snapshot",
    "write_files_atomic",
    "write_json_atomic",
    "write_plan",
    "write_text_atomic",
]
