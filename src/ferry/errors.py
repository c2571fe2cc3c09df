"""The one error hierarchy of kafka-ferry.

Every error the tool raises on purpose is a :class:`FerryError`. Each class carries the exit code the
command line returns for it, so ``ferry.cli.main`` is the only place that turns errors into exit codes
(pip's ``_run_wrapper``). Messages fit on one line; ``hint`` says what to do next.
"""

from __future__ import annotations

from collections.abc import Sequence


def and_more(items: Sequence[object]) -> str:
    """The first item and how many more there are, for a one-line message: ``x (and 2 more)``."""
    first = str(items[0])
    return first if len(items) == 1 else f"{first} (and {len(items) - 1} more)"


class FerryError(Exception):
    """Base of every error the tool raises on purpose."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(FerryError):
    """The command line itself is wrong: unknown flag, conflicting options, bad option value."""

    exit_code = 2


class InputError(FerryError):
    """A file given to the tool is unreadable or invalid.

    ``problems`` holds every problem found, each already prefixed with the file and JSON path, so a
    user fixes all of them in one pass instead of one per run.
    """

    exit_code = 3

    def __init__(self, message: str, *, problems: tuple[str, ...] = (), hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.problems = problems or (message,)

    @classmethod
    def of(cls, problems: Sequence[str], *, hint: str | None = None) -> InputError:
        """One error for every problem found: the first one (and how many more) is the message."""
        return cls(and_more(problems), problems=tuple(problems), hint=hint)


class PreconditionError(FerryError):
    """The request is well-formed but the cluster or plan does not allow it (unknown broker, ...)."""

    exit_code = 4


class KafkaError(FerryError):
    """Talking to Kafka failed: unreachable, timed out, not authorized, broker error.

    ``transient``: the failure may go away by itself (a broker down or restarting, a timeout, a
    controller failover), unlike a refusal (not authorized, an invalid request).
    """

    exit_code = 5

    def __init__(self, message: str, *, hint: str | None = None, transient: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.transient = transient


class ExecutionIncomplete(FerryError):
    """A reassignment did not finish; the journal holds the details."""

    exit_code = 6


class SparkError(FerryError):
    """Spark could not run the planning job: no Java, a master that cannot be reached, a JVM that
    did not start."""

    exit_code = 7
