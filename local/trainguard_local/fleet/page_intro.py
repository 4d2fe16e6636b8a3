"""What the HTML report says first and last: that it is a simulation, of what (the trace) and how; the assumptions
the figures rest on, each with where it is defined and its source; and the sources, collected.

Every number is read from the code that assumes it (or from the report of the run); the sources are the ones
written beside those numbers in the code and its docs, collected here, none added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any

from trainguard_local.fleet.html_parts import source
from trainguard_local.fleet.model import GUARDS
from trainguard_local.fleet.words import fault_name, strategy_name
from trainguard_local.simulation import job_spec, reporting
from trainguard_local.simulation import later_faults as later
from trainguard_local.simulation import trace as drawn

AWS_FACTS = "docs/aws-facts.md"
PRICING_PAGE = "https://aws.amazon.com/sagemaker/ai/pricing/"  # where trainguard.domain.instance_prices says to recheck
LLAMA3_REPORT = "https://arxiv.org/abs/2407.21783"  # trace.py's "Meta's Llama 3 report (arXiv 2407.21783, table 5)"
SYNC_ISSUE = "https://github.com/aws/sagemaker-python-sdk/issues/3062"  # fault_table.py's checkpoint sync stopped
P95_Z = 1.645  # the standard normal's 95th percentile: a lognormal's p95 is its median x exp(1.645 sigma)


@dataclass(frozen=True)
class Assumption:
    """One thing the simulation assumes: in words with its numbers, where the code defines it, and its source."""

    what: str
    where: str
    source: str


def simulation_intro(report: dict[str, Any], command: str) -> list[str]:
    """The page's first paragraphs: a simulation, of which fleet and faults, and how each strategy is run."""
    trace = report["trace"]
    kinds = {kind: count for kind, count in trace["faults_by_kind"].items() if count}
    faults = "; ".join(f"{fault_name(kind)} ({count})" for kind, count in kinds.items())
    anchors = [strategy_name(name) for name in report["strategies"] if name not in GUARDS]
    return [
        '<div class="simulation" id="simulation">',
        "<p><strong>This page is a simulation, not a measurement of a real fleet.</strong> "
        f"It simulates {trace['jobs']} training jobs ({trace['gpus']} GPUs in all) over {trace['hours']:g} hours of "
        f"fleet time, drawn from seed {trace['seed']}; <code>{escape(command)}</code> draws the same run again.</p>",
        f"<p>{len(report['faults'])} of the jobs meet a fault, of these kinds (jobs): {escape(faults)}. The others run "
        "without one.</p>",
        "<p>Every strategy meets the same jobs, the same faults and the same person on call. trainguard's figures come "
        "from its own code (its Lambda handlers and adapters, unmodified) on a local stand-in for AWS, on a virtual "
        f"clock; the other strategies ({escape(', '.join(anchors))}) are models built from AWS's documentation. The "
        'figures rest on the <a href="#assumptions">assumptions</a> listed below, each with its '
        '<a href="#sources">source</a>.</p>',
        "</div>",
    ]


def assumptions(report: dict[str, Any]) -> list[Assumption]:
    """The assumptions of the run, each number from the code or the report that holds it."""
    return [*_person(report), *_trace(report["trace"]), *_guard_cost(report)]


def _person(report: dict[str, Any]) -> list[Assumption]:
    person = report["strategies"]["none"]["parameters"] if "none" in report["strategies"] else {}
    found = []
    if person:
        median, sigma = person["person_median_response_hours"], person["person_response_sigma"]
        found.append(
            Assumption(
                f"A person on call answers every incident (a failure, a stop, a hang, an approved quota) after a "
                f"response time drawn at random: median {median:g} h, 95th percentile about "
                f"{median * math.exp(P95_Z * sigma):.0f} h (lognormal, sigma {sigma:g}), never more than "
                f"{person['person_longest_response_hours']:g} h; fixing a user's own error takes "
                f"{person['person_fix_hours']:g} h more. Every strategy meets the same person.",
                "local/trainguard_local/fleet/person.py (PersonOnCall)",
                "an assumption: no public figures of on-call response times; the median is issue 5's example",
            )
        )
    return found


