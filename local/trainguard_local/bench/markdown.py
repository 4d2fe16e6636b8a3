"""BENCHMARKS.md, from the benchmark's report and measurements (bench/__main__.py measures; this writes, and
against_goals.py writes the lines against the issues' goals)."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from typing import Any

from trainguard_local.bench.against_goals import goals_markdown


def benchmark_markdown(
    report: dict[str, Any],
    seconds: float,
    scale: dict[str, Any],
    imports: dict[str, float],
    cpu: dict[str, float],
    chart: str,
) -> str:
    """BENCHMARKS.md: the standard trace's table and goals, trainguard's own cost, the prober at scale, the handlers."""
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"
    machine += f", load average {os.getloadavg()[0]:.1f} at the end (timings grow with other work on the machine)"
    return "\n".join(
        [
            "# Benchmarks",
            "",
            f"Written by `make bench` (`python -m trainguard_local.bench`) on {datetime.now(UTC):%Y-%m-%d}, "
            f"on {machine}. The anchors are models of their documentation (sources in the JSON report of "
            "`trainguard simulate`); trainguard is the real code on the local stand-in.",
            "",
            f"## The standard trace: 200 jobs, 72 hours, seed 7 ({seconds:.1f} s for all "
            f"{len(report['strategies'])} strategies)",
            "",
            "| strategy | wasted GPU-h | wasted $ | completion delay total h | p95 h | jobs completed | "
            "p95 detect idle / busy GPU hang (min) | duplicate | wrong |",
            "|---|---|---|---|---|---|---|---|---|",
            *_strategy_rows(report),
            "",
            "Wasted GPU-hours: GPU-hours billed that produced no kept progress (hung or idle time plus the work lost "
            "since the last checkpoint at each failure or stop, x instances x GPUs). Completion delay: the extra "
            "wall-clock hours until a job's work is done, compared with a fault-free run.",
            "",
            f"![Wasted GPU-hours by strategy, by cause; completion delay by fault kind and strategy]({chart})",
            "",
            "The picture, from the same report: at the top, each strategy's wasted GPU-hours split into hung or idle "
            "time and work lost since the last checkpoint, each bar labelled with its total; at the bottom, the "
            "completion delay by the kind of each job's fault, one bar per strategy (the tables below give the "
            "figures).",
            "",
            *goals_markdown(report),
            *_guard_cost_markdown(report.get("guard_cost")),
            *_scale_and_handlers(scale, imports, cpu),
        ]
    )


def _strategy_rows(report: dict[str, Any]) -> list[str]:
    rows = []
    for name, f in report["strategies"].items():
        delay = f["completion_delay_hours"]
        detect = f.get("detect_minutes", {})
        hang = [detect.get(k, {}).get("p95") for k in ("hang_idle_gpu", "hang_busy_gpu")]
        rows.append(
            f"| {name} | {f['wasted_gpu_hours']:,.1f} | {f['wasted_dollars']:,.0f} | {delay['total']:,.1f} | "
            f"{delay['p95']} | {f['jobs_completed']} | {hang[0]} / {hang[1]} | {f['duplicate_actions']} | "
            f"{f['wrong_actions']} |"
        )
    return rows


def _scale_and_handlers(scale: dict[str, Any], imports: dict[str, float], cpu: dict[str, float]) -> list[str]:
    return [
        "## The stall prober at 2,000 watched jobs (in process, against moto)",
        "",
        f"- calls per cycle: {scale['calls_per_cycle']} (the Logs read APIs are not called per job)",
        f"- every 15th minute, the orphan sweep adds: {scale['calls_per_sweep_cycle']} (moto does not paginate "
        "DescribeAlarms; on AWS, at 100 alarms a page (MaxRecords is 1-100 in botocore's CloudWatch model), "
        "the sweep takes about 41 calls for 2,000 jobs' 4,000 alarms)",
        f"- cycle time: {scale['cycle_seconds_in_process']} s (median of {scale['cycles_timed']} cycles), "
        f"watch list {scale['watch_list_bytes']:,} bytes (one Query page up to 1 MB)",
        f"- cost per guarded job-hour (8 hosts, fleet/prices.py rates): {scale['cost_per_job_hour_usd']}",
        "",
        "## Handlers",
        "",
        "| handler module | import, whole process (ms, median of 5) |",
        "|---|---|",
        *[f"| {name} | {ms} |" for name, ms in imports.items()],
        "",
        f"CPU per event, job-events handler relaunching a failed job on in-memory ports: "
        f"{cpu['job_events_relaunch']} ms (median of 5 x 200 events).",
        "",
    ]


def _guard_cost_markdown(cost: dict[str, Any] | None) -> list[str]:
    """trainguard's own AWS cost on the standard trace (the `guard_cost` of the JSON report)."""
    if cost is None:
        return []
    rows = [
        f"| {name} | {entry['counted_in_run']:,.1f} | {entry['estimated_for_the_deployed_schedules']:,.1f} | "
        f"{entry['unit']} | {entry['price_per_unit']:.3g} | {entry['dollars']:,.4f} |"
        for name, entry in sorted(cost["breakdown"].items(), key=lambda item: -item[1]["dollars"])
    ]
    deployment = cost["deployment"]
    return [
        "## trainguard's own AWS cost on the standard trace (`guard_cost`)",
        "",
        f"**${cost['total_dollars']:,.2f}** for {cost['guarded_instance_hours']:,.0f} guarded instance-hours: "
        f"**${cost['dollars_per_guarded_instance_hour']:.6f} per guarded instance-hour**, "
        f"**{cost['share_of_guarded_compute_percent']:.4f}%** of the guarded compute's "
        f"${cost['guarded_compute_dollars']:,.0f} (goal: at most {cost['goal_share_percent']}%).",
        "",
        "| item | counted in the run | estimated for the deployed schedules | unit | $ per unit | $ |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "Counted at trainguard's own clients in the run (API calls by operation, their billed quantities, each "
        "alarm's life, the custom metrics sent) and priced at list prices (`local/trainguard_local/fleet/prices.py`, "
        "each with its source; free tiers left out). The prober and the quota check run in the simulator only "
        "while something can come of them, and the log-activity function only for the lines of a stall window: "
        f"the invocations a deployment adds ({deployment['invocations_deployed']}; log deliveries at "
        f"{deployment['log_deliveries_per_watched_job_hour']:g} per watched job-hour, an assumption) are priced "
        "at the average of those that ran. Lambda duration is modelled: "
        f"{deployment['handler_ms']:g} ms per invocation + {deployment['aws_call_ms']:g} ms per AWS call, "
        f"{deployment['lambda_memory_gb']:g} GB, arm64 (assumptions). Not counted: "
        + "; ".join(cost["not_counted"])
        + ".",
        "",
    ]
