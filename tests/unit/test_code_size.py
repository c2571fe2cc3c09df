"""Rooms of a livable size: no module under src/ over 400 lines, no function over 60."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "ferry"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    modules = sorted(SRC.rglob("*.py"))
    assert modules, f"no Python files under {SRC}"
    return modules


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert long == {}


def test_no_function_is_over_60_lines() -> None:
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.lineno} {node.name}"] = lines
    assert long == {}
