"""An integer program under construction: columns with bounds and objective terms, rows as sparse
triplets with their kind (:mod:`ferry.plan.balance.solvers.transport`), solved by
:func:`ferry.plan.balance.solvers.parts.optimum`.

The balance program (:mod:`ferry.plan.balance.program.integer_program`) and the exact pass's chunks
(:mod:`ferry.plan.balance.repair.chunk_program`) are built on it."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from ferry.plan.balance.solvers.parts import Starts, optimum, sparse_rows
from ferry.plan.balance.solvers.transport import OTHER


def extend_from(target: array[Any], values: np.ndarray) -> None:
    """Append ``values`` to a typed array as its raw bytes: converting millions of numpy values to
    Python numbers first takes seconds."""
    dtype = np.float64 if target.typecode == "d" else np.int64
    target.frombytes(np.ascontiguousarray(values, dtype=dtype).tobytes())


class TopicColumns:
    """Columns of many topics, each at a broker position (-1: none): three typed
    arrays instead of a list of (position, column) pairs per topic, which at 100,000 topics held
    three million tuples and int objects on the driver."""

    def __init__(self) -> None:
        self.topic = array("q")
        self.pos = array("q")
        self.col = array("q")
        self._order: np.ndarray | None = None
        """Entries sorted by topic (stable), for :meth:`of`; read again once more are added."""
        self._sorted = np.zeros(0, dtype=np.int64)
        self._pairs: tuple[int, int, np.ndarray] | None = None
        """:meth:`pairs` as last worked out: for what width, over how many entries."""

    def add(self, t: int, pos: Sequence[int], cols: Sequence[int]) -> None:
        """Topic ``t``'s ``cols`` at positions ``pos``."""
        self.topic.extend([t] * len(cols))
        self.pos.extend(pos)
        self.col.extend(cols)

    def add_one(self, t: int, col: int) -> None:
        """Topic ``t``'s column ``col``, at no position."""
        self.topic.append(t)
        self.pos.append(-1)
        self.col.append(col)

    def extend(self, topic: np.ndarray, pos: np.ndarray, col: np.ndarray) -> None:
        """Many topics' columns at once."""
        extend_from(self.topic, topic)
        extend_from(self.pos, pos)
        extend_from(self.col, col)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of the topic, position and column arrays."""
        return (
            np.array(self.topic, dtype=np.int64),
            np.array(self.pos, dtype=np.int64),
            np.array(self.col, dtype=np.int64),
        )

    def pairs(self, width: int) -> np.ndarray:
        """``topic * width + position`` of every entry, sorted (shared: read only); worked out again
        only once entries were added."""
        if self._pairs is None or self._pairs[:2] != (width, len(self.topic)):
            topic, pos, _ = self.arrays()
            self._pairs = (width, len(self.topic), np.sort(topic * width + pos))
        return self._pairs[2]

    def of(self, t: int) -> list[tuple[int, int]]:
        """Topic ``t``'s (position, column) pairs."""
        if self._order is None or len(self._order) != len(self.topic):
            topics = np.array(self.topic, dtype=np.int64)
            self._order = np.argsort(topics, kind="stable")
            self._sorted = topics[self._order]
        lo, hi = np.searchsorted(self._sorted, [t, t + 1]).tolist()
        at = self._order[lo:hi].tolist()
        return [(self.pos[j], self.col[j]) for j in at]


