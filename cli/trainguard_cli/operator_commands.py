"""`trainguard status`, `history JOB` and `opt-in JOB`: the operator's view of the guard, with your credentials
(or the local stand-in through AWS_ENDPOINT_URL). Text for a person; `--json` for scripts (keys in each help).

IAM: dynamodb:Query, BatchGetItem and Scan on the ledger table (status, history); sagemaker:DescribeTrainingJob
and sagemaker:ListTags (history, opt-in); sagemaker:AddTags (opt-in).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from typing import Any

from trainguard.domain.job_end import managing_parent, read_lineage
from trainguard.domain.model import TrainingJob
from trainguard.domain.policy import PolicyDefaults, TagKeys, read_job_policy
from trainguard.domain.stalls import StallThresholds, read_stall_thresholds
from trainguard.domain.watch_discovery import CHECKS_PER_CYCLE
from trainguard.domain.wording import format_value
from trainguard_cli.inputs import NotFound, UnusableInput, aws_session

TABLE_VARIABLE = "TRAINGUARD_LEDGER_TABLE_NAME"  # GuardConfig.to_env()'s name for the table (a test checks)
_TEXT = argparse.RawDescriptionHelpFormatter
_OPTIONS: dict[str, dict[str, Any]] = {
    "--table": {"help": f"the ledger table (default: ${TABLE_VARIABLE})"},
    "--tag-prefix": {"default": "trainguard", "help": "the deployed tag prefix (default: trainguard)"},
    "--json": {"action": "store_true", "help": "print JSON (the default is text)"},
    "--account": {"help": "in an organization's hub: the spoke account whose records to read (with --region)"},
    "--region": {"help": "in an organization's hub: the spoke region whose records to read (with --account)"},
}
_BOTH = ("--table", "--tag-prefix")
_SPOKE = ("--account", "--region")
STATUS_KEYS = """JSON keys (stable): table, generated_at (ISO 8601 UTC, as every time below; null when unknown),
  watched: [{job_name, instance_type, hosts, training_since, last_log_at, minutes_since_last_log,
             stall_minutes, silence_limit_minutes (the job's own limit), silence_limit (where it comes from),
             stopping_since}]
  open_stalls: [{job_name, kind (stall-stopped|stall-found|stuck-stopping), decision, reason, decided_at,
                 stopped_at}]
  pending_relaunches: [{job_name, new_job_name, waits_for (schedule|quota), origin (relaunch|user-launch),
                        since, launch_at, give_up_at, quota_name, reason}]
  quota_requests: [{quota_name, quota_code, desired_value, status, open, request_id, case_id, updated_at}]
  scan_truncated: true when the bounded Scan for scheduled relaunches stopped before the table's end"""
HISTORY_KEYS = """JSON keys (stable): job_name, root_job, root_from (tag|ledger|name),
  attempts: [{attempt (0 = the root), job_name, retry_of, launched_at, status (SageMaker's; null: no such job)}]
  timeline: [{time, job_name, attempt, event (launched|end|relaunch|stall-stop|stuck-stopping|quota-launch|
              blocked-launch|quota-wait), kind, decision, category, reason, new_job_name, in_progress}]"""
OPT_IN_KEYS = "JSON keys (stable): job_name, job_arn, status, tags (as written), previous (values before), notes"
# opt-in's value options: (tag name, help). Values are checked with the guard's own readers.
_VALUES = (
    ("max-retries", "relaunches per lineage, 0-20"),
    ("actions", "what trainguard may do: retry, notify, stop, quota, joined by + or spaces"),
    ("stall-minutes", "minutes without a log line that make a stall, 5-1440"),
    ("gpu-idle-minutes", "minutes of idle GPUs (and silent logs) that make a stall, 5-1440"),
    ("gpu-idle-percent", "at or below this share of each GPU a host is idle, 0-50"),
    ("startup-grace-minutes", "no stall verdict this long after training (re)starts, 0-720"),
)
_FLAGS = (
    ("dry-run", "tell what would be done, do nothing"),
    ("restart-without-checkpoint", "relaunch even with no checkpoint (it starts from scratch)"),
    ("continue-after-max-runtime", "relaunch from the checkpoint after MaxRuntimeInSeconds"),
)


# A job already Training sends no state change when it is tagged: the stall prober, which runs every minute,
# finds it (trainguard.domain.watch_discovery) and starts its watch.
_WATCH_STARTS = (
    "its failures are guarded from now; its stall watch starts at the stall prober's next run, within 2 minutes "
    f"(each minute the prober reads the tags of up to {CHECKS_PER_CYCLE} Training jobs it does not watch: in an "
    f"account with more, within 2 minutes per {CHECKS_PER_CYCLE} of them). `trainguard status` then lists it"
)


def add_operator_commands(commands: Any) -> None:
    summary = "watched jobs, open stalls, pending relaunches, quota requests"
    about = "What trainguard is watching and waiting for now, read from its ledger."
    add_command(commands, "status", summary, about, STATUS_KEYS, run_status, status_text, ("--table", *_SPOKE))
    summary = "the lineage of a job: every attempt, decision and reason"
    about = (
        "The lineage of a job (its root, from the tag trainguard:root-job, and every relaunch) and what "
        "trainguard decided for each attempt, as a timeline. Works for jobs SageMaker no longer lists."
    )
    history = add_command(commands, "history", summary, about, HISTORY_KEYS, run_history, history_text, _BOTH)
    history.add_argument("job", help="a training job's name (any attempt of the lineage)")
    summary = "tag a running job so that trainguard guards it"
    about = (
        "Tag a running training job with trainguard:enabled=true and the given settings. A value trainguard "
        "would not read is refused (exit 2) and nothing is tagged."
    )
    opt_in = add_command(commands, "opt-in", summary, about, OPT_IN_KEYS, run_opt_in, opt_in_text, ("--tag-prefix",))
    opt_in.add_argument("job", help="the running training job's name")
    for tag, text in _VALUES:
        opt_in.add_argument(f"--{tag}", metavar="VALUE", help=text)
    for tag, text in _FLAGS:
        opt_in.add_argument(f"--{tag}", action="store_true", help=f"tag {tag}=true: {text}")


def add_command(
    commands: Any, name: str, summary: str, about: str, keys: str, run: Any, render: Any, options: tuple[str, ...]
) -> Any:
    parser = commands.add_parser(name, help=summary, description=about, epilog=keys, formatter_class=_TEXT)
    for option in (*options, "--json"):
        parser.add_argument(option, **_OPTIONS[option])
    parser.set_defaults(run=run, render=render)
    return parser


def _clients(*services: str) -> list[Any]:
    session = aws_session()
    return [session.client(service) for service in services]


def _reader(args: argparse.Namespace) -> Any:
    from trainguard_cli.ledger_reader import LedgerReader

    table = args.table or os.environ.get(TABLE_VARIABLE, "")
    if not table:
        raise UnusableInput(f"no ledger table: pass --table or set {TABLE_VARIABLE}")
    scope = _place(args)  # checked before any client is made
    return LedgerReader(_clients("dynamodb")[0], table, scope=scope)


def _place(args: argparse.Namespace) -> Any:
    """The records of the spoke named by --account and --region (a hub's); the table's own without them."""
    from trainguard.adapters.ledger import OWN_RECORDS, ledger_scope
    from trainguard.domain.origin import Location

    account, region = getattr(args, "account", None), getattr(args, "region", None)
    if not account and not region:
        return OWN_RECORDS
    if not (account and region):
        raise UnusableInput("--account and --region name a spoke together")
    return ledger_scope(Location(account, region))


def run_status(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    reader, now = _reader(args), datetime.now(UTC)
    watched = sorted(reader.watched(), key=lambda w: w.job_name)
    pending, truncated = reader.pending_relaunches(now)
    report = {
        "table": reader.table_name,
        "generated_at": now,
        "watched": [_watched(w, now) for w in watched],
        "open_stalls": reader.open_stalls([w.job_name for w in watched]),
        "pending_relaunches": pending,
        "quota_requests": reader.quota_requests(),
        "scan_truncated": truncated,
    }
    return _plain(report), 0


def _watched(job: Any, now: datetime) -> dict[str, Any]:
    silence = None if job.last_log_time is None else round((now - job.last_log_time).total_seconds() / 60, 1)
    limit = job.silence_limit()
    return {
        "job_name": job.job_name,
        "instance_type": job.instance_type,
        "hosts": job.host_count,
        "training_since": job.training_since,
        "last_log_at": job.last_log_time,
        "minutes_since_last_log": silence,
        "stall_minutes": job.thresholds.stall_minutes,
        "silence_limit_minutes": limit.minutes,  # the job's own limit: its tag, its learned rhythm, or the fixed one
        "silence_limit": f"{limit.source.value}: {limit.reason}",
        "stopping_since": job.stopping_since,
    }


def run_history(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from trainguard.adapters.checkpoints import CheckpointReader
    from trainguard.adapters.sagemaker import SageMakerJobs
    from trainguard_cli.ledger_reader import LineageAttempt
    from trainguard_cli.lineage_advice import lineage_advice

    reader, keys = _reader(args), TagKeys(args.tag_prefix)
    jobs = SageMakerJobs(_clients("sagemaker")[0])
    asked = jobs.describe(args.job)
    root, root_from = _find_root(args.job, asked, reader, keys)
    lineage = reader.lineage(root)
    if not isinstance(asked, TrainingJob) and root_from == "name" and not lineage and not reader.job(root).steps:
        raise NotFound(f"no training job named {args.job}, in SageMaker nor in the ledger {reader.table_name}")
    attempts = [LineageAttempt(0, root, "", None), *lineage]
    if isinstance(asked, TrainingJob) and asked.name not in {a.job_name for a in attempts}:
        attempt = read_lineage(asked, keys).attempt  # relaunched, but its lineage item is missing
        attempts.append(LineageAttempt(attempt, asked.name, asked.tags.get(keys.retry_of, ""), asked.creation_time))
    rows, timeline = [], []
    for entry in attempts:
        described = asked if entry.job_name == args.job else jobs.describe(entry.job_name)
        found = described if isinstance(described, TrainingJob) else None
        launched = entry.created_at or (found.creation_time if found else None)
        row = (entry.attempt, entry.job_name, entry.retry_of or None, launched, found.status if found else None)
        rows.append(dict(zip(("attempt", "job_name", "retry_of", "launched_at", "status"), row, strict=True)))
        said = f"relaunch of {entry.retry_of} (attempt {entry.attempt})" if entry.attempt else "launched by its owner"
        if launched is not None:
            timeline.append(_event(launched, entry.job_name, entry.attempt, "launched", {"reason": said}, False))
        for step in reader.job(entry.job_name).steps:
            name = step.step.split("#", 1)[0]
            timeline.append(_event(step.time, entry.job_name, entry.attempt, name, step.outcome, not step.done))
    names = {a.job_name: a.attempt for a in attempts}
    for wait in reader.waiting():  # a relaunch (or the user's launch) that waits for a quota
        if wait.lineage_root == root or wait.blocked_job in names:
            what = {"kind": "quota-wall", "new_job_name": wait.job_name, "reason": f"waits for '{wait.quota_name}'"}
            timeline.append(_event(wait.since, wait.blocked_job, names.get(wait.blocked_job), "quota-wait", what))
    timeline.sort(key=lambda e: (e["time"] or datetime.min.replace(tzinfo=UTC), e["attempt"] or 0))
    report = {"job_name": args.job, "root_job": root, "root_from": root_from, "attempts": rows, "timeline": timeline}
    if isinstance(asked, TrainingJob):
        checkpoints = CheckpointReader(_clients("s3")[0]).read(asked.checkpoint_s3_uri)
        launches = [row["launched_at"] for row in rows]
        report["checkpoint_advice"] = lineage_advice(asked, launches, checkpoints, datetime.now(UTC))
    return _plain(report), 0


def _find_root(name: str, asked: Any, reader: Any, keys: TagKeys) -> tuple[str, str]:
    if isinstance(asked, TrainingJob):
        return read_lineage(asked, keys).root_job, "tag" if asked.tags.get(keys.root_job, "").strip() else "name"
    root = reader.recorded_root(name)  # gone from SageMaker: what the ledger recorded
    return (root, "ledger") if root else (name, "name")


def _event(at: Any, job: str, attempt: int | None, event: str, outcome: dict[str, Any], busy: bool = False) -> Any:
    recorded = {key: outcome.get(key, "") for key in ("kind", "decision", "category", "reason", "new_job_name")}
    return dict(time=at, job_name=job, attempt=attempt, event=event, in_progress=busy) | recorded


def run_opt_in(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from trainguard.adapters.sagemaker import SageMakerJobs

    keys = TagKeys(args.tag_prefix)
    tags = {keys.enabled: "true"}
    tags |= {keys.key(t): v for t, _ in _VALUES if (v := getattr(args, t.replace("-", "_"))) is not None}
    tags |= {keys.key(t): "true" for t, _ in _FLAGS if getattr(args, t.replace("-", "_"))}
    problems = read_job_policy(tags, PolicyDefaults(), keys).problems
    problems += read_stall_thresholds(tags, StallThresholds(), keys).problems
    if problems:
        first = problems[0]
        raise UnusableInput(f"{first.key}={first.value!r} is not a value trainguard reads; nothing was tagged")
    jobs = SageMakerJobs(_clients("sagemaker")[0])
    job = jobs.describe(args.job)
    if not isinstance(job, TrainingJob):
        raise NotFound(f"no training job named {args.job} in SageMaker; nothing was tagged")
    if job.status != "InProgress":
        raise UnusableInput(f"{job.name} is {job.status}: only a running job can be opted in; nothing was tagged")
    jobs.add_tags(job.arn, tags)
    notes = [_WATCH_STARTS] if job.secondary_status == "Training" else []
    if parent := managing_parent(job):
        notes.append(f"launched by {parent.describe()}: trainguard leaves it to its owner and never acts on it")
    previous = {k: job.tags[k] for k in tags if k in job.tags}
    return dict(job_name=job.name, job_arn=job.arn, status=job.status, tags=tags, previous=previous, notes=notes), 0


def status_text(report: dict[str, Any]) -> str:
    now = datetime.fromisoformat(report["generated_at"])
    lines = [f"Ledger {report['table']} at {_clock(now)}", f"\nWatched for stalls: {len(report['watched'])}"]
    rows = [("JOB", "HOSTS", "TRAINING SINCE", "LAST LOG LINE", "STALL AFTER")]
    for w in report["watched"]:
        training = _ago(w["training_since"], now) if w["training_since"] else "not training yet"
        training = f"stopping ({_ago(w['stopping_since'], now)})" if w["stopping_since"] else training
        hosts, silence = f"{w['hosts']} x {w['instance_type']}", _ago(w["last_log_at"], now, "none yet")
        limit = f"{format_value(w['silence_limit_minutes'])} min ({w['silence_limit'].split(':', 1)[0]})"
        rows.append((w["job_name"], hosts, training, silence, limit))
    lines += _table(rows) if report["watched"] else []
    lines.append(f"\nOpen stalls: {len(report['open_stalls'])}")
    for s in report["open_stalls"]:
        lines.append(f"  {s['job_name']}  {s['kind']} {_ago(s['decided_at'], now)}: {s['reason']}")
    lines.append(f"\nPending relaunches: {len(report['pending_relaunches'])}")
    rows = [("JOB", "NEW JOB", "WAITS FOR", "SINCE", "NEXT")]
    for p in report["pending_relaunches"]:
        what = f"quota {p['quota_name']}" if p["waits_for"] == "quota" else "the schedule"
        until = f"launch {_ago(p['launch_at'], now)}" if p["launch_at"] else f"give up {_ago(p['give_up_at'], now)}"
        rows.append((p["job_name"], p["new_job_name"], what, _ago(p["since"], now), until))
    lines += _table(rows) if report["pending_relaunches"] else []
    lines.append(f"\nQuota requests: {len(report['quota_requests'])}")
    rows = [("QUOTA", "DESIRED", "STATUS", "REQUEST", "UPDATED")]
    for q in report["quota_requests"]:
        rows.append(
            (
                q["quota_name"],
                format_value(q["desired_value"]),
                q["status"],
                q["request_id"],
                _ago(q["updated_at"], now),
            )
        )
    lines += _table(rows) if report["quota_requests"] else []
    if report["scan_truncated"]:
        lines.append("\n(the search for scheduled relaunches stopped before the end of the ledger)")
    return "\n".join(lines)


def history_text(report: dict[str, Any]) -> str:
    now = datetime.now(UTC)
    source = {"tag": "from its tag", "ledger": "from the ledger", "name": "the job itself"}[report["root_from"]]
    lines = [f"{report['job_name']}: lineage of {report['root_job']} (root: {source})", ""]
    rows = [("ATTEMPT", "JOB", "STATUS", "LAUNCHED")]
    for a in report["attempts"]:
        rows.append((str(a["attempt"]), a["job_name"], a["status"] or "not found", _ago(a["launched_at"], now)))
    lines += [*_table(rows), ""]
    events = [("TIME", "", "JOB", "EVENT", "OUTCOME")]
    for e in report["timeline"]:
        outcome = "in progress" if e["in_progress"] else e["kind"]
        outcome += f" -> {e['new_job_name']}" if e["new_job_name"] else ""
        when = _clock(datetime.fromisoformat(e["time"])) if e["time"] else "?"
        events.append((when, _ago(e["time"], now), e["job_name"], e["event"], outcome))
    table = _table(events)
    lines.append(table[0])
    for line, e in zip(table[1:], report["timeline"], strict=True):
        label = e["decision"] if e["category"] in ("", e["decision"]) else f"{e['decision']} ({e['category']})"
        said = ": ".join(x for x in (label, e["reason"]) if x)
        lines += [line, *([f"      {said}"] if said else [])]
    if advice := report.get("checkpoint_advice"):
        lines += ["", f"Checkpoints: {advice['advice'] or 'no advice: ' + advice['why']}"]
    return "\n".join(lines)


def opt_in_text(report: dict[str, Any]) -> str:
    lines = [f"Tagged {report['job_name']} ({report['status']}):"]
    width = max(len(k) for k in report["tags"])
    for key, value in report["tags"].items():
        was = f"   (was {report['previous'][key]!r})" if key in report["previous"] else ""
        lines.append(f"  {key:<{width}} = {value}{was}")
    return "\n".join([*lines, *(f"Note: {note}" for note in report["notes"])])


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _plain(value: Any) -> Any:
    """What --json prints: records as objects, times as ISO 8601 UTC text."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return _iso(value) if isinstance(value, datetime) else value


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).isoformat(timespec="seconds")


def _clock(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _ago(text: str | None, now: datetime, unknown: str = "-") -> str:
    if not text:
        return unknown
    seconds = (now - datetime.fromisoformat(text)).total_seconds()
    minutes = int(abs(seconds) // 60)
    if minutes < 1:
        return "just now"
    amount = f"{minutes} min" if minutes < 120 else f"{minutes // 60} h" if minutes < 2880 else f"{minutes // 1440} d"
    return f"{amount} ago" if seconds > 0 else f"in {amount}"
