"""The planner's layout as the README describes it: one row of the Architecture table per module or
package at the top of ``ferry.plan``, a one-paragraph docstring on every phase package, and few
modules left at the top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PLAN = ROOT / "src" / "ferry" / "plan"


def _top() -> set[str]:
    """The modules and packages directly under ``ferry.plan`` (its ``__init__`` aside)."""
    modules = {p.stem for p in PLAN.glob("*.py") if p.stem != "__init__"}
    packages = {p.name for p in PLAN.iterdir() if (p / "__init__.py").is_file()}
    return modules | packages


def _packages() -> list[Path]:
    return sorted(p.parent for p in PLAN.rglob("__init__.py") if p.parent != PLAN)


def test_the_readme_table_names_every_module_and_package_at_the_top_of_the_planner() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| [^|]+ \| `ferry\.plan\.(\w+)` \|", readme, flags=re.MULTILINE)
    assert len(rows) == len(set(rows))
    assert set(rows) == _top()


def test_the_planner_has_phase_packages_and_few_modules_at_its_top() -> None:
    packages = {p.name for p in PLAN.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in PLAN.glob("*.py") if p.stem != "__init__"}
    assert {"prepare", "balance", "place", "leaders", "disk", "measure"} <= packages
    assert len(modules) + 1 <= 8  # with __init__.py


def test_every_package_under_the_planner_says_in_one_paragraph_what_it_holds() -> None:
    for package in _packages():
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc, package
        assert "\n\n" not in doc.strip(), package
