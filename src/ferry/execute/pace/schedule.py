"""Ceilings by time of day: ``--schedule '22:00-06:00=200MB/s,*=40MB/s'`` (pure).

Each entry is ``HH:MM-HH:MM=RATE`` (local time; a window may wrap past midnight) or ``*=RATE`` for
every other time; the first entry whose window holds the time wins. A time no entry covers has no
scheduled ceiling. Rates are written as :func:`ferry.formats.sizes.parse_rate` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time

from ferry.errors import UsageError
from ferry.formats import sizes

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def _rate(text: str, where: str) -> int:
    try:
        return sizes.parse_rate(text)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


@dataclass(frozen=True, slots=True)
class Window:
    """``start`` up to (not including) ``end``, minutes after midnight; None: any time (``*``)."""

    start: int | None
    end: int | None
    rate: int

    def holds(self, minute: int) -> bool:
        if self.start is None or self.end is None:
            return True
        if self.start <= self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end  # wraps past midnight


@dataclass(frozen=True, slots=True)
class Schedule:
    """Ceilings by time of day, first matching window first."""

    windows: tuple[Window, ...]

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """Read ``--schedule``.

        Raises:
            UsageError: an entry is not ``HH:MM-HH:MM=RATE`` or ``*=RATE``, naming the entry.
        """
        windows = []
        for entry in (e for e in text.split(",") if e.strip()):
            span, sep, rate_text = entry.partition("=")
            if not sep:
                raise UsageError(f"--schedule: {entry.strip()!r} is not HH:MM-HH:MM=RATE or *=RATE")
            rate = _rate(rate_text, f"--schedule {entry.strip()!r}")
            if span.strip() == "*":
                windows.append(Window(None, None, rate))
                continue
            found = _WINDOW.match(span)
            if found is None:
                raise UsageError(f"--schedule: {span.strip()!r} is not a window such as 22:00-06:00")
            h1, m1, h2, m2 = (int(g) for g in found.groups())
            if h1 > 23 or h2 > 24 or m1 > 59 or m2 > 59 or (h2 == 24 and m2):
                raise UsageError(f"--schedule: {span.strip()!r} is not a time of day")
            windows.append(Window(h1 * 60 + m1, h2 * 60 + m2, rate))
        if not windows:
            raise UsageError("--schedule: no entry (expected e.g. '22:00-06:00=200MB/s,*=40MB/s')")
        return cls(tuple(windows))

    def ceiling_at(self, at: time) -> int | None:
        """The ceiling at local time ``at``; None where no window covers it."""
        minute = at.hour * 60 + at.minute
        return next((w.rate for w in self.windows if w.holds(minute)), None)

    def to_text(self) -> str:
        """The schedule as ``--schedule`` takes it (stored in the journal)."""
        parts = []
        for w in self.windows:
            if w.start is None or w.end is None:
                parts.append(f"*={w.rate}")
            else:
                parts.append(f"{_clock(w.start)}-{_clock(w.end)}={w.rate}")
        return ",".join(parts)


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"
