"""The fleet run as one HTML page you can share: `trainguard simulate --html FILE` and `make demo`
(`demo-out/report.html`).

Self-contained: the pictures are embedded as data: URLs, the style is inline, there is no script, and the page
asks nothing of the network (tests/tools/test_fleet_demo.py opens it in headless Chromium and checks
what it requested). It says first that it is a simulation, of what and how (fleet/page_intro.py), then what
trainguard changes, where it misses its goals and the strategies in words with their table (fleet/page_findings.py);
then trainguard's own cost, the pictures, the assumptions with their sources, the trace, each job's story under
trainguard (fleet/stories.py, the lines the demo prints), trainguard's notifications as sent, the sources, and
every figure's definition.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from trainguard_local.fleet.html_parts import table, terms
from trainguard_local.fleet.model import JobOutcome
from trainguard_local.fleet.page_findings import changes_section, goals_section, strategies_section
from trainguard_local.fleet.page_intro import assumptions_section, simulation_intro, sources_section
from trainguard_local.fleet.stories import job_story
from trainguard_local.fleet.summary import guard_cost_lines
from trainguard_local.simulation.trace import Trace

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1440px;
       padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
table { border-collapse: collapse; font-size: .85em; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: right; }
th { background: #f6f8fa; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #d0d7de; }
figcaption { font-size: .9em; color: #57606a; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; font-size: .8em; white-space: pre-wrap; }
details { margin: .3em 0; } summary { cursor: pointer; font-family: monospace; }
.note { color: #57606a; font-size: .9em; }
.simulation { background: #fff8c5; border: 1px solid #d4a72c; padding: .2em 1em; border-radius: 6px; }
.lead { font-size: 1.05em; max-width: 70em; }
ul.missed li { color: #82071e; }
dl { font-size: .9em; } dt { font-weight: 600; margin-top: .4em; } dd { margin-left: 1.5em; color: #3d444d; }
.with-definitions { display: flex; gap: 1.5em; align-items: flex-start; flex-wrap: wrap; }
.with-definitions dl { flex: 1 1 24em; margin: 0; }
#changes-table td:last-child { text-align: left; color: #57606a; max-width: 40em; }
"""
OPEN_STORIES = 30  # up to this many jobs, every story is shown unfolded


@dataclass(frozen=True)
class Picture:
    caption: str
    png: bytes


@dataclass(frozen=True)
class ReportPage:
    """What the page shows: the run's report (run_all's, with the definitions), its trace and outcomes,
    trainguard's notifications as sent (stories.as_sent), and the pictures."""

    title: str
    command: str
    report: dict[str, Any]
    trace: Trace
    outcomes: dict[str, list[JobOutcome]]
    notifications: Sequence[dict[str, Any]]
    pictures: Sequence[Picture]


def render(page: ReportPage) -> str:
    """The page's HTML, one string: what it is and what trainguard changes first, the details after."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(page.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(page.title)}</h1>",
        *simulation_intro(page.report, page.command),
        *changes_section(page.report),
        *goals_section(page.report),
        *strategies_section(page.report),
        *(f'<p class="note">{escape(line)}</p>' for line in guard_cost_lines(page.report.get("guard_cost"))),
        '<h2 id="pictures">Pictures</h2>',
        *(_figure(picture) for picture in page.pictures),
        *assumptions_section(page.report),
        '<h2 id="trace">The trace</h2>',
        table(_trace_rows(page.trace), "trace"),
        *_stories(page),
        *_notifications(page),
        *sources_section(page.report),
        '<h2 id="definitions">Every figure of the JSON report</h2>',
        terms(page.report["definitions"].items(), "definitions"),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_html(path: Path, page: ReportPage) -> None:
    path.write_text(render(page), encoding="utf-8")


def _figure(picture: Picture) -> str:
    data = base64.b64encode(picture.png).decode("ascii")
    caption = escape(picture.caption)
    image = f'<img src="data:image/png;base64,{data}" alt="{caption}">'
    return f"<figure>{image}<figcaption>{caption}</figcaption></figure>"


def _trace_rows(trace: Trace) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("job", "instances", "submitted (h)", "logs every", "fault", "strikes at (h)")]
    for job in trace.jobs:
        fault = trace.fault_of(job.name)
        every = job.rhythm.log_every_seconds
        rows.append(
            (
                job.name,
                f"{job.instance_count} x {job.instance_type}",
                f"{job.submitted_at:.2f}",
                f"{every:g} s" if every < 120 else f"{every / 60:g} min",
                "none" if fault is None else fault.kind.value,
                "" if fault is None else f"{fault.strikes_at:.2f}",
            )
        )
    return rows


def _stories(page: ReportPage) -> list[str]:
    guarded = page.outcomes.get("trainguard")
    if guarded is None:
        return ['<h2 id="stories">Each job under trainguard</h2><p>trainguard did not run (--no-trainguard).</p>']
    unguarded = {o.job.name: o for o in page.outcomes["none"]}
    unfolded = " open" if len(guarded) <= OPEN_STORIES else ""
    parts = ['<h2 id="stories">Each job under trainguard, against no guard</h2>']
    for outcome in guarded:
        first, *rest = job_story(page.trace, outcome, unguarded[outcome.job.name])
        parts.append(
            f"<details{unfolded}><summary>{escape(first)}</summary><pre>{escape(chr(10).join(rest))}</pre></details>"
        )
    return parts


def _notifications(page: ReportPage) -> list[str]:
    if "trainguard" not in page.outcomes:
        return []  # nothing was sent: _stories says trainguard did not run
    heading = f'<h2 id="notifications">trainguard\'s notifications, as sent ({len(page.notifications)})</h2>'
    return [heading, *(_notification(n) for n in page.notifications)]


def _notification(sent: dict[str, Any]) -> str:
    attributes = ", ".join(f"{k}={v}" for k, v in sorted(sent["attributes"].items()))
    return (
        f"<h3>+{sent['at_hours']:.2f} h: {escape(sent['subject'])}</h3>"
        f'<p class="note">attributes: {escape(attributes)}</p><pre>{escape(sent["message"])}</pre>'
    )
