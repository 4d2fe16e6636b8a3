"""`make bench`: the standard benchmark, written to BENCHMARKS.md with the command, the machine and the
figures, and drawn in BENCHMARKS.png (fleet/benchmark_chart.py). Timings are medians over repeated runs; the
simulator's figures are deterministic for a seed. It takes minutes: its progress goes to stderr
(fleet/progress.py)."""

from __future__ import annotations

import contextlib
import io
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainguard_local.bench.markdown import benchmark_markdown
from trainguard_local.fleet.benchmark_chart import write_benchmark_chart
from trainguard_local.fleet.goal_floors import floors as goal_floors
from trainguard_local.fleet.progress import Progress

HANDLERS = (
    "job_events",
    "retry_launcher",
    "stall_alarms",
    "stall_prober",
    "log_activity",
    "failed_launches",
    "quota_watch",
)
REPEATS = 5
MARKDOWN = Path("BENCHMARKS.md")
CHART = MARKDOWN.with_suffix(".png")


def import_times(on_handler: Callable[[int, str], None] | None = None) -> dict[str, float]:
    """Whole-process wall time of `python -c "import <handler>"`, median of REPEATS (a cold-start proxy);
    `on_handler(n, name)` is told as the n-th handler's timing starts."""
    result = {}
    for n, name in enumerate(HANDLERS, start=1):
        if on_handler is not None:
            on_handler(n, name)
        runs = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import trainguard.handlers.{name}"], check=True)
            runs.append(time.perf_counter() - started)
        result[name] = round(statistics.median(runs) * 1000, 1)
    return result


def handler_cpu_per_event() -> dict[str, float]:
    """CPU milliseconds per event of the job-events handler on in-memory ports, median of REPEATS x 200,
    each event's metrics flushed as the Lambda decorator does (the EMF lines go to a buffer, not the screen)."""
    from tests.fakes import FakeJobs, described_job, fake_ports, narrowed
    from trainguard.handlers import job_events
    from trainguard.handlers.observability import metrics
    from trainguard.workflows.function_ports import JobEventsPorts
    from trainguard_local.stand_in import alarm_evaluator, local_aws  # noqa: F401  (the local stack, once, untimed)

    event_of = _failed_event
    runs = []
    for _ in range(REPEATS):
        ports = fake_ports(retry_budget_per_hour=1000)  # every event relaunches: none is refused by the budget
        jobs = ports.jobs
        assert isinstance(jobs, FakeJobs)
        for n in range(200):
            jobs.add(described_job(f"job-{n}"), {"trainguard:enabled": "true"})
        started = time.process_time()
        # With POWERTOOLS_METRICS_DISABLED the flush has nothing to write and says so; that is expected here.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            kinds = set()
            for n in range(200):
                kinds.add(job_events.handle(event_of(f"job-{n}"), narrowed(JobEventsPorts, ports)).kind.value)
                metrics.flush_metrics()
        runs.append((time.process_time() - started) / 200)
        if kinds != {"relaunched"}:  # the figure is labelled "relaunching": make sure that is what was timed
            raise RuntimeError(f"expected only relaunches, got {sorted(kinds)}")
    return {"job_events_relaunch": round(statistics.median(runs) * 1000, 3)}


def _failed_event(name: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": name,
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "account": "123456789012",
        "time": "2026-11-29T12:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {
            "TrainingJobName": name,
            "TrainingJobStatus": "Failed",
            "SecondaryStatus": "Failed",
            "FailureReason": "InternalServerError: We encountered an internal error. Please try again.",
        },
    }


def main() -> int:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "TrainGuardBench")
    from trainguard_local.bench.measure_stalls import measure
    from trainguard_local.fleet.anchors import anchor_strategies
    from trainguard_local.fleet.report import run_all
    from trainguard_local.fleet.trainguard_strategy import TrainguardStrategy, with_leave_to_act
    from trainguard_local.simulation.trace import generate_trace

    began = time.perf_counter()
    trace = generate_trace(200, 72, 7)
    anchors = anchor_strategies()
    steps = len(anchors) + 6  # the anchors, trainguard twice, the scale, the import times, the handler's CPU, the files
    progress = Progress("bench", steps)
    guard = TrainguardStrategy(
        on_progress=progress.fleet_clock(len(anchors) + 1, "standard trace, trainguard", trace.hours)
    )
    with_leave = with_leave_to_act(
        on_progress=progress.fleet_clock(len(anchors) + 2, "standard trace, trainguard with leave", trace.hours)
    )
    strategies: list[Any] = [*anchors, guard, with_leave]
    step_of = {strategy.name: n for n, strategy in enumerate(strategies, start=1)}

    def strategy_started(name: str) -> None:
        progress.update(step_of[name], f"standard trace, {name}")

    started = time.perf_counter()
    report = run_all(trace, strategies, on_strategy=strategy_started)
    simulate_seconds = time.perf_counter() - started
    report["goal_floors"] = goal_floors(trace, report["strategies"]["none"])
    scale_step = len(strategies) + 1
    scale = measure(
        2000, cycles=REPEATS, on_progress=lambda what: progress.update(scale_step, f"scale, 2,000 jobs: {what}")
    )
    imports = import_times(
        lambda n, name: progress.update(
            scale_step + 1, f"import times: {name} ({n} of {len(HANDLERS)})", within=(n - 1) / len(HANDLERS)
        )
    )
    progress.update(scale_step + 2, "handler CPU per event: job_events")
    cpu = handler_cpu_per_event()
    progress.update(scale_step + 3, f"writing {MARKDOWN} and {CHART}")
    MARKDOWN.write_text(benchmark_markdown(report, simulate_seconds, scale, imports, cpu, CHART.name))
    write_benchmark_chart(report, CHART)
    progress.done(f"wrote {MARKDOWN} and {CHART} in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