def _trace(trace: dict[str, Any]) -> list[Assumption]:
    low, high = min(drawn.CHECKPOINT_EVERY_MINUTES), max(drawn.CHECKPOINT_EVERY_MINUTES)
    return [
        Assumption(
            f"The trace draws one fault for {trace['fault_share']:.0%} of the jobs, and a stopped checkpoint sync "
            f"for {later.SYNC_STOPPED_SHARE:.0%} of the others, a livelock for {later.PROGRESS_FAULT_SHARE:.0%} and a "
            f"hang inside an announced phase for {later.PROGRESS_FAULT_SHARE:.0%} (at least one of each); "
            f"{reporting.REPORTING_SHARES[reporting.Reporting.NONE]:.0%} of the jobs report no progress, the others "
            "report it in trainguard's progress contract, a framework's own lines or a tag rule, a third each; "
            "the kinds are drawn by weight, "
            "hardware faults weighing most, and every kind appears once before the rest are drawn.",
            "local/trainguard_local/simulation/trace.py (FAULT_KIND_WEIGHTS), later_faults.py, reporting.py",
            "an assumption: no public failure statistics of SageMaker fleets; hardware weighs most after Meta's "
            f"Llama 3 report ({LLAMA3_REPORT}, table 5); the other weights are even-handed guesses",
        ),
        Assumption(
            f"A job trains for a median {drawn.WORK_HOURS_MEDIAN:g} h without faults ({drawn.MIN_WORK_HOURS:g} to "
            f"{drawn.MAX_WORK_HOURS:g} h), checkpoints every {low} to {high} minutes, and spends "
            f"{job_spec.STARTUP_MINUTES:g} billed minutes starting at each launch. A failure or a stop loses the work "
            "since the newest checkpoint, under every strategy.",
            "local/trainguard_local/simulation/trace.py",
            f"assumptions; the checkpoint interval is the simulator's brief ({low}-{high} minutes)",
        ),
        Assumption(
            f"A hung job runs until MaxRuntimeInSeconds, {drawn.DEFAULT_MAX_RUNTIME_HOURS:g} h by default, unless "
            f"someone stops it; a quota increase is approved {drawn.QUOTA_APPROVAL_HOURS[0]:g} to "
            f"{drawn.QUOTA_APPROVAL_HOURS[1]:g} h after the request.",
            "local/trainguard_local/simulation/trace.py",
            f'{AWS_FACTS} (MaxRuntime\'s default; quota requests take "hours to days"); the spread is an assumption',
        ),
        Assumption(
            f"{trace['spot_share']:.0%} of the jobs run on spot, {trace['vpc_share']:.0%} in a VPC, "
            f"{trace['debugger_share']:.0%} with Debugger's hook; a spot job interrupted waits "
            f"{drawn.SPOT_WAIT_HOURS[0]:g} to {drawn.SPOT_WAIT_HOURS[1]:g} h until MaxWait stops it.",
            "local/trainguard_local/simulation/trace.py (generate_trace)",
            "assumptions",
        ),
        Assumption(
            "Each job logs at a rhythm of its own (a line every 5 s to one per 40-minute epoch), silent while it "
            "saves a checkpoint or evaluates; some jobs are launched by a pipeline or a Batch queue, some list "
            "fallback instance types.",
            "local/trainguard_local/simulation/rhythm.py, local/trainguard_local/simulation/todays_sagemaker.py",
            "assumptions, each number named in those files: no public statistics of training jobs' log cadence",
        ),
        Assumption(
            "Dollars are us-east-1 on-demand list prices of SageMaker training instances, per instance-hour.",
            "lambdas/trainguard/domain/instance_prices.py (each price with its source)",
            f"public price tables, unconfirmed: recheck at {PRICING_PAGE} before quoting a dollar figure",
        ),
    ]


def _guard_cost(report: dict[str, Any]) -> list[Assumption]:
    if (cost := report.get("guard_cost")) is None:
        return []
    deployment = cost["deployment"]
    return [
        Assumption(
            "trainguard's own AWS cost is what its clients counted in the run, at list prices; Lambda's "
            f"duration is modelled ({deployment['handler_ms']:g} ms per invocation and "
            f"{deployment['aws_call_ms']:g} ms per AWS call).",
            "local/trainguard_local/fleet/guard_cost.py, local/trainguard_local/fleet/prices.py",
            "each price's source is written beside it in prices.py; the durations are assumptions",
        )
    ]


def assumptions_section(report: dict[str, Any]) -> list[str]:
    items = "".join(
        f'<li>{escape(a.what)} <span class="note">Where: <code>{escape(a.where)}</code>. Source: '
        f"{escape(a.source)}.</span></li>"
        for a in assumptions(report)
    )
    return ['<h2 id="assumptions">The assumptions</h2>', f"<ul>{items}</ul>"]


def sources_section(report: dict[str, Any]) -> list[str]:
    """Each strategy's sources (its model's documentation), then those of the assumptions."""
    parts = ['<h2 id="sources">Sources</h2>', "<p>What each strategy is modelled on:</p><ul>"]
    for name, figures in report["strategies"].items():
        listed = ", ".join(source(text) for text in figures.get("sources", []))
        parts.append(f"<li>{escape(strategy_name(name))}: {listed or 'none given'}</li>")
    parts.append("</ul><p>The assumptions' sources:</p><ul>")
    for text in (
        f"{AWS_FACTS}: what AWS documents of MaxRuntimeInSeconds, quota requests and the anchors' behaviour, each "
        "with its own source",
        LLAMA3_REPORT,
        SYNC_ISSUE,
        PRICING_PAGE,
        "local/trainguard_local/fleet/prices.py: the prices of what trainguard itself uses, each with its source",
        "tests/fixtures/failure_reasons.json: the real failure texts the trace quotes, each with its source",
    ):
        parts.append(f"<li>{source(text) if text.startswith('https://') else escape(text)}</li>")
    parts.append("</ul>")
    return parts
