"""The plan files a ``ferry plan`` run wrote, to compare runs byte for byte."""

from __future__ import annotations

from pathlib import Path


def plan_files(folder: Path) -> dict[str, bytes]:
    """Every JSON file under ``folder`` by its relative path, but the fleet summary (it holds
    timings, which differ from run to run)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*.json"))
        if p.name != "fleet-summary.json"
    }
