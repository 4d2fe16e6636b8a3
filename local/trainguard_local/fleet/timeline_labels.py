"""Where the timeline's action labels go (fleet/timeline.py): readable at the size the report shows the picture.

Each label sits in a lane of its own just below its row's bar, on a white box edged in the actor's colour, so it
never covers a bar and reads the same on any state's colour; a thin line joins it to its marker. Labels are
placed once the figure's layout is settled (a label's width in pixels is known only then), left to right in
each row: one that would overlap the label before it moves right, past it; one that would run past the axes'
right edge ends at the edge instead. The labels take no part in the layout, so placing them moves nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.text import Annotation, Text

LABEL_POINTS = 8.5  # about 12 pixels high at the report's 100 dpi, shown at about its own size on the page
LANE_BELOW = 0.40  # the lane's centre, in rows below the centre of the row's bar
GAP_PIXELS = 6.0  # between a marker and its label, and between two labels
BOX_PAD = 0.25  # the white box's padding, in font sizes


@dataclass(frozen=True)
class RowLabels:
    """The labels of one row of one panel: (hour, actor, text) each, in time order (timeline.action_labels)."""

    axis: Axes
    y: float
    labels: Sequence[tuple[float, str, str]]


def place_labels(rows: Sequence[RowLabels], renderer: RendererBase, colour_of: Callable[[str], str]) -> None:
    """Draw every row's labels where they do not overlap (the figure's layout must be settled first)."""
    for row in rows:
        _place_row(row, renderer, colour_of)


def _place_row(row: RowLabels, renderer: RendererBase, colour_of: Callable[[str], str]) -> None:
    to_pixels = row.axis.transData
    right_edge = row.axis.bbox.x1
    taken_until = float("-inf")  # pixels: the right end of the row's last label
    for at, actor, text in row.labels:
        marker_x, lane_y = to_pixels.transform((at, row.y - LANE_BELOW))
        colour = colour_of(actor)
        label = row.axis.annotate(
            text,
            xy=(at, row.y),
            xytext=(max(marker_x + GAP_PIXELS, taken_until + GAP_PIXELS), lane_y),
            textcoords="figure pixels",
            ha="left",
            va="center",
            fontsize=LABEL_POINTS,
            color=colour,
            bbox={"boxstyle": f"round,pad={BOX_PAD}", "facecolor": "white", "edgecolor": colour, "linewidth": 0.6},
            arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.6, "shrinkA": 0, "shrinkB": 4},
            annotation_clip=False,
        )
        label.set_in_layout(False)
        extent = _box_extent(label, renderer)
        if extent[1] > right_edge:  # past the axes: end at the edge, however close to the label before
            x, y = label.xyann
            label.xyann = (x - (extent[1] - right_edge), y)
            extent = _box_extent(label, renderer)
        taken_until = extent[1]


def _box_extent(label: Annotation, renderer: RendererBase) -> tuple[float, float]:
    """The label's left and right ends in pixels, its white box included (the text's extent, without the line to
    its marker, plus the box's padding)."""
    text = Text.get_window_extent(label, renderer)
    pad = BOX_PAD * LABEL_POINTS * label.figure.dpi / 72 if label.figure is not None else 0.0
    return text.x0 - pad, text.x1 + pad
