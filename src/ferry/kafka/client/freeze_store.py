"""The freeze switch's store: the control topic's one partition, written with acks=all and read
from its start, at its leader (:mod:`ferry.kafka.client.control_log`).

What the record means is :mod:`ferry.kafka.freeze`'s; this module only moves it. The store shares
the admin client's connections, its error translation and retries (``guarded``), so a missing ACL
or an unreachable broker reads the same as for any other admin call, and a stopped broker other
than the partition's leader holds neither a write nor a read.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any, Protocol, TypeVar

import kafka.errors as kerrors

from ferry.errors import KafkaError
from ferry.kafka.client import control_log
from ferry.kafka.client.errors import first_line
from ferry.kafka.freeze import FREEZE_KEY, FreezeState, decode_freeze, encode_freeze

T = TypeVar("T")


class Guarded(Protocol):
    """The admin client's ``_call``: run one call with retries and kafka-python errors translated."""

    def __call__(self, action: str, call: Callable[[], T]) -> T: ...


class FreezeStore:
    """Reads and writes the freeze record in ``control_topic`` for one admin client.

    Args:
        client: the connected kafka-python ``KafkaAdminClient``.
        control_topic: where the freeze flag lives.
        timeout_s: bound for each call.
        guarded: runs a call with retries and error translation.
    """

    def __init__(
        self,
        client: Any,
        control_topic: str,
        timeout_s: float,
        guarded: Guarded,
    ) -> None:
        self._client = client
        self._control_topic = control_topic
        self._timeout_s = timeout_s
        self._guarded = guarded

    def read_freeze(self, within_s: float | None = None) -> FreezeState | None:
        """The latest freeze record: the control topic read from its start up to its end offset.

        With ``within_s``, read once within that many seconds, without the retries; a leader that
        has not answered by then fails the read with a transient :class:`KafkaError`.
        """
        if within_s is not None:
            return self._freeze_call("reading the freeze flag", lambda: self._read_within(within_s))
        return self._freeze_call("reading the freeze flag", lambda: self._latest(self._timeout_s))

    def _read_within(self, within_s: float) -> FreezeState | None:
        try:
            return self._latest(within_s)
        except (kerrors.KafkaTimeoutError, kerrors.RequestTimedOutError) as exc:
            where = f"reading the freeze flag ({self._control_topic})"
            raise KafkaError(
                f"{where}: no answer within {within_s:g} s: {first_line(exc)}", transient=True
            ) from exc

    def _latest(self, within_s: float) -> FreezeState | None:
        """The control topic's last freeze record (None: no control topic, never written, or
        cleared). A missing topic is found by the read's own look-up of the leader: a poll asks one
        metadata question, not two."""
        records = control_log.read(self._client, self._control_topic, within_s)
        flags = [r for r in records or () if r.key == FREEZE_KEY]
        if not flags:
            return None
        return decode_freeze(flags[-1].value, flags[-1].timestamp_ms)

    def write_freeze(self, state: FreezeState) -> None:
        """Create the control topic when missing, then produce ``state`` with acks=all."""
        if not self._control_topic_exists():
            self._freeze_call("creating the control topic", self._create_control_topic)
        value = encode_freeze(state)
        self._freeze_call(
            "writing the freeze flag",
            lambda: control_log.append(self._client, self._control_topic, FREEZE_KEY, value, self._timeout_s),
        )

    def _freeze_call(self, action: str, call: Callable[[], T]) -> T:
        try:
            return self._guarded(f"{action} ({self._control_topic})", call)
        except KafkaError as exc:
            if not exc.message.startswith("not authorized"):
                raise
            # The generic hint names cluster Describe; here the topic's own ACLs are missing.
            hint = (
                f"the principal needs Describe, Read and Write (Create, once) on topic {self._control_topic}"
            )
            raise KafkaError(exc.message, hint=hint) from exc

    def _control_topic_exists(self) -> bool:
        return self._freeze_call(
            "describing the control topic", lambda: control_log.exists(self._client, self._control_topic)
        )

    def _create_control_topic(self) -> None:
        alive = [b for b in self._client.describe_cluster()["brokers"] if not b.get("is_fenced", False)]
        spec = {
            "num_partitions": 1,
            "replication_factor": max(1, min(3, len(alive))),
            "configs": {"cleanup.policy": "compact"},
        }
        timeout_ms = int(self._timeout_s * 1000)
        with suppress(kerrors.TopicAlreadyExistsError):  # another ferry was first: same topic
            self._client.create_topics({self._control_topic: spec}, timeout_ms=timeout_ms)
        self._client.wait_for_topics([self._control_topic], timeout_ms=timeout_ms)
