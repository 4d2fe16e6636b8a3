"""The timeline pictures, drawn with matplotlib (Agg: no display needed).

One row per job, labelled with its name and instance shape; the fleet's clock in hours on the x axis; each
stretch of a job's life in its state's colour (the legend names them); the guard's and the person's detections
and actions as markers, one shape per kind, in the legend too, and where the fleet is small enough to read them,
labelled with who did what in a lane below the bar, on a white box (timeline_labels.py). A panel's title names
the strategy and its figures. `timeline_png` puts several strategies one above the other on a shared time axis
(no guard over trainguard, say), so the difference is seen at once.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from trainguard_local.fleet.model import Action, ActionKind, JobOutcome, State
from trainguard_local.fleet.timeline_labels import LANE_BELOW, RowLabels, place_labels
from trainguard_local.fleet.words import strategy_name

# The colours the docs name: green training, red hung, dark red failed or stopped, grey starting or queued,
# orange waiting for a person, purple waiting for a quota. A completed job's row is empty after its end.
STATE_COLOURS: dict[State, str] = {
    State.TRAINING: "#2ea043",
    State.HUNG: "#dc1e1e",
    State.FAILED: "#780000",
    State.STOPPED: "#780000",
    State.STARTING: "#a5a5a5",
    State.QUEUED: "#c8c8c8",
    State.WAITING_FOR_PERSON: "#ff9600",
    State.WAITING_FOR_QUOTA: "#823cb4",
}
STATE_LABELS: dict[State, str] = {
    State.TRAINING: "training",
    State.HUNG: "hung (billed, no progress)",
    State.FAILED: "failed or stopped",
    State.STARTING: "starting",
    State.QUEUED: "queued (no instances)",
    State.WAITING_FOR_PERSON: "waiting for a person",
    State.WAITING_FOR_QUOTA: "waiting for a quota increase",
}
ACTION_MARKERS: dict[ActionKind, str] = {
    ActionKind.STOP: "s",
    ActionKind.RELAUNCH: ">",
    ActionKind.QUOTA_REQUEST: "D",
    ActionKind.NOTIFY: "o",
}
DETECTION_MARKER = "v"
GUARD_BLUE, OTHERS_GREY = "#1446e6", "#57606a"  # trainguard's actions; a person's, SageMaker's or a parent's
MOST_ROWS = 120  # a larger fleet shows its jobs where something happened, the most wasteful first
TIMELINE_COLOURS = (
    "Green: training; red: hung (billed, no progress); dark red: failed or stopped; grey: starting or queued; "
    "orange: waiting for a person; purple: waiting for a quota increase. Black triangles: detections; markers: "
    "actions (square stop, triangle relaunch, diamond quota request, circle notify; hollow: refused), blue when "
    "trainguard acted, grey when another did (the person on call, SageMaker, a parent); the dashed line: the "
    "end of the trace's window."
)
LABELLED_ROWS = 30  # up to this many jobs in a panel, each marker also carries its kind as text
LABELLED_ROW_INCHES = 0.5  # a labelled row: its bar, and below it a lane for its labels (timeline_labels.py)
# A row's bar: its height in rows, and how far below the bottom row's centre the axes start (its label lane there).
COMPACT_BAR, LABELLED_BAR = (0.7, 0.7), (0.44, LANE_BELOW + 0.2)
DPI = 100


@dataclass(frozen=True)
class Panel:
    """One strategy's timeline: its outcomes and its figures (the report's entry for it)."""

    strategy: str
    outcomes: Sequence[JobOutcome]
    figures: Mapping[str, Any]


def panel_title(panel: Panel, hours: float) -> str:
    """The strategy and its headline figures, read from its report entry (a figure missing there is an error)."""
    figures = panel.figures
    return (
        f"{strategy_name(panel.strategy)}: {figures['wasted_gpu_hours']:,.1f} wasted GPU-h "
        f"({figures['wasted_gpu_hours_hung_or_idle']:,.1f} hung or idle, "
        f"{figures['wasted_gpu_hours_lost_since_checkpoint']:,.1f} lost since the last checkpoint); "
        f"completion delay {figures['completion_delay_hours']['total']:,.1f} h in all; "
        f"{figures['jobs_completed']} of {len(panel.outcomes)} jobs done within the {hours:g} h window"
    )


def shown_jobs(panels: Sequence[Panel], most: int = MOST_ROWS) -> list[str]:
    """The jobs drawn, in the trace's order: all of them, or for a larger fleet `most` of them, chosen by the
    GPU-hours wasted in any panel, and before the jobs where nothing happened, those with a detection or action."""
    names = [outcome.job.name for outcome in panels[0].outcomes]
    if len(names) <= most:
        return names
    waste: dict[str, float] = dict.fromkeys(names, 0.0)
    for panel in panels:
        for outcome in panel.outcomes:
            if outcome.detections or outcome.actions or outcome.wasted_hours > 0:
                waste[outcome.job.name] = max(waste[outcome.job.name], outcome.wasted_gpu_hours, 1e-9)
    chosen = set(sorted(names, key=lambda n: -waste[n])[:most])  # a tie keeps the trace's order
    return [name for name in names if name in chosen]


def timeline_span(outcomes: Sequence[JobOutcome], hours: float) -> float:
    """The hours the x axis covers: the trace's window, or longer when a job's life runs past it."""
    ends = [segment.end for outcome in outcomes for segment in outcome.segments]
    return max([hours, *ends])


def row_label(outcome: JobOutcome) -> str:
    job = outcome.job
    return f"{job.name}  {job.instance_count} x {job.instance_type}"


def draw(panels: Sequence[Panel], hours: float, heading: str = "") -> Figure:
    """The figure: one panel per strategy, top to bottom, on one shared x axis, the same jobs in each."""
    if not panels or not all(panel.outcomes for panel in panels):
        raise ValueError("no jobs to draw")
    names = shown_jobs(panels)
    rows = len(names)
    labelled = rows <= LABELLED_ROWS
    row_inches = LABELLED_ROW_INCHES if labelled else max(0.12, min(0.32, 24 / rows))
    label_points = max(4.0, min(8.5, row_inches * 28))
    figure = Figure(
        figsize=(14, rows * row_inches * len(panels) + 1.1 * len(panels) + 1.8), dpi=DPI, layout="constrained"
    )
    canvas = FigureCanvasAgg(figure)
    axes = figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    span = timeline_span([o for panel in panels for o in panel.outcomes], hours)
    labels: list[RowLabels] = []
    for axis, panel in zip(axes, panels, strict=True):
        by_name = {outcome.job.name: outcome for outcome in panel.outcomes}
        shown = [by_name[name] for name in names]
        _draw_panel(axis, shown, label_points, LABELLED_BAR if labelled else COMPACT_BAR)
        if labelled:
            labels += [RowLabels(axis, rows - 1 - n, action_labels(o, span)) for n, o in enumerate(shown)]
        axis.set_title(panel_title(panel, hours), fontsize=9.5, loc="left")
        axis.axvline(hours, color="black", linestyle="--", linewidth=0.8)
        axis.set_xlim(0, span)
    axes[-1].set_xlabel("fleet clock (hours)", fontsize=10)
    total = len(panels[0].outcomes)
    shown_rows = (
        "" if rows == total else f" ({rows} of {total} jobs: the most wasted GPU-hours, and detections or actions)"
    )
    if heading or shown_rows:
        figure.suptitle(heading + shown_rows, fontsize=11)
    figure.legend(handles=_legend_handles(), loc="outside lower center", ncols=6, fontsize=9, frameon=False)
    if labels:
        figure.draw_without_rendering()  # settles the layout: the labels are placed in its pixels
        place_labels(labels, canvas.get_renderer(), actor_colour)
    return figure


def actor_colour(actor: str) -> str:
    """Blue for trainguard's actions, grey for another's (the person on call, SageMaker, a parent)."""
    return GUARD_BLUE if actor == "trainguard" else OTHERS_GREY


def action_labels(outcome: JobOutcome, span: float) -> list[tuple[float, str, str]]:
    """The text beside a row's action markers, with who acted. Actions closer to each other than 1% of the axis
    make one moment, and each actor's actions in a moment share one label ("stop, relaunch"; a repeated kind
    counted: "notify x3"), whoever acted between them, so that labels do not crowd each other; another actor
    than trainguard is named in the text ("person: relaunch")."""
    moments: list[list[Action]] = []
    for action in sorted(outcome.actions, key=lambda a: a.at):
        if moments and action.at - moments[-1][-1].at < span / 100:
            moments[-1].append(action)
        else:
            moments.append([action])
    labels: list[tuple[float, str, str]] = []
    for moment in moments:
        by_actor: dict[str, tuple[float, Counter[str]]] = {}
        for action in moment:
            text = action.kind.value.replace("_", " ") + ("" if action.succeeded else " (refused)")
            by_actor.setdefault(action.actor, (action.at, Counter()))[1][text] += 1
        for actor, (at, texts) in by_actor.items():
            said = ", ".join(text if n == 1 else f"{text} x{n}" for text, n in texts.items())
            labels.append((at, actor, said if actor == "trainguard" else f"{actor}: {said}"))
    return sorted(labels, key=lambda label: label[0])


def _draw_panel(axis: Any, outcomes: Sequence[JobOutcome], label_points: float, bar: tuple[float, float]) -> None:
    count = len(outcomes)
    half = bar[0] / 2
    for row, outcome in enumerate(outcomes):
        y = count - 1 - row  # the first job at the top
        for segment in outcome.segments:
            if segment.state is not State.COMPLETED and segment.hours > 0:
                axis.broken_barh(
                    [(segment.start, segment.hours)], (y - half, bar[0]), facecolors=STATE_COLOURS[segment.state]
                )
        for detection in outcome.detections:
            axis.plot(detection.at, y + half + 0.07, DETECTION_MARKER, color="black", markersize=4)
        for action in outcome.actions:
            colour = actor_colour(action.actor)
            face = colour if action.succeeded else "white"
            axis.plot(
                action.at, y, ACTION_MARKERS[action.kind], markersize=5, markerfacecolor=face, markeredgecolor=colour
            )
    axis.set_yticks(range(count), [row_label(o) for o in reversed(outcomes)], fontsize=label_points)
    axis.set_ylim(-bar[1], count - 1 + half + 0.35)
    axis.grid(axis="x", color="#e6e6e6", linewidth=0.6)
    axis.set_axisbelow(True)
    axis.tick_params(axis="x", labelbottom=True, labelsize=8.5)


def _legend_handles() -> list[Any]:
    states: list[Any] = [Patch(facecolor=STATE_COLOURS[state], label=label) for state, label in STATE_LABELS.items()]
    marks: list[Any] = [
        Line2D([], [], linestyle="", marker=DETECTION_MARKER, color="black", markersize=5, label="detection")
    ]
    marks += [
        Line2D([], [], linestyle="", marker=marker, color=GUARD_BLUE, markersize=5, label=kind.value.replace("_", " "))
        for kind, marker in ACTION_MARKERS.items()
    ]
    marks += [
        Line2D([], [], linestyle="", marker=">", markerfacecolor="white", markeredgecolor=GUARD_BLUE, label="refused"),
        Line2D([], [], linestyle="", marker="s", color=OTHERS_GREY, label="grey: another acted (person, SageMaker)"),
        Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="end of the trace's window"),
    ]
    return states + marks


def timeline_png(panels: Sequence[Panel], hours: float, heading: str = "") -> bytes:
    """The panels one above the other on a shared time axis, as the bytes of one PNG (the same for the same
    outcomes: no date or version in its metadata)."""
    out = io.BytesIO()
    draw(panels, hours, heading).savefig(out, format="png", metadata={"Software": None})
    return out.getvalue()
