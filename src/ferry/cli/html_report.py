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
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ferry.cli.plan_view import BrokerLoad, PlanView
from ferry.cli.render import human_bytes
from ferry.execute.journal_pace import PaceRecord
from ferry.execute.journal_progress import ProgressSample
from ferry.execute.pace.controller import Role
from ferry.formats import write_text_atomic

_BEFORE, _AFTER = "#9aa5b1", "#1f77b4"


@dataclass(frozen=True, slots=True)
class Timeline:
    """An executed request as the journal kept it: progress samples, its throttle and its end."""

    request_id: int
    samples: Sequence[ProgressSample]
    throttle: int | None
    ended_at: float | None
    paced: Sequence[PaceRecord] = ()
    """``--pace auto``'s decisions, if it ran under it."""


def write_html_report(
    path: Path, view: PlanView, report: Mapping[str, Any], title: str, timeline: Timeline | None = None
) -> None:
    """Write the page for ``view`` and its report.json document ``report`` to ``path``, atomically."""
    write_text_atomic(path, html_page(view, report, title, timeline))


def html_page(view: PlanView, report: Mapping[str, Any], title: str, timeline: Timeline | None = None) -> str:
    """The page for ``view`` and its report.json document ``report`` (and a run's ``timeline``)."""
    named = [("brokers", _brokers(view, report)), ("topics", _topics(view)), ("moved", _matrix(view))]
    if report.get("log_dirs"):
        named.append(("dirs", _dirs(report["log_dirs"])))
    if timeline is not None and timeline.samples:
        named += [("copied", _copied(timeline)), ("eta", _eta(timeline))]
        if timeline.paced:
            named.append(("pace", _pace(timeline)))
    charts = [
        fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"chart-{name}")
        for i, (name, fig) in enumerate(named)
    ]
    return _PAGE.format(title=html.escape(title), summary=_summary(report), charts="\n".join(charts))


def _dirs(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Bytes in each log dir (JBOD) before and after the plan, broker by broker."""
    placed = [r for r in rows if r.get("path") is not None]
    labels = [f"{r['broker']} {r['path']}" for r in placed]
    fig = go.Figure()
    for name, key, colour in (("before", "bytes_before", _BEFORE), ("after", "bytes_after", _AFTER)):
        fig.add_trace(go.Bar(name=name, x=labels, y=[r[key] / 1e9 for r in placed], marker_color=colour))
    fig.update_layout(title="bytes per log dir (GB)", barmode="group")
    return fig


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


def _copied(timeline: Timeline) -> go.Figure:
    start = timeline.samples[0].at
    fig = go.Figure()
    for broker in sorted({s.broker for s in timeline.samples}):
        mine = [s for s in timeline.samples if s.broker == broker]
        fig.add_trace(
            go.Scatter(
                x=[s.at - start for s in mine], y=[s.done / 1e6 for s in mine], name=f"broker {broker}"
            )
        )
    if timeline.throttle:
        span = timeline.samples[-1].at - start
        limit = max(s.total for s in timeline.samples) / 1e6
        end = min(span, limit / (timeline.throttle / 1e6))
        line = go.Scatter(
            x=[0, end],
            y=[0, end * timeline.throttle / 1e6],
            name="throttle",
            line={"dash": "dash", "color": "red"},
        )
        fig.add_trace(line)
    title = f"Request {timeline.request_id}: MB copied per receiving broker"
    fig.update_layout(title=title, xaxis_title="seconds", yaxis_title="MB")
    return fig


def _pace(timeline: Timeline) -> go.Figure:
    """Each receiving broker's follower throttle as ``--pace auto`` set it, against the rate it
    copied at between progress samples."""
    start = timeline.samples[0].at
    fig = go.Figure()
    for broker in sorted({s.broker for s in timeline.samples}):
        mine = [s for s in timeline.samples if s.broker == broker]
        rates = [
            (b.at - start, (b.done - a.done) / (b.at - a.at) / 1e6) for a, b in pairwise(mine) if b.at > a.at
        ]
        fig.add_trace(
            go.Scatter(x=[t for t, _ in rates], y=[r for _, r in rates], name=f"broker {broker} copied")
        )
        set_at = [r for r in timeline.paced if r.broker == broker and r.role is Role.FOLLOWER]
        if set_at:
            fig.add_trace(
                go.Scatter(
                    x=[r.at - start for r in set_at],
                    y=[r.rate / 1e6 for r in set_at],
                    name=f"broker {broker} throttle",
                    line={"shape": "hv", "dash": "dash"},
                    text=[f"{r.state}: {r.reason}" for r in set_at],
                )
            )
    title = f"Request {timeline.request_id}: follower throttle set by --pace auto against the copy rate"
    fig.update_layout(title=title, xaxis_title="seconds", yaxis_title="MB/s")
    return fig


def _eta(timeline: Timeline) -> go.Figure:
    start = timeline.samples[0].at
    end = timeline.ended_at or timeline.samples[-1].at
    shown = sorted({(s.at, s.eta_s) for s in timeline.samples if s.eta_s is not None})
    times = sorted({s.at for s in timeline.samples})
    fig = go.Figure(
        [
            go.Scatter(x=[at - start for at, _ in shown], y=[eta for _, eta in shown], name="ETA shown"),
            go.Scatter(
                x=[at - start for at in times], y=[end - at for at in times], name="time left, as it was"
            ),
        ]
    )
    fig.update_layout(
        title="ETA shown against the real end", xaxis_title="seconds", yaxis_title="seconds left"
    )
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
