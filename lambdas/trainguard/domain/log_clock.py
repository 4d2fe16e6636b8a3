"""Which log-line times trainguard believes: none later than the event that carried them, nor than its own clock.

A log line's timestamp is whatever its writer put there: the training container's clock for a line of the
account's own log group, and anything at all for a line in a `trainguard.spoke` event, which any principal of a
spoke account may put on its default bus. A line is written before CloudWatch Logs delivers it and before
EventBridge stamps the event that carries it, so an honest line is never later than that event's own time. The
event's `time` can be forged as well (PutEvents takes a `Time` per entry), so the bound is the earlier of the
event's time and trainguard's clock. A line later than that, plus LOG_CLOCK_SKEW, is refused: recorded, it would
make every later real line look old (workflows/log_activity.py keeps only newer lines) and a stall would never be
seen.
"""

from __future__ import annotations

from datetime import datetime, timedelta

# How far a host's clock may run ahead of the clock that stamped the event. SageMaker's instances and Lambda keep
# their clocks with NTP, so the honest difference is far below a second; 5 minutes is the difference AWS itself
# tolerates between a signed request's time stamp and its own clock ("a request must reach AWS within five minutes
# of the time stamp in the request", "AWS Signature Version 4 for API requests", IAM User Guide). One forged line
# holds off a stall by 5 minutes at most; a stream of them from inside a spoke is SECURITY.md's known gap.
LOG_CLOCK_SKEW = timedelta(minutes=5)


def latest_believable_time(event_time: datetime | None, now: datetime) -> datetime:
    """The latest log-line time believed for an event stamped `event_time` (None: no stamp, as for a direct
    CloudWatch Logs delivery) and received `now`: the earlier of the two, plus LOG_CLOCK_SKEW."""
    sent = now if event_time is None else min(event_time, now)
    return sent + LOG_CLOCK_SKEW


def is_believable(line_time: datetime, latest: datetime) -> bool:
    """Whether a line stamped `line_time` may be recorded under the bound `latest` (latest_believable_time)."""
    return line_time <= latest
