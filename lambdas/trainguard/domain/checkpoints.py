"""What trainguard knows about a job's checkpoints, and how old the newest one is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class CheckpointState:
    s3_uri: str  # CheckpointConfig.S3Uri; empty when the job has no CheckpointConfig
    newest_object_time: datetime | None = None
    object_count: int = 0
    listing_error: str = ""  # why the prefix could not be listed (access denied, ...)
    listing_truncated: bool = False  # stopped counting after the listing bound
    object_times: tuple[datetime, ...] = ()  # the newest objects' LastModified (checkpoint_health.py)

    @property
    def configured(self) -> bool:
        return bool(self.s3_uri)

    @property
    def readable(self) -> bool:
        return self.configured and not self.listing_error

    @property
    def is_empty(self) -> bool:
        """Known to hold nothing: listed, and no object found."""
        return self.readable and self.object_count == 0

    def age(self, now: datetime) -> timedelta | None:
        return None if self.newest_object_time is None else now - self.newest_object_time

    def describe(self, now: datetime) -> str:
        if not self.configured:
            return "the job has no CheckpointConfig"
        if self.listing_error:
            return f"checkpoint age unknown: {self.s3_uri} could not be listed: {self.listing_error}"
        if self.object_count == 0:
            return f"no checkpoint has been written to {self.s3_uri}"
        age = self.age(now)
        objects = f"{self.object_count:,} {'object' if self.object_count == 1 else 'objects'}"
        counted = f"{objects} or more" if self.listing_truncated else objects
        return f"newest checkpoint is {format_duration(age)} old; {counted} in {self.s3_uri}"


def format_duration(delta: timedelta | None) -> str:
    if delta is None:
        return "unknown"
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} d {hours % 24} h"
