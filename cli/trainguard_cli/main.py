"""The `trainguard` command line. `trainguard explain` runs offline: no AWS call is made."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import Any

from trainguard_cli.deploy_commands import add_deploy_commands
from trainguard_cli.explain import explain_text
from trainguard_cli.inputs import EXIT_NOT_FOUND, EXIT_UNUSABLE, NotFound, UnusableInput, read_text
from trainguard_cli.log_lines import LineReadings, notes
from trainguard_cli.operator_commands import add_operator_commands
from trainguard_cli.preflight import add_preflight_command, preflight_text

# Packages that add commands (`simulate`, `sandbox`: the local tools) register a function under this group, so
# that the operator commands import none of them (pyproject.toml, [project.entry-points]).
COMMAND_GROUP = "trainguard.commands"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        result = args.run(args)
    except NotFound as err:
        print(f"trainguard {args.command}: {err}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except (UnusableInput, ValueError) as err:
        print(f"trainguard {args.command}: {err}", file=sys.stderr)
        return EXIT_UNUSABLE
    except Exception as err:  # an AWS error in a command that calls AWS: one line, not a traceback
        if type(err).__module__.startswith("botocore"):
            print(f"trainguard {args.command}: {err}", file=sys.stderr)
            return EXIT_UNUSABLE
        raise
    answer, code = result if isinstance(result, tuple) else (result, 0)
    if isinstance(answer, LineReadings):  # one answer per line of the log, in order
        for note in notes(answer):
            print(f"trainguard {args.command}: {note}", file=sys.stderr)
        if answer.readings:
            print(answer.as_json_lines() if args.json else answer.as_text())
        return code
    if getattr(args, "json", True):
        json.dump(answer, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        print(getattr(args, "render", preflight_text)(answer))  # each command may bring its own text
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trainguard", description="A guardian for SageMaker training jobs.")
    parser.add_argument("--version", action="version", version=f"trainguard {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    explain = commands.add_parser(
        "explain",
        help="say what trainguard would do, offline",
        description="Tell what trainguard would do with a failure, in words (--json: one JSON object), or what it "
        "reads from a job's log lines (--log-lines). Makes no AWS call. A text may come on the command line, from "
        "standard input (-) or from a file (--reason-file).",
    )
    source = explain.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--reason",
        metavar="TEXT",
        help="a job's FailureReason (- reads it from standard input), decided as the handlers decide it: the words "
        "from AlgorithmError on are the training script's and buy at most a relaunch of the same shape, never a "
        "quota request",
    )
    source.add_argument("--reason-file", type=Path, metavar="FILE", help="a job's FailureReason, read from FILE")
    source.add_argument(
        "--api-error",
        metavar="TEXT",
        help="an error message an AWS API call returned (CreateTrainingJob's ResourceLimitExceeded, say; - reads it "
        "from standard input): the only text a quota request is sized from",
    )
    source.add_argument("--api-error-file", type=Path, metavar="FILE", help="an AWS API error message, read from FILE")
    source.add_argument(
        "--event",
        type=Path,
        metavar="FILE",
        help="an event the stack routes (JSON file): a SageMaker Training Job State Change, a CloudWatch Alarm State "
        "Change of a stall alarm, or the AWS API Call via CloudTrail of a refused CreateTrainingJob",
    )
    source.add_argument(
        "--describe", type=Path, metavar="FILE", help="a DescribeTrainingJob response as the AWS CLI prints it"
    )
    source.add_argument(
        "--log-lines",
        type=Path,
        metavar="FILE",
        help="a job's log (- reads standard input): what trainguard reads from each line, a step, its loss, a phase "
        "or a start (--json: one JSON object per line); with --tags, the job's progress rule too",
    )
    explain.add_argument(
        "--tags",
        type=Path,
        metavar="FILE",
        help="a ListTags response (JSON file), with --describe, --describe-job or --log-lines",
    )
    explain.add_argument(
        "--describe-job",
        type=Path,
        metavar="FILE",
        help="with --event of a stall alarm: the DescribeTrainingJob response of its job",
    )
    explain.add_argument("--tag-prefix", default="trainguard", help="the deployed tag prefix (default: trainguard)")
    explain.add_argument("--max-retries", type=int, default=3, help="the deployed default_max_retries")
    explain.add_argument(
        "--allow-role",
        action="append",
        default=None,
        metavar="ARN",
        help="a role trainguard may pass (setting passable_role_arns); repeat it. Without it, the role is not checked.",
    )
    explain.add_argument(
        "--infra-check-after-host-faults",
        action="store_true",
        help="the deployed setting infra_check_after_host_faults (InfraCheckConfig on relaunches after host faults)",
    )
    explain.add_argument(
        "--quota-ceiling", type=int, default=64, help="the deployed default_quota_ceiling (for quota_request)"
    )
    explain.add_argument(
        "--launchable-type",
        action="append",
        default=[],
        metavar="TYPE",
        help="an instance type of the deployed setting launchable_instance_types; repeat it. Without it, the "
        "product's default: no fallback and no move to on-demand",
    )
    explain.add_argument("--json", action="store_true", help="print one JSON object (the default is text)")
    explain.set_defaults(run=_run_explain, render=explain_text)
    add_preflight_command(commands)
    add_operator_commands(commands)
    add_deploy_commands(commands)
    for plugged in entry_points(group=COMMAND_GROUP):  # the local tools' commands (trainguard_local), if installed
        plugged.load()(commands)
    return parser


def _run_explain(args: argparse.Namespace) -> dict[str, Any] | LineReadings:
    from trainguard.adapters.service_model import create_training_job_shape
    from trainguard.config import GuardConfig
    from trainguard.domain.job_end import RelaunchSettings
    from trainguard.domain.model import TextSource
    from trainguard.domain.policy import PolicyDefaults, TagKeys
    from trainguard.events.state_change import parse_state_change
    from trainguard.events.training_job import MalformedInput, job_from_description
    from trainguard_cli.explain import explain_job, explain_reason

    if args.log_lines is not None:
        return _explain_log_lines(args)
    if (reason := read_text(args.reason, args.reason_file)) is not None:
        return explain_reason(reason, TextSource.SAGEMAKER, quota_ceiling=args.quota_ceiling)
    if (api_error := read_text(args.api_error, args.api_error_file)) is not None:
        return explain_reason(api_error, TextSource.API_ERROR, quota_ceiling=args.quota_ceiling)
    try:
        if args.event is not None:
            event = _read_json(args.event)
            if isinstance(event, dict) and event.get("source") == "aws.cloudwatch":
                return _explain_alarm(args, event)
            if isinstance(event, dict) and event.get("detail-type") == "AWS API Call via CloudTrail":
                return _explain_failed_launch(args, event)
            job = parse_state_change(event).job
        else:
            tags = _read_tags(args.tags) if args.tags else None
            job = job_from_description(_read_json(args.describe), tags)
    except MalformedInput as err:
        raise UnusableInput(str(err)) from None
    role = str(job.description.get("RoleArn", ""))
    roles = tuple(args.allow_role) if args.allow_role is not None else (role,)
    answer = explain_job(
        job,
        defaults=PolicyDefaults(max_retries=args.max_retries),
        keys=TagKeys(args.tag_prefix),
        settings=RelaunchSettings(
            passable_role_arns=roles,
            capacity_backoff_minutes=GuardConfig.capacity_backoff_minutes,
            capacity_backoff_max_minutes=GuardConfig.capacity_backoff_max_minutes,
            infra_check_after_host_faults=args.infra_check_after_host_faults,
            launchable_instance_types=tuple(args.launchable_type),
        ),
        create_request_shape=create_training_job_shape(),
        now=datetime.now(UTC),
    )
    if args.allow_role is None:
        answer["notes"] = ["the execution role was not checked against passable_role_arns (use --allow-role)"]
    return answer


def _explain_log_lines(args: argparse.Namespace) -> LineReadings:
    from trainguard.domain.policy import TagKeys
    from trainguard_cli.inputs import read_text_as_written
    from trainguard_cli.log_lines import explain_log_lines

    tags = _read_tags(args.tags) if args.tags else None
    return explain_log_lines(read_text_as_written(args.log_lines), tags, TagKeys(args.tag_prefix))


def _explain_failed_launch(args: argparse.Namespace, event: Any) -> dict[str, Any]:
    from trainguard.adapters.service_model import create_training_job_shape
    from trainguard.domain.policy import PolicyDefaults, TagKeys
    from trainguard.events.cloudtrail import parse_failed_launch
    from trainguard_cli.explain import explain_failed_launch

    return explain_failed_launch(
        parse_failed_launch(event),
        defaults=PolicyDefaults(max_retries=args.max_retries),
        keys=TagKeys(args.tag_prefix),
        create_request_shape=create_training_job_shape(),
        quota_ceiling=args.quota_ceiling,
    )


def _explain_alarm(args: argparse.Namespace, event: Any) -> dict[str, Any]:
    from trainguard.domain.policy import PolicyDefaults, TagKeys
    from trainguard.events.alarm_state_change import parse_alarm_state_change
    from trainguard.events.training_job import job_from_description
    from trainguard_cli.explain import explain_stall_alarm

    change = parse_alarm_state_change(event)
    job = None
    if args.describe_job is not None:
        tags = _read_tags(args.tags) if args.tags else None
        job = job_from_description(_read_json(args.describe_job), tags)
    return explain_stall_alarm(
        change,
        job,
        defaults=PolicyDefaults(max_retries=args.max_retries),
        keys=TagKeys(args.tag_prefix),
        now=datetime.now(UTC),
    )


def _read_tags(path: Path) -> Any:
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("Tags"), list):
        raise UnusableInput(f"{path}: not a ListTags response (an object with a Tags list)")
    return data["Tags"]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(None, path) or "")
    except json.JSONDecodeError as err:
        raise UnusableInput(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None


def _version() -> str:
    try:
        return version("trainguard")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
