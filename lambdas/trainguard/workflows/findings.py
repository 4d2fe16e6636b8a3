"""A slowdown or a divergence a watched job's step lines show (domain/progress_findings.py), each minute in the
prober: told once per launch, and with the owner's leave the job is stopped (domain/finding_actions.py).

The decision is taken on the job as it is at that moment: described and its tags read again, so a leave taken back,
a dry run set or a job that no longer trains is seen. The stop record is written before StopTrainingJob, as for a
stall (stall_alarm.py): the job's end reads it (job_ended.py) and relaunches a slow job on new instances (with
SageMaker's instance health checks where the deployer turned them on), and never a diverged one.
"""

from __future__ import annotations

from datetime import datetime

from trainguard.domain.finding_actions import DeployerSettings, FindingDecision, decide_on_finding
from trainguard.domain.finding_messages import compose_finding_notice
from trainguard.domain.instance_types import gpus_per_host
from trainguard.domain.job_end import managing_parent
from trainguard.domain.model import Decision
from trainguard.domain.outcome import Outcome, OutcomeKind
from trainguard.domain.policy import read_job_policy
from trainguard.domain.progress_findings import Finding, FindingKind, judge_loss, judge_pace
from trainguard.domain.slow_hosts import NOT_KNOWN, name_slow_host
from trainguard.domain.watched_job import WatchedJob
from trainguard.workflows.function_ports import StallProberPorts
from trainguard.workflows.once import once
from trainguard.workflows.ports import fresh

FOUND = {FindingKind.SLOWDOWN: OutcomeKind.SLOWDOWN_FOUND, FindingKind.DIVERGED: OutcomeKind.DIVERGENCE_FOUND}
STOPPED = {FindingKind.SLOWDOWN: OutcomeKind.SLOWDOWN_STOPPED, FindingKind.DIVERGED: OutcomeKind.DIVERGENCE_STOPPED}


def tell_findings(ports: StallProberPorts, job: WatchedJob, now: datetime) -> list[Outcome]:
    """Each divergence or slowdown the job's lines show, told (and acted on with leave) once per launch: the
    divergence first, so that a job both diverged and slow is never stopped to be relaunched."""
    settings, told = job.progress_settings, []
    diverged = judge_loss(job.progress, settings)
    for finding in (diverged, judge_pace(job.progress, settings)):
        if finding is not None and (outcome := _handle(ports, job, finding, now, diverged is not None)) is not None:
            told.append(outcome)
    return told


def _handle(
    ports: StallProberPorts, job: WatchedJob, finding: Finding, now: datetime, diverged: bool
) -> Outcome | None:
    with once(ports, job.job_name, f"{finding.kind.value}-found", now, skip_if_busy=True) as step:
        if step.done or step.busy:
            return None
        # What the notice tells is read before the stop: a read that fails leaves the step to the next minute,
        # with nothing stopped.
        slowdown = finding.kind is FindingKind.SLOWDOWN
        checkpoints = ports.checkpoints.read(job.checkpoint_uri) if not slowdown and job.checkpoint_uri else None
        host = _which_host(ports, job, finding, now) if slowdown else NOT_KNOWN
        decision = _decide(ports, job.job_name, finding, diverged)
        if decision.stop and not _stop(ports, job.job_name, finding, now):
            decision = FindingDecision(False, "Nothing: the job had ended before the stop.")
        shape = (job.job_name, job.instance_type, job.host_count)
        notice = compose_finding_notice(
            *shape, finding, checkpoints, decision, region=ports.region, now=now, which_host=host
        )
        ports.notifier.publish(notice)
        kind = STOPPED[finding.kind] if decision.stop else FOUND[finding.kind]
        details = {"since": finding.since.isoformat(), "step": finding.step, "ratio": round(finding.ratio, 2)}
        decided = Decision.STOP if decision.stop else Decision.NOTIFY
        return step.record(Outcome(kind, job.job_name, finding.reason, decided, details=details))


def _which_host(ports: StallProberPorts, job: WatchedJob, finding: Finding, now: datetime) -> str:
    """What the hosts' mean GPUUtilization since the slowdown began says of its host (one GetMetricData call)."""
    averages = ports.gpu_metrics.average_by_host(job.job_name, job.host_count, finding.since, now)
    return name_slow_host(averages, gpus_per_host(job.instance_type))


def _decide(ports: StallProberPorts, job_name: str, finding: Finding, diverged: bool) -> FindingDecision:
    """The decision on the job as described now, its policy read from its tags now."""
    job = fresh(ports.jobs.describe(job_name))
    if job is None:
        return FindingDecision(False, "Nothing: the job no longer exists.")
    policy = read_job_policy(job.tags, ports.config.policy_defaults, ports.keys)
    config = ports.config
    deployer = DeployerSettings(config.dry_run, config.infra_check_after_host_faults, config.stop_stalled_parent_jobs)
    parent = managing_parent(job)
    return decide_on_finding(finding.kind, job, policy, parent, ports.keys, deployer=deployer, diverged_too=diverged)


def _stop(ports: StallProberPorts, job_name: str, finding: Finding, now: datetime) -> bool:
    """The stop record first, then StopTrainingJob: its end must find the record (stall_alarm.py does the same).
    A stop whose answer was lost (botocore's retry then finds the job Stopping) is trainguard's own."""
    ports.stall_ledger.record_stall(job_name, {"finding": finding.kind.value, "reason": finding.reason}, now)
    if ports.jobs.stop(job_name):
        return True
    job = fresh(ports.jobs.describe(job_name))
    return job is not None and job.status in ("Stopping", "Stopped")