class Columns:
    """Columns are added as the rows that use them are built.

    Held in typed arrays, not lists: a program of 5 million columns and 15 million entries would
    otherwise keep an int object of its own per entry on the driver."""

    def __init__(self) -> None:
        self.rows = array("q")
        self.cols = array("q")
        self.vals = array("d")
        self.lows = array("d")
        self.highs = array("d")
        self.upper = array("d")
        self.gain = array("q")
        self.size = array("q")
        self.penalty = array("q")
        """Columns whose every unit costs a penalty (:func:`ferry.plan.balance.solvers.parts.optimum`)."""
        self.kinds: list[str] = []
        """Per row: :data:`TOPIC`, :data:`RACK` or :data:`BROKER` (rows on extras alone), or :data:`OTHER`."""
        self.posed: Any = None
        """The rows of an earlier :meth:`optimum` as a sparse matrix, where it was to be kept."""
        self.starts: Starts | None = None
        """Where HiGHS ended on the parts of :attr:`posed`: the next :meth:`optimum` starts there."""
        self.grouped = (array("q"), array("q"))
        """Holder and pair rows (:mod:`ferry.plan.balance.solvers.slots`) and their (topic, rack)
        groups."""
        self.implied = array("q")
        """Rows that other rows imply at some optimum of every solution: left out where HiGHS solves
        (:func:`ferry.plan.balance.solvers.parts.optimum`), since they tie otherwise independent parts
        together; the min-cost flow needs them (a topic's row is its node)."""

    def column(self, upper: float, gain: int = 0, size: int = 0) -> int:
        """A column worth ``gain`` kept replicas, plus ``size`` bytes for the tie-break."""
        self.upper.append(upper)
        self.gain.append(gain)
        self.size.append(size)
        return len(self.upper) - 1

    def add_columns(self, upper: np.ndarray, gain: np.ndarray, size: np.ndarray) -> int:
        """Many columns at once; returns the first one's index (the rest follow it)."""
        first = len(self.upper)
        extend_from(self.upper, upper)
        extend_from(self.gain, gain)
        extend_from(self.size, size)
        return first

    def add_rows(
        self,
        entries: tuple[np.ndarray, np.ndarray, np.ndarray],
        bounds: tuple[np.ndarray, np.ndarray],
        kinds: Sequence[str],
    ) -> None:
        """Many rows at once: ``entries`` are (row, column, value) triplets sorted by row, rows
        counted from the first new one; ``bounds`` their lows and highs."""
        rows, cols, vals = entries
        extend_from(self.rows, len(self.lows) + rows)
        extend_from(self.cols, cols)
        extend_from(self.vals, vals)
        extend_from(self.lows, bounds[0])
        extend_from(self.highs, bounds[1])
        self.kinds.extend(kinds)

    def row(
        self, terms: Sequence[tuple[int, float]], lo: float, hi: float, kind: str = OTHER, group: int = -1
    ) -> None:
        """A row; ``group``: a holder or pair row's (topic, rack) group."""
        r = len(self.lows)
        if group >= 0:
            self.grouped[0].append(r)
            self.grouped[1].append(group)
        self.lows.append(lo)
        self.highs.append(hi)
        self.kinds.append(kind)
        self.rows.extend([r] * len(terms))
        self.cols.extend([col for col, _ in terms])
        self.vals.extend([val for _, val in terms])

    def ones(
        self,
        cols: Sequence[int] | np.ndarray,
        lo: float,
        hi: float,
        kind: str = OTHER,
        minus: Sequence[int] = (),
    ) -> None:
        """A row adding up ``cols`` less ``minus`` (coefficients 1 and -1): most rows are, and
        millions of (column, 1.0) pairs would otherwise be made only to be taken apart."""
        r = len(self.lows)
        self.lows.append(lo)
        self.highs.append(hi)
        self.kinds.append(kind)
        self.rows.extend([r] * (len(cols) + len(minus)))
        if isinstance(cols, np.ndarray):
            extend_from(self.cols, cols)
        else:
            self.cols.extend(cols)
        self.cols.extend(minus)
        self.vals.extend([1.0] * len(cols))
        self.vals.extend([-1.0] * len(minus))

    def optimum(
        self,
        scale: float,
        *,
        relax_first: bool,
        keep: bool = False,
        presolve: bool = True,
        cutoff: float | None = None,
    ) -> np.ndarray | None:
        """An optimal solution (:func:`ferry.plan.balance.solvers.parts.optimum`), ``None`` when there is
        none.

        The rows' entries go into a sparse matrix and are dropped here: on the driver they and the
        matrix would otherwise both be held while the solver runs. With ``keep`` the matrix stays
        (:attr:`posed`), and the next call adds only the rows posed since, and solves from where this
        one ended (:attr:`starts`); else it is let go. ``presolve``:
        :attr:`ferry.plan.balance.solvers.parts.Approach.presolve`; ``cutoff``: see there."""
        matrix = self.posed_matrix()
        starts = self.starts
        if keep and starts is None:
            starts = Starts()
        self.posed, self.starts = (matrix, starts) if keep else (None, None)
        return optimum(
            matrix=matrix,
            lows=self.lows,
            highs=self.highs,
            kinds=self.kinds,
            upper=self.upper,
            gain=self.gain,
            size=self.size,
            scale=scale,
            relax_first=relax_first,
            presolve=presolve,
            penalty=self.penalty,
            implied=self.implied,
            starts=starts,
            groups=(np.array(self.grouped[0], dtype=np.int64), np.array(self.grouped[1], dtype=np.int64)),
            cutoff=cutoff,
        )

    def posed_matrix(self) -> Any:
        """Every row posed so far as one sparse matrix (CSR), kept as :attr:`posed` until
        :meth:`let_go` or an :meth:`optimum` without ``keep``; the rows' entries move into it."""
        shape = (len(self.lows), len(self.upper))
        if self.posed is not None and not self.rows and self.posed.shape == shape:
            return self.posed
        entries = (self.rows, self.cols, self.vals)
        self.rows, self.cols, self.vals = array("q"), array("q"), array("d")
        self.posed = sparse_rows(entries, *shape, self.posed)
        return self.posed

    def let_go(self) -> None:
        """Drop what :meth:`optimum` kept for solving again."""
        self.posed, self.starts = None, None
