"""How ``benchmarks/pace.py`` reports the slowest 1 % of its probe's sends as stalls."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))
import pace  # the benchmarks folder is no package: found by path


def _probe(slow: dict[float, float], n: int = 300) -> list[tuple[float, float]]:
    """``n`` sends 50 ms apart answered in 10 ms, but those at the times in ``slow``."""
    return [(at, slow.get(at, 0.01)) for at in (round(i * 0.05, 2) for i in range(n))]


def test_sends_waiting_at_the_same_moment_are_one_stall() -> None:
    # The 1 % cut of 300 sends is the third slowest: 0.45 s. The sends at 5.0 and 5.05 s overlap
    # (the second went while the first waited): one stall; the one at 9.0 s is another.
    samples = _probe({5.0: 0.5, 5.05: 0.45, 9.0: 0.6, 12.0: 0.3})
    assert pace._stalls(samples, 1.0, 15.0) == [(4.0, 500.0), (8.0, 600.0)]


def test_only_the_sends_of_the_move_count_and_too_few_give_none() -> None:
    # The 2-s send before the move is not one of the move's 280 sends, whose 1 % are the two
    # slowest: 0.6 and 0.55 s (not the 0.5 s one).
    samples = _probe({0.5: 2.0, 5.0: 0.5, 9.0: 0.6, 10.0: 0.55})
    assert pace._stalls(samples, 1.0, 15.0) == [(8.0, 600.0), (9.0, 550.0)]
    assert pace._stalls(samples[:99], 0.0, 15.0) == []
