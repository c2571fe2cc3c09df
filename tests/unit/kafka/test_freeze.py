"""The freeze record's value: JSON both ways, and what counts as frozen when it is not ours."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ferry.kafka.freeze import FreezeState, decode_freeze, encode_freeze

AT = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_round_trip_keeps_everything_and_writes_utc() -> None:
    local = AT.astimezone(timezone(timedelta(hours=-5)))
    state = FreezeState(True, "disk swap on broker 3 \u2014 hold", "ops@db-1", local)
    value = encode_freeze(state)
    assert json.loads(value) == {
        "frozen": True,
        "reason": "disk swap on broker 3 \u2014 hold",
        "by": "ops@db-1",
        "at": "2025-01-02T03:04:05+00:00",
    }
    assert decode_freeze(value, 0) == state


def test_a_tombstone_is_no_freeze() -> None:
    assert decode_freeze(None, 0) is None


def test_a_time_without_zone_is_read_as_utc_but_never_written() -> None:
    value = b'{"frozen": false, "reason": "", "by": "x@y", "at": "2025-01-02T03:04:05"}'
    assert decode_freeze(value, 0) == FreezeState(False, "", "x@y", AT)
    with pytest.raises(ValueError, match="time zone"):
        FreezeState(True, "r", "x@y", datetime(2025, 1, 2))


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (b"not json", "Expecting value"),
        (b'{"frozen": true}', "no 'reason'"),
        (b'{"frozen": "yes", "reason": "", "by": "", "at": "2025-01-02T03:04:05Z"}', "must be a boolean"),
        (b'{"frozen": false, "reason": "", "by": "", "at": "yesterday"}', "yesterday"),
        (b"[1, 2]", "list indices"),
        (b"\xff\xfe", "utf-8"),
    ],
)
def test_a_record_that_is_not_ours_counts_as_frozen(value: bytes, why: str) -> None:
    """When in doubt the brake holds; the reason names the problem and the way out."""
    state = decode_freeze(value, 1_735_787_045_000)
    assert state is not None and state.frozen
    assert why in state.reason and "'ferry unfreeze' clears it" in state.reason
    assert state.at == AT
