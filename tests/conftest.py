"""Test-suite wiring: make ``tests/support`` importable and mark tests by folder.

The tests are not a package (no ``__init__.py``), so test module names must be unique across the
tree; helpers are imported as ``from support.builders import ...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

# pytest's default import mode would put tests/ on sys.path already; doing it here keeps the
# support imports working under --import-mode=importlib too.
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

_FOLDER_MARKS = {
    "unit": [pytest.mark.unit],
    "integration": [pytest.mark.integration],
    "spark": [pytest.mark.integration, pytest.mark.spark],
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by folder: unit/ and integration/ by name, spark/ as ``integration`` and ``spark``."""
    for item in items:
        try:
            folder = item.path.resolve().relative_to(TESTS).parts[0]
        except ValueError:
            continue  # collected from outside tests/
        for mark in _FOLDER_MARKS.get(folder, []):
            item.add_marker(mark)
