"""The freeze switch: one record, in a small compacted topic ferry owns, that every ferry obeys.

While the latest ``freeze`` record says frozen, no ferry process submits new moves. The flag lives
in the cluster, not in a file on one machine, because every ferry that could submit moves can
already reach the cluster, and only there does one write reach all of them. The topic has one
partition and ``cleanup.policy=compact``: it keeps the latest record per key forever and stays a
few records long, so a reader can scan it from the beginning every poll without a consumer group
(which would need its own ACLs and leave committed offsets behind).

Pure: the record's value as JSON, ``{"frozen", "reason", "by", "at"}``, to and from
:class:`FreezeState`. Reading and writing the topic is :class:`~ferry.kafka.client.KafkaPythonAdmin`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

CONTROL_TOPIC = "kafka-ferry-control"
"""The topic's name: legal in Kafka, and no leading ``__``, which reads as broker-internal."""

FREEZE_KEY = b"freeze"


@dataclass(frozen=True, slots=True)
class FreezeState:
    """The latest freeze record: frozen or not, why, by whom (``user@host``) and when (UTC)."""

    frozen: bool
    reason: str
    by: str
    at: datetime

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            # Records are read on other machines: a local time without its zone would mislead.
            raise ValueError("FreezeState.at needs a time zone")


def encode_freeze(state: FreezeState) -> bytes:
    """The record value for ``state``."""
    doc = {
        "frozen": state.frozen,
        "reason": state.reason,
        "by": state.by,
        "at": state.at.astimezone(UTC).isoformat(timespec="seconds"),
    }
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def decode_freeze(value: bytes | None, timestamp_ms: int) -> FreezeState | None:
    """The state a record value holds; None for a tombstone (nothing frozen).

    A value that is not a freeze record (someone else wrote to the topic, or a newer ferry wrote
    more than this one knows) counts as *frozen*: when in doubt, the brake holds, and
    ``ferry unfreeze`` writes a proper record over it.
    """
    if value is None:
        return None
    try:
        return _parse(json.loads(value.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        at = datetime.fromtimestamp(max(timestamp_ms, 0) / 1000, tz=UTC)
        return FreezeState(True, f"unreadable freeze record ({why}); 'ferry unfreeze' clears it", "?", at)


def _parse(doc: Any) -> FreezeState:
    frozen, reason, by = doc["frozen"], doc["reason"], doc["by"]
    if not isinstance(frozen, bool) or not isinstance(reason, str) or not isinstance(by, str):
        raise TypeError("frozen must be a boolean, reason and by strings")
    at = datetime.fromisoformat(doc["at"])
    return FreezeState(frozen, reason, by, at if at.tzinfo else at.replace(tzinfo=UTC))
