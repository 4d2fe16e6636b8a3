"""AWS times in every form they arrive in: datetimes (boto3), epoch seconds (JSON APIs),
epoch milliseconds as numbers or strings (state-change events, docs/aws-facts.md), ISO 8601 (AWS CLI v2)."""

from __future__ import annotations

from datetime import UTC, datetime

_MILLIS_THRESHOLD = 10_000_000_000  # past this, a number is epoch milliseconds (year 2286 in seconds)


def parse_aws_time(value: object) -> datetime | None:
    """A timezone-aware UTC datetime, or None when the value is absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return _from_number(float(value))
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return _from_number(float(text))
        except ValueError:
            pass
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _from_number(number: float) -> datetime | None:
    if number != number or number < 0:  # NaN or negative
        return None
    seconds = number / 1000 if number >= _MILLIS_THRESHOLD else number
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
