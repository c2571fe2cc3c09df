"""The balance program handed to min-cost flow, where it is a network
(:mod:`ferry.plan.balance.solvers.transport`): :func:`ferry.plan.balance.solvers.parts.optimum` tries it
first, HiGHS after it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ferry.plan.balance.solvers.rowless import WithRowless, rowless
from ferry.plan.balance.solvers.transport import NETWORK, UNSOLVED, Transport, Unsolved


def network_kinds(kinds: Sequence[str], implied: Sequence[int]) -> bool:
    """Whether every row of no network kind is among the ``implied`` ones, which the flow leaves out."""
    others = [r for r, k in enumerate(kinds) if k not in NETWORK]
    return not others or set(others) <= set(implied)


def flow_optimum(
    matrix: Any,
    lows: Sequence[float],
    highs: Sequence[float],
    kinds: Sequence[str],
    upper: Sequence[float] | np.ndarray,
    gain: Sequence[int] | np.ndarray,
    size: Sequence[int] | np.ndarray,
    penalty: Sequence[int] = (),
    implied: Sequence[int] = (),
    groups: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray | Unsolved | None:
    """The optimum of the program, given as to :func:`ferry.plan.balance.solvers.parts.optimum`, where
    it is a network and min-cost flow answers; ``None`` where no flow meets its bounds;
    :data:`~ferry.plan.balance.solvers.transport.UNSOLVED` where it is no network or the flow solver
    could not answer."""
    bounds = (np.array(lows), np.array(highs), np.array(upper))
    return network_optimum(as_network(matrix, list(kinds), bounds, implied, groups), gain, size, penalty)


def network_optimum(
    network: Transport | WithRowless | None,
    gain: Sequence[int] | np.ndarray,
    size: Sequence[int] | np.ndarray,
    penalty: Sequence[int] = (),
) -> np.ndarray | Unsolved | None:
    """:func:`flow_optimum` of a program :func:`as_network` made a network of (``None``: it did not)."""
    if network is None:
        return UNSOLVED
    gains, sizes = np.asarray(gain, dtype=np.int64), np.asarray(size, dtype=np.int64)
    return network.solve(gains, sizes, fines_of(len(gains), penalty))


def fines_of(columns: int, penalty: Sequence[int]) -> np.ndarray:
    """Per column, the penalty units each of its units costs."""
    fines = np.zeros(columns, dtype=np.int64)
    if len(penalty):
        # A column named twice is fined twice (a pool's full unit: ferry.plan.balance.program.pools).
        np.add.at(fines, np.asarray(penalty, dtype=np.int64), 1)
    return fines


def as_network(
    matrix: Any,
    kinds: list[str],
    bounds: tuple[np.ndarray, np.ndarray, np.ndarray],
    implied: Sequence[int],
    groups: tuple[np.ndarray, np.ndarray] | None,
) -> Transport | WithRowless | None:
    """The program as a network, without its implied rows of no network kind (a pinned
    partition's row of at most ``rf`` replicas where its rack rows imply it), and with the
    columns those leave in no row apart (:mod:`ferry.plan.balance.solvers.rowless`).

    ``matrix`` is cut into a copy without those rows, then one without those columns, each let go
    once the next is made, the last once the network has read it: a caller that holds no ``matrix``
    of its own (it passes the matrix made for the call) lets at most two copies live at once, and
    none beside the network's arrays."""
    lows, highs, upper = bounds
    if not network_kinds(kinds, implied):
        return None  # a row of no network's kind stays: no need to cut the matrix to see it
    dropped = [r for r in implied if kinds[r] not in NETWORK]
    if dropped and len(dropped) < len(kinds):
        kept = np.ones(len(kinds), dtype=bool)
        kept[np.asarray(dropped, dtype=np.int64)] = False
        if groups is not None:  # grouped rows are of network kinds: none is dropped, all renumbered
            groups = ((np.cumsum(kept) - 1)[groups[0]], groups[1])
        matrix, lows, highs = matrix[kept], lows[kept], highs[kept]
        kinds = [k for k, keep in zip(kinds, kept.tolist(), strict=True) if keep]
    alone = rowless(matrix)
    cut = bool(alone.any())
    if cut and not np.all(np.isfinite(upper[alone])):
        return None  # a column that gains without bound: HiGHS says what that program is
    # The last copy goes to the network in a list, which it empties: this frame holds none of it
    # while the network's arrays are made (the three-rack 1M start peaked there).
    held = [matrix[:, ~alone] if cut else matrix]
    del matrix
    network = Transport.of(held, kinds, lows, highs, upper[~alone] if cut else upper, groups)
    if not cut or network is None:
        return network
    return WithRowless(network, alone, upper)
