"""Hostile inputs for every file ferry reads, and the check that each one is refused cleanly.

A case is a kind of input (snapshot JSON or Parquet, reassignment JSON, ``--capacity`` file,
``--command-config`` properties, journal, freeze record) and its bytes: a valid file mutated
(truncated, bytes flipped, a value swapped for any JSON, a key dropped, numbers made huge, deep
nesting) or arbitrary JSON. :func:`run_case` feeds it where ferry reads it and says what happened;
:attr:`Outcome.problem` is why that is not a clean refusal (a traceback, a crash, a file written, an
error that does not name the input), or ``None``.

Used by ``tests/unit/fuzz`` (a few hundred cases in CI) and ``benchmarks/fuzz_inputs.py`` (10,000).
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from ferry.cli.main import main
from ferry.errors import InputError
from ferry.execute.journal import Journal
from ferry.formats import load_reassignment, parse_snapshot
from ferry.formats.parquet import PARTITIONS_FILE, write_parquet_snapshot
from ferry.kafka.client import load_command_config
from ferry.kafka.freeze import FreezeState, decode_freeze
from ferry.model import Move, Plan, TopicPartition

KINDS = ("snapshot", "parquet", "reassignment", "capacity", "properties", "journal", "freeze")

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@dataclass(frozen=True)
class Case:
    kind: str
    data: bytes
    how: str


@dataclass(frozen=True)
class Outcome:
    code: int
    stderr: str
    problem: str | None

    @property
    def crashed(self) -> bool:
        """A traceback or an internal error rather than a refusal."""
        return self.problem is not None and self.problem.startswith("crash")

    @property
    def wrote(self) -> bool:
        return self.problem is not None and self.problem.endswith("was written")


@cache
def _example() -> bytes:
    return (resources.files("ferry") / "examples" / "six_brokers_add_two.json").read_bytes()


@cache
def valid(kind: str) -> bytes:
    """A valid input of ``kind``, the seed every mutation starts from."""
    snapshot = parse_snapshot(_example(), "example")
    if kind in ("snapshot", "parquet", "journal"):
        return _example()
    if kind == "reassignment":
        moves = [
            {"topic": p.tp.topic, "partition": p.tp.partition, "replicas": list(p.replicas)[::-1]}
            for p in snapshot.partitions[:5]
        ]
        return json.dumps({"version": 1, "partitions": moves}).encode()
    if kind == "capacity":
        return json.dumps({str(b): 10**13 for b in snapshot.broker_ids}).encode()
    if kind == "properties":
        return (
            b"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
            b'sasl.jaas.config=x required username="u" password="p";\n'
        )
    if kind == "freeze":
        return (
            b'{"frozen": true, "reason": "maintenance", "by": "op@host", "at": "2026-11-24T00:00:00+00:00"}'
        )
    raise ValueError(kind)


def _mutate_json(data: bytes, draw: Callable[[Any], Any]) -> tuple[bytes, str]:
    try:
        doc = json.loads(data)
    except ValueError:
        return data, "kept"
    path = []
    node = doc
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
        path.append(key)
        node = node[key]
    action = draw(st.sampled_from(["replace", "drop", "huge", "negative", "string"]))
    if not path:
        return json.dumps(draw(JSON)).encode(), "whole document replaced"
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "drop":
        del parent[last]
    else:
        parent[last] = {
            "replace": lambda: draw(JSON),
            "huge": lambda: 10 ** draw(st.integers(10, 400)),
            "negative": lambda: -draw(st.integers(1, 2**40)),
            "string": lambda: draw(st.text(max_size=6)),
        }[action]()
    return json.dumps(doc).encode(), f"{action} at {path}"


@st.composite
def cases(draw: Callable[[Any], Any], kinds: tuple[str, ...] = KINDS) -> Case:
    """A hostile input of one of ``kinds``."""
    kind = draw(st.sampled_from(kinds))
    data = valid(kind)
    how = draw(st.sampled_from(["truncate", "flip", "json", "nest", "any", "bytes"]))
    if how == "truncate":
        data = data[: draw(st.integers(0, max(0, len(data) - 1)))]
    elif how == "flip":
        flips = draw(
            st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=8)
        )
        buf = bytearray(data)
        for at, value in flips:
            buf[at] = value
        data = bytes(buf)
    elif how == "json":
        data, how = _mutate_json(data, draw)
    elif how == "nest":
        depth = draw(st.sampled_from([50, 1_000, 100_000]))
        data = (
            (b"[" * depth + b"]" * depth) if draw(st.booleans()) else (b'{"a":' * depth + b"1" + b"}" * depth)
        )
    elif how == "any":
        data = json.dumps(draw(JSON)).encode()
    else:
        data = draw(st.binary(max_size=64))
    return Case(kind, data, how)


def run_case(case: Case, tmp: Path) -> Outcome:
    """Feed ``case`` to ferry where it reads that kind of input; see the module docstring."""
    runner = {
        "snapshot": _snapshot,
        "parquet": _parquet,
        "reassignment": _reader(lambda p: load_reassignment(p)),
        "capacity": _capacity,
        "properties": _reader(load_command_config),
        "journal": _journal,
        "freeze": _freeze,
    }[case.kind]
    try:
        return runner(case, tmp)
    except Exception as exc:  # anything escaping a runner is a crash of ferry's
        return Outcome(1, "", f"crash: {type(exc).__name__}: {exc}")


def _cli(args: list[str], source: Path, out: Path) -> Outcome:
    err, std = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(std):
        code = main(args)
    text = err.getvalue()
    return Outcome(code, text, _cli_problem(code, text, source, out))


def _cli_problem(code: int, stderr: str, source: Path, out: Path) -> str | None:
    if "Traceback" in stderr or "internal error" in stderr:
        return f"crash: {stderr.strip().splitlines()[-1] if stderr.strip() else code}"
    if code == 0:
        return None
    if code not in (2, 3):
        return f"exit {code}: {stderr.strip()[:200]}"
    errors = [line for line in stderr.splitlines() if line.startswith("ferry: error: ")]
    if not errors or str(source) not in errors[0]:
        return f"error does not name {source}: {stderr.strip()[:200]}"
    if out.exists():
        return f"exit {code} but {out} was written"
    return None


def _snapshot(case: Case, tmp: Path) -> Outcome:
    source = tmp / "snapshot.json"
    source.write_bytes(case.data)
    out = tmp / "out"
    return _cli(
        ["plan", "--engine", "local", "--snapshot", str(source), "--output-dir", str(out)], source, out
    )


def _capacity(case: Case, tmp: Path) -> Outcome:
    snapshot, source = tmp / "snapshot.json", tmp / "disks.json"
    snapshot.write_bytes(valid("snapshot"))
    source.write_bytes(case.data)
    out = tmp / "out"
    args = ["plan", "--engine", "local", "--snapshot", str(snapshot), "--balance", "bytes"]
    outcome = _cli([*args, "--capacity", str(source), "--output-dir", str(out)], source, out)
    # A capacity that parses but is too small is a refusal of the plan (exit 4), naming a broker.
    if outcome.code == 4 and outcome.stderr.startswith("ferry: error: broker ") and not out.exists():
        return Outcome(4, outcome.stderr, None)
    return outcome


def _parquet(case: Case, tmp: Path) -> Outcome:
    folder = tmp / "snapshot-parquet"
    write_parquet_snapshot(parse_snapshot(valid("parquet"), "example"), folder)
    target = folder / PARTITIONS_FILE
    if case.how in ("json", "any", "nest", "bytes"):
        target.write_bytes(case.data)
    else:
        table = pq.read_table(target)
        raw = io.BytesIO()
        pq.write_table(_damage(table, case.data), raw)
        target.write_bytes(
            raw.getvalue() if case.how == "flip" else raw.getvalue()[: len(case.data) % 4000 + 1]
        )
    out = tmp / "out"
    return _cli(
        ["plan", "--engine", "local", "--snapshot", str(folder), "--output-dir", str(out)], folder, out
    )


def _damage(table: pa.Table, seed: bytes) -> pa.Table:
    """The partitions table with one column replaced by nulls or by another type, chosen by ``seed``."""
    pick = seed[0] if seed else 0
    index = pick % table.num_columns
    column = table.column(index)
    if pick % 2:
        field = pa.field(table.field(index).name, column.type, nullable=True)
        return table.set_column(index, field, pa.nulls(table.num_rows, column.type))
    return table.set_column(index, table.field(index).name, pa.array([str(v) for v in column.to_pylist()]))


def _reader(read: Callable[[Path], object]) -> Callable[[Case, Path], Outcome]:
    def run(case: Case, tmp: Path) -> Outcome:
        source = tmp / f"{case.kind}.input"
        source.write_bytes(case.data)
        try:
            read(source)
        except InputError as exc:
            named = str(source) in str(exc)
            return Outcome(exc.exit_code, str(exc), None if named else f"error does not name the file: {exc}")
        return Outcome(0, "", None)

    return run


def _journal(case: Case, tmp: Path) -> Outcome:
    """A valid journal with one request whose stored JSON, state or whole file is damaged."""
    source = tmp / "journal.sqlite"
    move = Move(TopicPartition("t", 0), (1, 2), (2, 3), 10)
    with Journal.open(source) as journal:
        journal.record_request(Plan.of([move]), bootstrap="127.0.0.1:9092")
    if case.how in ("truncate", "flip", "bytes"):
        whole = source.read_bytes()
        source.write_bytes(case.data + whole[len(case.data) :] if case.how == "flip" else case.data)
    else:
        text = case.data.decode("utf-8", errors="replace")
        column = ("options_json", "plan_json", "state")[len(case.data) % 3]
        table = "tasks" if column == "state" and len(case.data) % 2 else "requests"
        with sqlite3.connect(source) as conn:
            conn.execute(f"UPDATE {table} SET {column} = ?", (text,))
        conn.close()
    out = tmp / "out"
    return _cli(["requests", "--journal", str(source)], source, out)


def _freeze(case: Case, tmp: Path) -> Outcome:
    state = decode_freeze(case.data, 1_700_000_000_000)
    if state is not None and not isinstance(state, FreezeState):
        return Outcome(1, "", f"decode_freeze returned {state!r}")
    return Outcome(0, "", None)
