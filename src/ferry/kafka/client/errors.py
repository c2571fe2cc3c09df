"""kafka-python's exceptions as one-line ferry errors, and the hard deadline around each call.

Every kafka-python exception is turned into a :class:`~ferry.errors.KafkaError` (or an
:class:`~ferry.errors.InputError` for a rejected client configuration) here, so nothing above
:mod:`ferry.kafka.client` needs to know kafka-python's error classes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import kafka.errors as kerrors

from ferry.errors import InputError, KafkaError, PreconditionError

T = TypeVar("T")

# A broker down, not yet reachable, or not yet back in the client's metadata after a restart.
RETRIED = (kerrors.KafkaConnectionError, kerrors.NodeNotReadyError, kerrors.UnknownBrokerIdError)
CHECK_HINT = "check --bootstrap-server, that the brokers run, and security.protocol"


class Call(Protocol):
    """The admin's ``_call``: runs a request with its errors translated and retried."""

    def __call__(self, action: str, call: Callable[[], T]) -> T: ...


def raise_for(error_code: int, action: str, topic: str) -> None:
    """Raise for a topic-level error code of a Metadata answer; a missing topic is the user's."""
    if error_code == 0:
        return
    error = kerrors.for_code(error_code)
    if error is kerrors.UnknownTopicOrPartitionError:
        raise PreconditionError(f"topic {topic!r} does not exist", hint="check --topics")
    raise KafkaError(f"{action} failed: {error.__name__} ({error.description})")


_NEEDED = (
    ("altering partition reassignments", "ALTER on CLUSTER"),
    ("electing", "ALTER on CLUSTER"),
    ("altering configs", "ALTER_CONFIGS on CLUSTER and on the moving topics"),
    ("describing topic configs", "DESCRIBE_CONFIGS on TOPIC"),
    ("describing throttle configs", "DESCRIBE_CONFIGS on CLUSTER and TOPIC"),
    ("describing tiered storage configs", "DESCRIBE_CONFIGS on CLUSTER and TOPIC"),
    ("creating the control topic", "CREATE on TOPIC kafka-ferry-control"),
    ("writing the freeze flag", "WRITE on TOPIC kafka-ferry-control"),
    ("reading the freeze flag", "READ on TOPIC kafka-ferry-control"),
    ("describing the control topic", "DESCRIBE on TOPIC kafka-ferry-control"),
)
"""Per Admin API action ferry takes (the start of its name), the ACL it needs; anything else reads
metadata, which needs DESCRIBE."""


def needed_for(action: str) -> str:
    """The ACL an Admin API ``action`` needs, as Kafka names operations and resources."""
    default = "DESCRIBE on CLUSTER and TOPIC"
    return next((acl for prefix, acl in _NEEDED if action.startswith(prefix)), default)


@contextmanager
def translated(action: str, bootstrap: str, timeout_s: float) -> Iterator[None]:
    """Turn kafka-python exceptions into one-line ferry errors."""
    try:
        yield
    except kerrors.KafkaConfigurationError as exc:
        raise InputError(f"invalid client configuration: {exc}") from exc
    except kerrors.SaslAuthenticationFailedError as exc:
        raise KafkaError(
            f"authentication failed at {bootstrap}: {reason(exc)}",
            hint="check sasl.mechanism and sasl.jaas.config in --command-config",
        ) from exc
    except kerrors.AuthorizationError as exc:
        raise KafkaError(
            f"not authorized: {action} needs {needed_for(action)}: {type(exc).__name__}",
            hint="grant the principal that ACL, or run ferry as a principal that has it",
        ) from exc
    except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError, TimeoutError) as exc:
        if action.startswith("connecting"):
            raise KafkaError(
                f"cannot reach bootstrap server {bootstrap} within {timeout_s:g} s",
                hint=CHECK_HINT,
            ) from exc
        detail = f" ({reason(exc)})" if exc.args and str(exc.args[0]).strip() else ""
        raise KafkaError(f"timed out {action} after {timeout_s:g} s{detail}", transient=True) from exc
    except kerrors.KafkaError as exc:
        transient = isinstance(exc, RETRIED) or bool(getattr(exc, "retriable", False))
        raise KafkaError(
            f"{action} failed: {type(exc).__name__}: {first_line(exc)}", transient=transient
        ) from exc
    except OSError as exc:
        raise KafkaError(f"{action} failed: {exc}", hint=CHECK_HINT, transient=True) from exc


def reason(exc: BaseException) -> str:
    """The message a kafka-python error was raised with, without its ``[Error N] Name:`` prefix."""
    first = exc.args[0] if exc.args else None
    return first.splitlines()[0] if isinstance(first, str) and first.strip() else first_line(exc)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's text, or its class name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def bounded(call: Callable[[], T], timeout_s: float, action: str) -> T:
    """Run ``call`` with a hard deadline: kafka-python bounds each request, not a whole call.

    A daemon thread runs it, so a wedged client cannot keep the process alive either.
    """
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller's thread below
            error.append(exc)

    worker = threading.Thread(target=target, name=f"ferry-kafka: {action}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"{action} did not finish within {timeout_s:g} s")
    if error:
        raise error[0]
    return result[0]


def error_text(error: Any) -> str | None:
    """None for success, else ``Name: description`` of a kafka-python error class or instance."""
    if error is None or error is kerrors.NoError:
        return None
    cls = error if isinstance(error, type) else type(error)
    description = getattr(cls, "description", "") or ""
    return f"{cls.__name__}: {description}" if description else cls.__name__
