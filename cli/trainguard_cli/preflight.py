"""`trainguard preflight`: check a planned launch against the account's SageMaker quotas, and with
--request file the increases it needs. It calls AWS (or the local stand-in through AWS_ENDPOINT_URL). The launch is
given by options, or by a job as DescribeTrainingJob gives it (--describe-file, described_job.py), the options
winning; its environment and hyperparameters are checked for the NCCL watchdog (domain/collective_watchdog.py).

IAM for the person who runs it: the Service Quotas reads (and RequestServiceQuotaIncrease with
--request), sagemaker:ListTrainingJobs and sagemaker:DescribeTrainingJob.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import Any

from trainguard.domain.collective_watchdog import check_collective_watchdog
from trainguard.domain.preflight import PlannedLaunch, QuotaCheck, check_launch
from trainguard.domain.quotas import NoQuotaRequest, QuotaDemand, plan_quota_request
from trainguard.domain.stalls import StallThresholds
from trainguard.domain.wording import format_value
from trainguard_cli.described_job import DescribedJob, read_described_job
from trainguard_cli.inputs import EXIT_NO, EXIT_OK, UnusableInput, aws_session


def add_preflight_command(commands: Any) -> None:
    preflight = commands.add_parser(
        "preflight",
        help="check a planned launch against the account's quotas",
        description="Check a planned training launch against the account's SageMaker quotas: the instance "
        "type's quota, the instances across all training jobs, the maximum per job and the longest run time. "
        "Exit 0 if it fits, 1 if a quota blocks it, 2 if the input cannot be used.",
    )
    preflight.add_argument(
        "--describe-file",
        type=Path,
        metavar="FILE",
        help="a job as DescribeTrainingJob gives it, as JSON (- reads standard input): its instance type and count, "
        "run time, spot, environment and hyperparameters; the options below win",
    )
    preflight.add_argument("--instance-type", help="e.g. ml.p4d.24xlarge (required without --describe-file)")
    preflight.add_argument("--instance-count", type=int, help="instances in the planned job (the same)")
    preflight.add_argument("--max-runtime", type=int, metavar="SECONDS", help="the job's MaxRuntimeInSeconds")
    preflight.add_argument("--spot", action="store_true", help="a managed spot job (its own instance quota)")
    preflight.add_argument("--request", action="store_true", help="file the increases that would unblock it")
    preflight.add_argument("--ceiling", type=int, default=64, help="the most to ask for an instance quota")
    preflight.add_argument("--no-support-case", action="store_true", help="SupportCaseAllowed=false")
    preflight.add_argument(
        "--environment",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the job's environment (repeatable): warns when the NCCL watchdog is off",
    )
    preflight.add_argument(
        "--hyperparameter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="the job's hyperparameters (repeatable): warns when ddp_timeout passes the stall limit",
    )
    preflight.add_argument(
        "--stall-minutes",
        type=int,
        default=StallThresholds().stall_minutes,
        help="the job's trainguard:stall-minutes (default %(default)s)",
    )
    preflight.add_argument("--json", action="store_true", help="print JSON (the default is text)")
    preflight.set_defaults(run=run_preflight)


def run_preflight(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from trainguard.adapters.sagemaker import SageMakerJobs
    from trainguard.adapters.service_quotas import ServiceQuotas

    described = read_described_job(args.describe_file) if args.describe_file else DescribedJob()
    launch = _planned_launch(args, described)
    watchdog_warnings = check_collective_watchdog(
        described.environment | _key_values(args.environment, "--environment"),
        described.hyperparameters | _key_values(args.hyperparameter, "--hyperparameter"),
        args.stall_minutes,
    )
    session = aws_session()
    quotas = ServiceQuotas(session.client("service-quotas"))
    jobs = SageMakerJobs(session.client("sagemaker"))
    names = [launch.type_quota_name, *_GLOBAL_QUOTAS]
    found = {name: quotas.find(name) for name in names}
    values = {name: (quotas.current_value(q.code) if q else None) for name, q in found.items()}
    checks = check_launch(launch, values, jobs.instances_in_use())
    requested = []
    if args.request:
        for check in checks:
            quota = found.get(check.quota_name)
            if check.blocks and quota is not None:
                requested.append(_request(quotas, quota.code, check, args))
    report = {
        "described_job": described.name,
        "launch": {
            "instance_type": launch.instance_type,
            "instance_count": launch.instance_count,
            "max_runtime_seconds": launch.max_runtime_seconds,
            "spot": launch.spot,
        },
        "fits": not any(c.blocks for c in checks),
        "checks": [c.as_dict() for c in checks],
        "requests": requested,
        "warnings": watchdog_warnings,  # never a block: the exit code is the quotas'
    }
    return report, EXIT_OK if report["fits"] else EXIT_NO


def _planned_launch(args: argparse.Namespace, described: DescribedJob) -> PlannedLaunch:
    """The launch the options give, each missing one taken from the described job."""
    instance_type = args.instance_type or described.instance_type
    instance_count = args.instance_count if args.instance_count is not None else described.instance_count
    if instance_type is None or instance_count is None:
        source = f"{args.describe_file} has no ResourceConfig.InstanceType and InstanceCount (InstanceGroups?): "
        raise UnusableInput(
            (source if args.describe_file else "")
            + "give --instance-type and --instance-count"
            + ("" if args.describe_file else ", or --describe-file FILE")
        )
    if instance_count < 1:
        raise UnusableInput("--instance-count must be 1 or more")
    max_runtime = args.max_runtime if args.max_runtime is not None else described.max_runtime_seconds
    if max_runtime is not None and max_runtime < 1:
        raise UnusableInput("--max-runtime must be 1 second or more")
    _check_instance_type(instance_type)
    return PlannedLaunch(instance_type, instance_count, max_runtime, args.spot or described.spot)


def _key_values(pairs: list[str], option: str) -> dict[str, str]:
    values = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise UnusableInput(f"{option} takes KEY=VALUE, not {pair!r}")
        values[key] = value
    return values


def _check_instance_type(instance_type: str) -> None:
    from botocore import __version__ as botocore_version

    from trainguard.adapters.service_model import training_instance_types

    known = training_instance_types()
    if instance_type in known:
        return
    close = difflib.get_close_matches(instance_type, known, n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ", e.g. ml.p4d.24xlarge"
    raise UnusableInput(
        f"{instance_type} is not a SageMaker training instance type (botocore {botocore_version} knows "
        f"{len(known)}; a newer type needs a newer boto3){hint}"
    )


_GLOBAL_QUOTAS = (
    "Number of instances across all training jobs",
    "Maximum number of instances per training job",
    "Longest run time for a training job",
)


def _request(quotas: Any, code: str, check: QuotaCheck, args: argparse.Namespace) -> dict[str, Any]:
    assert check.value is not None
    demand = QuotaDemand(check.quota_name, check.value, check.in_use, check.needed - check.in_use)
    runtime = check.quota_name == _GLOBAL_QUOTAS[2]
    plan = plan_quota_request(
        demand,
        current_value=check.value,
        launch_instance_count=None,
        ceilings={},
        default_ceiling=check.needed if runtime else args.ceiling,
    )
    if isinstance(plan, NoQuotaRequest):
        return {"quota_name": check.quota_name, "requested": False, "reason": plan.reason}
    if plan.desired_value < check.needed:  # capped by the ceiling: it could not unblock the launch
        return {
            "quota_name": check.quota_name,
            "requested": False,
            "reason": f"the launch needs {format_value(check.needed)} but --ceiling is {format_value(args.ceiling)}: "
            f"a request for {format_value(plan.desired_value)} could not unblock it, so none was filed; pass "
            f"--ceiling {format_value(check.needed)} to ask for what it needs",
        }
    open_request = quotas.open_request(code)
    state = open_request or quotas.request_increase(code, plan.desired_value, not args.no_support_case)
    return {
        "quota_name": check.quota_name,
        "requested": open_request is None,
        "desired_value": state.desired_value,
        "ceiling_applied": plan.ceiling_applied,
        "request_id": state.request_id,
        "case_id": state.case_id,
        "status": state.status,
        "reason": "an open request already exists" if open_request else plan.reason,
    }


def preflight_text(report: dict[str, Any]) -> str:
    launch = report["launch"]
    lines = [
        (f"{name} as described: " if (name := report.get("described_job")) else "Planned: ")
        + f"{launch['instance_count']} x {launch['instance_type']}"
        + (f", MaxRuntimeInSeconds {format_value(runtime)}" if (runtime := launch["max_runtime_seconds"]) else "")
        + (" (spot)" if launch["spot"] else "")
    ]
    for check in report["checks"]:
        mark = "BLOCKS" if check["blocks"] else "ok    "
        lines.append(f"  {mark} {check['quota_name']}: {check['explanation']}")
    for request in report["requests"]:
        if request.get("request_id"):
            lines.append(
                f"  requested {request['quota_name']} = {format_value(request['desired_value'])}: request "
                f"{request['request_id']}, status {request['status']} ({request['reason']})"
            )
        else:
            lines.append(f"  not requested {request['quota_name']}: {request['reason']}")
    lines.extend(f"  WARNING {warning}" for warning in report.get("warnings", []))
    lines.append("It fits." if report["fits"] else "A quota blocks this launch.")
    return "\n".join(lines)
