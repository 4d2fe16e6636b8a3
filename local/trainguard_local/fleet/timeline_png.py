"""The timeline picture: one row per lineage (trace job), time on the x axis, coloured by segment state,
detections and actions marked as ticks. A minimal PNG encoder (zlib only; no plotting library).

Each row is `row_height` pixels (`ROW_HEIGHT` unless asked): all but the last show the states, the last is
a white gap. A detection is a black tick on the top third of them (the top pixel at `ROW_HEIGHT`); an
action that succeeded is a blue tick below it.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

from trainguard_local.fleet.model import JobOutcome, State

WIDTH = 1200
ROW_HEIGHT = 4
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

Colour = tuple[int, int, int]
BACKGROUND: Colour = (255, 255, 255)
DETECTION: Colour = (0, 0, 0)
ACTION: Colour = (20, 70, 230)
STATE_COLOURS: dict[State, Colour] = {
    State.TRAINING: (46, 160, 67),
    State.HUNG: (220, 30, 30),
    State.FAILED: (120, 0, 0),
    State.STOPPED: (120, 0, 0),
    State.STARTING: (165, 165, 165),
    State.QUEUED: (200, 200, 200),
    State.WAITING_FOR_PERSON: (255, 150, 0),
    State.WAITING_FOR_QUOTA: (130, 60, 180),
    State.COMPLETED: BACKGROUND,
}


def timeline_span(outcomes: Sequence[JobOutcome], hours: float) -> float:
    """The hours the x axis covers: the trace's window, or longer when a job's life runs past it."""
    ends = [segment.end for outcome in outcomes for segment in outcome.segments]
    return max([hours, *ends])


def timeline_rows(
    outcomes: Sequence[JobOutcome], hours: float, width: int = WIDTH, row_height: int = ROW_HEIGHT
) -> list[bytes]:
    """The picture's pixel lines, RGB, `row_height` per outcome."""
    span = timeline_span(outcomes, hours)

    def x(at: float) -> int:
        return min(width - 1, max(0, int(at / span * width)))

    lines: list[bytes] = []
    for outcome in outcomes:
        row = [bytearray(bytes(BACKGROUND) * width) for _ in range(row_height - 1)]
        for segment in outcome.segments:
            start, end = x(segment.start), max(x(segment.start) + 1, x(segment.end))
            fill = bytes(STATE_COLOURS[segment.state]) * (end - start)
            for line in row:
                line[start * 3 : end * 3] = fill
        mark = max(1, (row_height - 1) // 3)  # detections on the top third of a row, actions below
        thick = max(1, row_height // 12)
        for detection in outcome.detections:
            _tick(row[:mark], x(detection.detected_at), DETECTION, thick)
        for action in outcome.actions:
            if action.succeeded:
                _tick(row[mark:], x(action.at), ACTION, thick)
        lines += [bytes(line) for line in row]
        lines.append(bytes(BACKGROUND) * width)
    return lines


def _tick(lines: Sequence[bytearray], column: int, colour: Colour, thick: int = 1) -> None:
    start = min(column, len(lines[0]) // 3 - thick) if lines else column
    for line in lines:
        line[start * 3 : (start + thick) * 3] = bytes(colour) * thick


def encode_png(lines: Sequence[bytes], width: int) -> bytes:
    """An 8-bit RGB PNG of `lines` (each `width` x 3 bytes), filter 0 on every line."""
    if any(len(line) != width * 3 for line in lines):
        raise ValueError("every line must be width x 3 bytes")
    raw = b"".join(b"\x00" + line for line in lines)
    header = struct.pack(">IIBBBBB", width, len(lines), 8, 2, 0, 0, 0)  # 8-bit, truecolour, no interlace
    return PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_timeline(
    path: Path, outcomes: Sequence[JobOutcome], hours: float, width: int = WIDTH, row_height: int = ROW_HEIGHT
) -> None:
    """Write the timeline of one strategy's outcomes (one row per job) to `path`."""
    if not outcomes:
        raise ValueError("no jobs to draw")
    if row_height < 2:
        raise ValueError("row_height: at least 2 (a line of states and the gap)")
    path.write_bytes(encode_png(timeline_rows(outcomes, hours, width, row_height), width))
