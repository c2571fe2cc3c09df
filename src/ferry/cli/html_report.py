"""A plan as one self-contained HTML page: charts drawn by Plotly, its script inlined, so the file
opens offline, is mailed or attached to a change ticket as it is.

The page shows the report's figures, then (:class:`~ferry.cli.plan_view.PlanView`) replicas, bytes
and preferred leaders per broker before and after, grouped by rack, with the spread the rack rule
forces; the per-topic spread of the 20 worst topics before and after; and a matrix of bytes moved
from each source broker to each destination broker.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ferry.cli.plan_view import BrokerLoad, PlanView
from ferry.cli.render import human_bytes
from ferry.formats import write_text_atomic

_BEFORE, _AFTER = "#9aa5b1", "#1f77b4"


def write_html_report(path: Path, view: PlanView, report: Mapping[str, Any], title: str) -> None:
    """Write the page for ``view`` and its report.json document ``report`` to ``path``, atomically."""
    write_text_atomic(path, html_page(view, report, title))


def html_page(view: PlanView, report: Mapping[str, Any], title: str) -> str:
    """The page for ``view`` and its report.json document ``report``."""
    figures = [_brokers(view, report), _topics(view), _matrix(view)]
    charts = [
        fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"chart-{name}")
        for i, (fig, name) in enumerate(zip(figures, ("brokers", "topics", "moved"), strict=True))
    ]
    return _PAGE.format(title=html.escape(title), summary=_summary(report), charts="\n".join(charts))


def _labels(view: PlanView) -> list[str]:
    return [f"{rack} / {broker}" for rack, broker in zip(view.racks, view.brokers, strict=True)]


def _brokers(view: PlanView, report: Mapping[str, Any]) -> go.Figure:
    forced = report.get("forced_replica_spread")
    rows = (("replicas", "replicas"), ("bytes", "bytes (GB)"), ("leaders", "preferred leaders"))
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, subplot_titles=[title for _, title in rows])
    labels = _labels(view)
    for row, (field, _) in enumerate(rows, start=1):
        for name, loads, colour in (("before", view.before, _BEFORE), ("after", view.after, _AFTER)):
            values = [_value(load, field) for load in loads]
            fig.add_trace(
                go.Bar(name=name, x=labels, y=values, marker_color=colour, showlegend=row == 1),
                row=row,
                col=1,
            )
    if isinstance(forced, int) and view.after:
        low = min(load.replicas for load in view.after)
        fig.add_hline(
            y=low + forced, line_dash="dash", row=1, col=1, annotation_text=f"forced spread {forced}"
        )
    fig.update_layout(barmode="group", height=760, title="Per broker, grouped by rack (rack / broker)")
    return fig


def _value(load: BrokerLoad, field: str) -> float:
    return load.bytes / 1e9 if field == "bytes" else float(getattr(load, field))


def _topics(view: PlanView) -> go.Figure:
    worst = view.worst_topics(20)
    names = [topic for topic, _, _ in worst]
    fig = go.Figure(
        [
            go.Bar(name="before", x=names, y=[b for _, b, _ in worst], marker_color=_BEFORE),
            go.Bar(name="after", x=names, y=[a for _, _, a in worst], marker_color=_AFTER),
        ]
    )
    fig.update_layout(
        barmode="group", title="Replica spread per topic (the 20 widest)", yaxis_title="replicas"
    )
    return fig


def _matrix(view: PlanView) -> go.Figure:
    sources = sorted({s for s, _ in view.moved})
    dests = sorted({d for _, d in view.moved})
    z = [[view.moved.get((s, d), 0) / 1e9 for d in dests] for s in sources]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"to {d}" for d in dests],
            y=[f"from {s}" for s in sources],
            colorscale="Blues",
            colorbar={"title": "GB"},
            hovertemplate="%{y} %{x}: %{z:.2f} GB<extra></extra>",
        )
    )
    fig.update_layout(title="Bytes moved, source broker to destination broker", yaxis_autorange="reversed")
    return fig


def _summary(report: Mapping[str, Any]) -> str:
    after = report.get("balance", {}).get("after", {})
    before = report.get("balance", {}).get("before", {})
    rows: Sequence[tuple[str, object]] = (
        ("partitions in scope", report.get("partitions")),
        ("partitions changed", report.get("partitions_changed")),
        ("replica moves (lower bound)", f"{report.get('replica_moves')} ({report.get('lower_bound')})"),
        ("data to move", human_bytes(int(report.get("bytes_moved") or 0))),
        ("replica spread", f"{before.get('replica_spread')} -> {after.get('replica_spread')}"),
        ("forced spread (rack rule)", report.get("forced_replica_spread")),
        ("leader spread", f"{before.get('leader_spread')} -> {after.get('leader_spread')}"),
        ("rack violations", f"{before.get('rack_violations')} -> {after.get('rack_violations')}"),
    )
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    return f'<table id="summary">{cells}</table>'


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1200px}}th{{text-align:left;padding-right:2em}}
</style></head>
<body><h1>{title}</h1>
{summary}
{charts}
</body></html>
"""
