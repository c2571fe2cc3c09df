"""Entry point of the ``ferry`` command.

This is the only place that catches :class:`~ferry.errors.FerryError` and turns it into an exit code
(2 usage, 3 bad input, 4 precondition, 5 Kafka, 6 incomplete execution, 7 Spark, 1 a bug, 130 Ctrl-C).
Commands below it raise; they never call ``sys.exit`` or print errors themselves.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from ferry import __version__
from ferry.cli.commands import cancel as cancel_cmd
from ferry.cli.commands import execute as execute_cmd
from ferry.cli.commands import freeze as freeze_cmd
from ferry.cli.commands import listing as list_cmd
from ferry.cli.commands import plan as plan_cmd
from ferry.cli.commands import progress as progress_cmd
from ferry.cli.commands import report as report_cmd
from ferry.cli.commands import requests as requests_cmd
from ferry.cli.commands import resume as resume_cmd
from ferry.cli.commands import rollback as rollback_cmd
from ferry.cli.commands import sandbox as sandbox_cmd
from ferry.cli.commands import snapshot as snapshot_cmd
from ferry.cli.commands import status as status_cmd
from ferry.cli.commands import verify as verify_cmd
from ferry.errors import FerryError, UsageError

_COMMANDS = (
    plan_cmd,
    snapshot_cmd,
    sandbox_cmd,
    execute_cmd,
    list_cmd,
    progress_cmd,
    report_cmd,
    verify_cmd,
    resume_cmd,
    cancel_cmd,
    rollback_cmd,
    requests_cmd,
    freeze_cmd,
    status_cmd,
)


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting, so main() owns the exit code."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", hint=f"see '{self.prog} --help'")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ferry",
        description="Plan, execute and interrupt Kafka partition reassignments with minimal movement.",
    )
    parser.add_argument("--version", action="version", version=f"ferry {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in _COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ferry`` with ``argv`` and return its exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not debug:
        # kafka-python logs every failed connection at ERROR; ferry reports them as one KafkaError.
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        args = build_parser().parse_args(args_list)
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    except FerryError as exc:
        _report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ferry: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        print(f"ferry: internal error: {exc!r} (run with --debug for a traceback)", file=sys.stderr)
        return 1


def _report(exc: FerryError) -> None:
    problems = getattr(exc, "problems", (exc.message,))
    for line in problems:
        print(f"ferry: error: {line}", file=sys.stderr)
    if exc.hint:
        print(f"ferry: hint: {exc.hint}", file=sys.stderr)


def run() -> NoReturn:
    """Console-script entry."""
    raise SystemExit(main())
