"""``--schedule``: ceilings by time of day, and the rates they are written in."""

from __future__ import annotations

from datetime import time

import pytest

from ferry.errors import UsageError
from ferry.execute.pace.schedule import Schedule
from ferry.execute.pace.settings import PaceSettings
from ferry.formats.sizes import parse_rate, parse_size


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("40MB/s", 40 * 10**6),
        ("40MB", 40 * 10**6),
        ("1.5 GiB/s", 3 * 2**29),
        ("1048576", 2**20),
        ("2kb/S", 2000),
    ],
)
def test_rates(text: str, rate: int) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["fast", "0MB/s", "-1", "40 MiBps", "iB", ""])
def test_bad_rates_say_what_they_got(text: str) -> None:
    with pytest.raises(ValueError, match="rate such as 40MB/s"):
        parse_rate(text)


def test_sizes_keep_decimal_and_binary_prefixes_apart() -> None:
    assert parse_size("500GB") == 500 * 10**9
    assert parse_size("2TiB") == 2 * 2**40
    with pytest.raises(ValueError, match="size such as"):
        parse_size("2iB")


def test_windows_wrap_past_midnight_and_the_first_match_wins() -> None:
    schedule = Schedule.parse("22:00-06:00=200MB/s, 12:00-13:00=80MB/s, *=40MB/s")
    assert schedule.ceiling_at(time(23, 30)) == 200 * 10**6
    assert schedule.ceiling_at(time(5, 59)) == 200 * 10**6
    assert schedule.ceiling_at(time(6, 0)) == 40 * 10**6
    assert schedule.ceiling_at(time(12, 30)) == 80 * 10**6
    assert Schedule.parse(schedule.to_text()) == schedule


def test_no_window_no_ceiling_and_the_lower_of_both_ceilings() -> None:
    schedule = Schedule.parse("09:00-17:00=20MB/s")
    assert schedule.ceiling_at(time(18, 0)) is None
    settings = PaceSettings(max_throttle=30 * 10**6, schedule=schedule)
    assert settings.ceiling_at(time(10, 0)) == 20 * 10**6
    assert settings.ceiling_at(time(20, 0)) == 30 * 10**6
    assert PaceSettings.from_json(settings.to_json()) == settings


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("22:00-06:00", "is not HH:MM-HH:MM=RATE"),
        ("night=40MB/s", "'night' is not a window"),
        ("25:00-06:00=1MB", "not a time of day"),
        ("*=fast", "rate such as"),
        (" , ", "no entry"),
    ],
)
def test_bad_schedules_name_the_entry(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Schedule.parse(text)
