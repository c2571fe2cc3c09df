"""An integer program under construction: columns with bounds and objective terms, rows as sparse
triplets with their kind (:mod:`ferry.plan.flow`), solved by :func:`ferry.plan.solve.optimum`.

The balance program (:mod:`ferry.plan.program`) and the exact pass's chunks (:mod:`ferry.plan.rejoin`)
are built on it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ferry.plan.flow import OTHER
from ferry.plan.solve import optimum


class Columns:
    """Columns are added as the rows that use them are built."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lows: list[float] = []
        self.highs: list[float] = []
        self.upper: list[float] = []
        self.gain: list[int] = []
        self.size: list[int] = []
        self.penalty: dict[int, int] = {}
        """Columns whose every unit costs a penalty (:func:`ferry.plan.solve.optimum`), and how many."""
        self.kinds: list[str] = []
        """Per row: :data:`TOPIC`, :data:`RACK` or :data:`BROKER` (rows on extras alone), or :data:`OTHER`."""

    def column(self, upper: float, gain: int = 0, size: int = 0) -> int:
        """A column worth ``gain`` kept replicas, plus ``size`` bytes for the tie-break."""
        self.upper.append(upper)
        self.gain.append(gain)
        self.size.append(size)
        return len(self.upper) - 1

    def row(self, terms: Sequence[tuple[int, float]], lo: float, hi: float, kind: str = OTHER) -> None:
        r = len(self.lows)
        self.lows.append(lo)
        self.highs.append(hi)
        self.kinds.append(kind)
        self.rows.extend([r] * len(terms))
        self.cols.extend([col for col, _ in terms])
        self.vals.extend([val for _, val in terms])

    def optimum(self, scale: float, *, relax_first: bool) -> np.ndarray | None:
        """An optimal solution (:func:`ferry.plan.solve.optimum`), ``None`` when there is none."""
        return optimum(
            rows=self.rows,
            cols=self.cols,
            vals=self.vals,
            lows=self.lows,
            highs=self.highs,
            kinds=self.kinds,
            upper=self.upper,
            gain=self.gain,
            size=self.size,
            scale=scale,
            relax_first=relax_first,
            penalty=self.penalty,
        )
