"""A delivery of a watched job's log lines: keep its newest line, learn its log rhythm and follow its progress.

Read the job's entry, add the delivery's gaps to its rhythm (domain/log_rhythm.py) and its lines' steps and phases
to its progress (domain/progress_watch.py, read with the job's own rule if it has one), and write them on
the condition that the newest line recorded is still the one read. Deliveries of a job's other streams
may run at the same moment: the loser reads again (ATTEMPTS in all), and if it still loses, keeps only
the newest line, as before rhythms were learned (the delivery's progress is then lost: a later step line
sets it right). One read and one write per delivery.

A recorded line later than trainguard's clock allows (domain/log_clock.py; written before that bound was kept)
is not believed either: the delivery replaces it, so that it cannot hide the job's real lines.
"""

from __future__ import annotations

from trainguard.domain.log_clock import is_believable, latest_believable_time
from trainguard.domain.progress_watch import with_lines
from trainguard.domain.watched_job import LoggedLines, progress_rule, rhythm_counted_from
from trainguard.events.log_subscription import LogActivity
from trainguard.workflows.function_ports import LogActivityPorts

ATTEMPTS = 3


def record_activity(ports: LogActivityPorts, activity: LogActivity) -> bool:
    """False when the job is not watched, or the delivery holds nothing newer than what is recorded."""
    for _ in range(ATTEMPTS):
        found = ports.stall_ledger.watched_job(activity.job_name)
        if not found:
            return False
        job = found[0]
        previous = job.last_log_time
        if previous is not None and not is_believable(previous, latest_believable_time(None, ports.clock())):
            previous = None  # a time from the future: no gap is counted from it, and the delivery replaces it
        if previous is not None and activity.newest <= previous:
            return False
        rhythm = job.rhythm.with_lines(previous, activity.times, rhythm_counted_from(job), activity.phase_lines)
        progress = with_lines(job.progress, activity.lines, progress_rule(job), job.progress_settings)
        lines = LoggedLines(activity.newest, activity.last_line, rhythm, progress)
        if ports.stall_ledger.record_log_lines(job.job_name, lines, job.last_log_time):
            return True
    return ports.stall_ledger.record_log_activity(activity.job_name, activity.newest, activity.last_line)
