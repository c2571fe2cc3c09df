"""Holders and pinned partitions in the flow (:mod:`ferry.plan.balance.solvers.slots`): the min-cost
flow keeps as many replicas as the integer program of the same rows."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array, csr_array
from support.program_rows import meets_rows

from ferry.plan.balance.solvers.slots import KEPT, PAIR
from ferry.plan.balance.solvers.transport import BROKER, OTHER, RACK, TOPIC, Transport


class Program:
    """Columns and signed rows, with a (topic, rack) group for holder and pair rows."""

    def __init__(self) -> None:
        self.upper: list[float] = []
        self.gain: list[int] = []
        self.entries: list[tuple[int, int, float]] = []
        self.lows: list[float] = []
        self.highs: list[float] = []
        self.kinds: list[str] = []
        self.groups: list[tuple[int, int]] = []

    def column(self, upper: float, gain: int) -> int:
        self.upper.append(upper)
        self.gain.append(gain)
        return len(self.upper) - 1

    def row(self, terms: list[tuple[int, float]], lo: float, hi: float, kind: str, group: int = -1) -> None:
        r = len(self.lows)
        self.entries += [(r, c, v) for c, v in terms]
        self.lows.append(lo)
        self.highs.append(hi)
        self.kinds.append(kind)
        if group >= 0:
            self.groups.append((r, group))

    def matrix(self) -> csr_array:
        rows, cols, vals = zip(*self.entries, strict=True) if self.entries else ((), (), ())
        shape = (len(self.lows), len(self.upper))
        return coo_array((np.array(vals, dtype=float), (np.array(rows), np.array(cols))), shape=shape).tocsr()

    def network(self) -> Transport | None:
        at = np.array([r for r, _ in self.groups], dtype=np.int64)
        ids = np.array([g for _, g in self.groups], dtype=np.int64)
        lows, highs, upper = np.array(self.lows), np.array(self.highs), np.array(self.upper)
        return Transport.of(self.matrix(), self.kinds, lows, highs, upper, (at, ids))

    def integer_optimum(self) -> np.ndarray | None:
        constraints = LinearConstraint(self.matrix(), np.array(self.lows), np.array(self.highs))
        bounds = Bounds(np.zeros(len(self.upper)), np.array(self.upper))
        weight = -np.array(self.gain, dtype=float)
        result = milp(weight, constraints=constraints, bounds=bounds, integrality=np.ones(len(self.upper)))
        return None if result.x is None else np.rint(result.x)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    """Topics handing out extras, partitions keeping replicas on holders (some pinned: at most
    ``hi`` of their replicas in one rack), holders whose slots are their base plus an extra."""
    brokers = draw(st.integers(2, 6))
    racks = draw(st.integers(1, 3))
    rack_of = [b % racks for b in range(brokers)]
    program = Program()
    band: dict[int, list[int]] = {}
    for t in range(draw(st.integers(1, 3))):
        x = _extras(draw, program, rack_of, racks)
        for b, c in x.items():
            band.setdefault(b, []).append(c)
        on, paired = _partitions(draw, program, rack_of, t * racks)
        for b, kept in on.items():
            if paired.issuperset(kept) and draw(st.booleans()):
                continue  # no holder row: a broker holding no more than its base keeps all it may
            terms = [(c, 1.0) for c in kept]
            if draw(st.booleans()):
                terms.append((program.column(draw(st.integers(0, 2)), 1), 1.0))  # f: free replicas
            if b in x:
                terms.append((x[b], -1.0))
            program.row(terms, -np.inf, draw(st.integers(0, 1)), KEPT, t * racks + rack_of[b])
    for cols in band.values():
        lo = draw(st.integers(-1, 1))
        program.row([(c, 1.0) for c in cols], lo, lo + draw(st.integers(0, 3)), BROKER)
    return program


def _extras(draw: st.DrawFn, program: Program, rack_of: list[int], racks: int) -> dict[int, int]:
    """A topic's extras ``x`` by broker (none in some racks), its topic row and some rack rows."""
    closed = {k for k in range(racks) if draw(st.booleans()) and draw(st.booleans())}
    x = {b: program.column(1, draw(st.integers(0, 1))) for b, k in enumerate(rack_of) if k not in closed}
    extras = draw(st.integers(0, len(x)))
    program.row([(c, 1.0) for c in x.values()], extras, extras, TOPIC)
    for k in range(racks):
        cols = [c for b, c in x.items() if rack_of[b] == k]
        if cols and draw(st.booleans()):
            lo, hi = draw(st.integers(0, 1)), draw(st.integers(1, len(cols)))
            program.row([(c, 1.0) for c in cols], lo, hi, RACK)
    return x


