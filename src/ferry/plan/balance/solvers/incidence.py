"""Which row of a set each column of a sparse program sits in: the node a column's arc leaves or
enters, where those rows are a network's (:mod:`ferry.plan.balance.solvers.transport`,
:mod:`ferry.plan.balance.solvers.slots`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.sparse import csr_array


def row_of(matrix: csr_array, rows: np.ndarray) -> np.ndarray | None:
    """Per column, the one of ``rows`` it appears in (-1: none); ``None`` if one appears in two."""
    part = matrix[rows].tocsc()
    counts = np.diff(part.indptr)
    if np.any(counts > 1):
        return None
    owner = np.full(matrix.shape[1], -1, dtype=np.int64)
    owner[counts == 1] = rows[part.indices]
    return owner
