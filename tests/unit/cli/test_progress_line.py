"""The one progress line: ``ferry progress`` names missing figures, ``execute --wait`` leaves them out."""

from __future__ import annotations

from ferry.cli.render import progress_line
from ferry.execute.progress import Estimate, Progress

MIB = 1024 * 1024


def _line(estimate: Estimate, *, say_unknown: bool, done: int = MIB) -> str:
    progress = Progress(done, 4 * MIB)
    return progress_line(progress, estimate, done=1, total=4, in_flight=2, say_unknown=say_unknown)


def test_with_figures_both_forms_agree() -> None:
    estimate = Estimate(rate=512 * 1024, eta_s=6.2)
    expected = "25.0% (1.0 MiB of 4.0 MiB), 1/4 moves done, 2 in flight, 512.0 KiB/s, ETA 6 s"
    assert _line(estimate, say_unknown=True) == expected
    assert _line(estimate, say_unknown=False) == expected


def test_missing_figures_are_named_only_when_asked() -> None:
    unknown = Estimate(rate=None, eta_s=None)
    head = "25.0% (1.0 MiB of 4.0 MiB), 1/4 moves done, 2 in flight"
    assert _line(unknown, say_unknown=True) == f"{head}, rate unknown, ETA unknown"
    assert _line(unknown, say_unknown=False) == head


def test_nothing_left_needs_no_eta() -> None:
    line = _line(Estimate(rate=None, eta_s=None), say_unknown=True, done=4 * MIB)
    assert line.endswith("rate unknown")


def test_a_negative_rate_reads_as_zero() -> None:
    assert _line(Estimate(rate=-5.0, eta_s=None), say_unknown=False).endswith(", 0 B/s")
