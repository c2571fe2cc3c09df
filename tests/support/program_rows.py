"""Checks on a solution of a program given as rows (a sparse matrix and each row's bounds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def meets_rows(matrix: Any, solution: np.ndarray, lows: Sequence[float], highs: Sequence[float]) -> bool:
    """Whether every row of ``matrix`` at ``solution`` lies within its bounds."""
    sums = matrix @ solution
    return bool(np.all(sums >= np.array(lows) - 1e-9) and np.all(sums <= np.array(highs) + 1e-9))
