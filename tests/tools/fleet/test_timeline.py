"""The timeline picture (fleet/timeline.py): one labelled row per job, states in their colours, detections and
actions as markers, a title with the strategy's figures, several strategies on one shared time axis."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from matplotlib.image import imread
from matplotlib.text import Text

from tests.tools.fleet.cases import job
from trainguard_local.fleet.model import Action, ActionKind, Detection, JobOutcome, Segment, State
from trainguard_local.fleet.timeline import (
    ACTION_MARKERS,
    DETECTION_MARKER,
    GUARD_BLUE,
    MOST_ROWS,
    OTHERS_GREY,
    STATE_COLOURS,
    Panel,
    action_labels,
    draw,
    shown_jobs,
    timeline_png,
)
from trainguard_local.simulation.fault_table import FaultKind

FIGURES = {
    "wasted_gpu_hours": 12.5,
    "wasted_gpu_hours_hung_or_idle": 4.0,
    "wasted_gpu_hours_lost_since_checkpoint": 8.5,
    "completion_delay_hours": {"total": 3.25},
    "jobs_completed": 1,
}


def _outcome(name: str, *, hung: bool) -> JobOutcome:
    segments = [Segment(0.0, 0.1, State.STARTING, 0), Segment(0.1, 2.0, State.TRAINING, 0)]
    detections, actions = (), ()
    if hung:
        segments += [Segment(2.0, 2.5, State.HUNG, 0), Segment(2.5, 2.6, State.STOPPED, 0)]
        segments += [Segment(2.6, 2.7, State.STARTING, 1), Segment(2.7, 4.8, State.TRAINING, 1)]
        detections = (Detection(FaultKind.HANG_IDLE_GPU, 2.0, 2.45, "trainguard"),)
        actions = (
            Action(ActionKind.STOP, 2.5, f"{name}", "trainguard", True),
            Action(ActionKind.RELAUNCH, 2.5, f"{name}-r1", "trainguard", True),
            Action(ActionKind.QUOTA_REQUEST, 3.0, "quota", "trainguard", True, succeeded=False),
        )
    return JobOutcome(
        strategy="trainguard",
        job=job(name=name, instance_count=2),
        segments=tuple(segments),
        detections=detections,
        actions=actions,
        recoveries=(),
        kept_progress_hours=4.0,
        lost_work_hours=0.2,
        hung_hours=0.5 if hung else 0.0,
        billed_instance_hours=5.0,
        completed_at=4.8 if hung else 2.0,
    )


def test_each_job_has_a_labelled_row_and_the_title_gives_the_figures() -> None:
    outcomes = [_outcome("fleet-0000-llama-pretrain", hung=True), _outcome("fleet-0001-bert-finetune", hung=False)]
    figure = draw([Panel("trainguard", outcomes, FIGURES)], hours=6.0, heading="2 jobs")

    (axis,) = figure.axes
    labels = [label.get_text() for label in axis.get_yticklabels()]
    assert labels == ["fleet-0001-bert-finetune  2 x ml.p4d.24xlarge", "fleet-0000-llama-pretrain  2 x ml.p4d.24xlarge"]
    title = axis.get_title(loc="left")
    assert title.startswith("trainguard: 12.5 wasted GPU-h (4.0 hung or idle, 8.5 lost since the last checkpoint)")
    assert "completion delay 3.2 h" in title and "1 of 2 jobs done within the 6 h window" in title
    assert axis.get_xlabel() == "fleet clock (hours)" and axis.get_xlim() == (0.0, 6.0)
    legend = {text.get_text() for legend in figure.legends for text in legend.get_texts()}
    assert {"training", "hung (billed, no progress)", "detection", "stop", "relaunch", "refused"} <= legend


def test_the_states_are_drawn_in_their_colours_and_the_marks_where_they_happened() -> None:
    outcome = _outcome("fleet-0000-llama-pretrain", hung=True)
    (axis,) = draw([Panel("trainguard", [outcome], FIGURES)], hours=6.0).axes

    bars = [(tuple(c.get_facecolor()[0][:3]), c.get_paths()[0].get_extents().x0) for c in axis.collections]
    hung = [x for colour, x in bars if colour == pytest.approx(_rgb(STATE_COLOURS[State.HUNG]))]
    assert hung == [pytest.approx(2.0)]
    assert len(bars) == 6  # every segment but the completed one
    marks = {(line.get_marker(), round(float(line.get_xdata()[0]), 2)) for line in axis.lines}
    assert (DETECTION_MARKER, 2.45) in marks
    assert (ACTION_MARKERS[ActionKind.STOP], 2.5) in marks and (ACTION_MARKERS[ActionKind.RELAUNCH], 2.5) in marks
    texts = [text.get_text() for text in axis.texts]
    assert texts == ["stop, relaunch", "quota request (refused)"]  # actions at one moment share a label
    window = [line for line in axis.lines if line.get_linestyle() == "--"]
    assert [float(line.get_xdata()[0]) for line in window] == [6.0]  # the end of the trace's window


def test_action_labels_group_one_actors_actions_of_one_moment_and_name_another_actor() -> None:
    outcome = _outcome("job", hung=True)
    assert action_labels(outcome, span=6.0) == [
        (2.5, "trainguard", "stop, relaunch"),
        (3.0, "trainguard", "quota request (refused)"),
    ]
    assert action_labels(outcome, span=100.0) == [(2.5, "trainguard", "stop, relaunch, quota request (refused)")]
    by_person = replace(outcome, actions=(*outcome.actions, Action(ActionKind.RELAUNCH, 2.55, "r2", "person", True)))
    assert action_labels(by_person, span=100.0) == [  # another actor between them: one label each
        (2.5, "trainguard", "stop, relaunch, quota request (refused)"),
        (2.55, "person", "person: relaunch"),
    ]
    repeated = (*(Action(ActionKind.NOTIFY, 2.5 + n / 1000, f"n{n}", "trainguard", True) for n in range(3)),)
    parent = (*(Action(ActionKind.RELAUNCH, 2.5005 + n / 1000, f"r{n}", "pipelines", True) for n in range(3)),)
    interleaved = replace(outcome, actions=(*repeated, *parent))
    assert action_labels(interleaved, span=10.0) == [  # a kind repeated in one moment is counted
        (2.5, "trainguard", "notify x3"),
        (2.5005, "pipelines", "pipelines: relaunch x3"),
    ]


def test_labels_are_readable_where_they_overlap_neither_each_other_nor_the_bars() -> None:
    """Issue 26: a person's three relaunches minutes apart and one at the axes' right end, under no guard, each
    labelled on a white box in a lane of its own: no label covers another label or a bar, or leaves the axes."""
    hours = (2.0, 2.2, 2.4, 4.75)  # closer than a label's width; the last at the end of the 4.8 h axis
    person = tuple(Action(ActionKind.RELAUNCH, at, f"r{n}", "person", True) for n, at in enumerate(hours))
    outcomes = [replace(_outcome("job", hung=True), actions=person), _outcome("other", hung=True)]
    figure = draw([Panel("none", outcomes, FIGURES)], hours=4.0)
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    (axis,) = figure.axes

    labels = [Text.get_window_extent(text, renderer) for text in axis.texts]
    assert [text.get_text() for text in axis.texts].count("person: relaunch") == 4
    bars = [axis.transData.transform_bbox(c.get_paths()[0].get_extents()) for c in axis.collections]
    for n, label in enumerate(labels):
        assert not any(label.overlaps(other) for other in labels[n + 1 :]), axis.texts[n].get_text()
        assert not any(label.overlaps(bar) for bar in bars)
        assert axis.bbox.x0 <= label.x0 and label.x1 <= axis.bbox.x1
    for text in axis.texts:
        box = text.get_bbox_patch()
        assert float(text.get_fontsize()) >= 8 and box is not None and box.get_facecolor()[:3] == (1.0, 1.0, 1.0)
        assert text.get_color() == (OTHERS_GREY if text.get_text().startswith("person: ") else GUARD_BLUE)


def test_another_actors_marks_are_grey_and_trainguards_blue() -> None:
    outcome = _outcome("job", hung=True)
    by_person = replace(outcome, actions=(Action(ActionKind.RELAUNCH, 4.0, "r2", "person", True),))
    (axis,) = draw([Panel("none", [by_person], FIGURES)], hours=6.0).axes
    (mark,) = [line for line in axis.lines if line.get_marker() == ACTION_MARKERS[ActionKind.RELAUNCH]]
    assert mark.get_markeredgecolor() == OTHERS_GREY and axis.texts[0].get_text() == "person: relaunch"
    (axis,) = draw([Panel("trainguard", [outcome], FIGURES)], hours=6.0).axes
    marks = [line for line in axis.lines if line.get_marker() == ACTION_MARKERS[ActionKind.RELAUNCH]]
    assert [mark.get_markeredgecolor() for mark in marks] == [GUARD_BLUE]


def test_a_large_fleet_shows_its_most_wasteful_jobs_and_says_so() -> None:
    quiet = [_outcome(f"quiet-{n:03d}", hung=False) for n in range(MOST_ROWS)]
    hung = [_outcome(f"hung-{n}", hung=True) for n in range(3)]
    outcomes = [*quiet[:10], *hung, *quiet[10:]]  # one more than MOST_ROWS rows, and three with something
    panels = [Panel("none", outcomes, FIGURES)]

    names = shown_jobs(panels)

    assert len(names) == MOST_ROWS and {"hung-0", "hung-1", "hung-2"} <= set(names)
    assert names[10:13] == ["hung-0", "hung-1", "hung-2"]  # in the trace's order
    figure = draw(panels, hours=6.0, heading="big")
    assert f"({MOST_ROWS} of {MOST_ROWS + 3} jobs" in figure.get_suptitle()
    assert len(figure.axes[0].get_yticklabels()) == MOST_ROWS


def test_two_strategies_share_one_time_axis_in_one_png() -> None:
    none = [_outcome("a", hung=True), _outcome("b", hung=False)]
    guarded = [_outcome("a", hung=False), _outcome("b", hung=False)]
    panels = [Panel("none", none, FIGURES), Panel("trainguard", guarded, FIGURES)]
    figure = draw(panels, hours=3.0)
    top, bottom = figure.axes[:2]
    assert top.get_shared_x_axes().joined(top, bottom)
    assert top.get_xlim() == bottom.get_xlim() == (0.0, 4.8)  # the longest life, past the trace's 3 h

    png = timeline_png(panels, hours=3.0, heading="none above trainguard")
    assert png == timeline_png(panels, hours=3.0, heading="none above trainguard")  # no date in the file
    height, width, _ = imread(io.BytesIO(png)).shape
    assert width == 1400 and height > 300


def test_nothing_to_draw_is_an_error() -> None:
    with pytest.raises(ValueError, match="no jobs"):
        draw([Panel("none", [], FIGURES)], hours=1.0)


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    value = hex_colour.lstrip("#")
    red, green, blue = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))
    return red, green, blue