def _partitions(
    draw: st.DrawFn, program: Program, rack_of: list[int], group: int
) -> tuple[dict[int, list[int]], set[int]]:
    """A topic's partitions' ``k`` columns by broker, and those in pair rows (groups from
    ``group``, the topic's first)."""
    on: dict[int, list[int]] = {}
    paired: set[int] = set()
    for _ in range(draw(st.integers(1, 4))):
        replicas = draw(st.lists(st.integers(0, len(rack_of) - 1), min_size=1, max_size=3, unique=True))
        cols = {b: program.column(1, 1) for b in replicas}
        for k in sorted(set(rack_of)):
            here = [cols[b] for b in replicas if rack_of[b] == k]
            if len(here) > 1 or (here and draw(st.booleans())):
                hi = draw(st.integers(0, len(here) - 1 if len(here) > 1 else 1))
                program.row([(c, 1.0) for c in here], -np.inf, hi, PAIR, group + k)
                paired.update(here)
        for b, c in cols.items():
            on.setdefault(b, []).append(c)
    return on, paired


@settings(max_examples=300, deadline=None)
@given(programs())
def test_flow_keeps_as_many_replicas_as_the_integer_program(program: Program) -> None:
    network = program.network()
    assert network is not None
    gain = np.array(program.gain, dtype=np.int64)
    flows = network.solve(gain, np.zeros(len(gain), dtype=np.int64))
    expected = program.integer_optimum()
    if expected is None:
        assert flows is None
        return
    assert isinstance(flows, np.ndarray)
    assert meets_rows(program.matrix(), flows, program.lows, program.highs)
    assert np.all(flows <= np.array(program.upper)) and np.all(flows >= 0)
    assert gain @ flows == gain @ expected


def test_a_kept_replica_counts_once_between_two_holders_of_one_pair() -> None:
    # One partition with replicas on brokers 0 and 1 of one rack keeps at most one of them; each
    # broker has a slot (base 1), so exactly one stays.
    program = Program()
    k0, k1 = program.column(1, 1), program.column(1, 1)
    program.row([(k0, 1.0), (k1, 1.0)], -np.inf, 1, PAIR, 0)
    program.row([(k0, 1.0)], -np.inf, 1, KEPT, 0)
    program.row([(k1, 1.0)], -np.inf, 1, KEPT, 0)
    network = program.network()
    assert network is not None
    flows = network.solve(np.array([1, 1]), np.array([0, 0]))
    assert isinstance(flows, np.ndarray) and flows.sum() == 1


def test_holders_of_one_group_under_different_parents_are_no_network() -> None:
    # Two holders tagged as one (topic, rack) group, whose extras leave different topics.
    program = Program()
    x0, x1 = program.column(1, 0), program.column(1, 0)
    k0, k1 = program.column(1, 1), program.column(1, 1)
    program.row([(x0, 1.0)], 1, 1, TOPIC)
    program.row([(x1, 1.0)], 1, 1, TOPIC)
    program.row([(k0, 1.0), (x0, -1.0)], -np.inf, 0, KEPT, 0)
    program.row([(k1, 1.0), (x1, -1.0)], -np.inf, 0, KEPT, 0)
    assert program.network() is None


def test_a_holder_row_with_another_row_on_its_kept_replicas_is_no_network() -> None:
    program = Program()
    k0, k1 = program.column(1, 1), program.column(1, 1)
    program.row([(k0, 1.0)], -np.inf, 1, KEPT, 0)
    program.row([(k1, 1.0)], -np.inf, 1, KEPT, 0)
    program.row([(k0, 1.0), (k1, 1.0)], 1, 2, OTHER)
    assert program.network() is None
