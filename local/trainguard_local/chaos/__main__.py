"""`python -m trainguard_local.chaos --seed 1 --seed 2 --jobs 100 [--json out.json]`: run the chaos suite,
print its figures, exit 1 if any rule was broken (docs/local-tools.md, "Reliability")."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from trainguard_local.chaos.audit import audit_run
from trainguard_local.chaos.call_faults import FaultRates
from trainguard_local.chaos.chaos_report import as_json, summary
from trainguard_local.chaos.chaos_run import ChaosSettings, fleet_phase_hours, run_chaos
from trainguard_local.fleet.progress import Progress


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainguard_local.chaos", description=__doc__)
    parser.add_argument("--seed", type=int, action="append", help="a seed (repeat for several runs; default 1)")
    parser.add_argument("--jobs", type=int, default=40, help="jobs in each run's fleet (default 40)")
    parser.add_argument("--hours", type=float, default=6.0, help="hours over which the jobs are submitted (6)")
    parser.add_argument("--fault-share", type=float, default=ChaosSettings.fault_share, help="jobs with a fault")
    parser.add_argument("--fault-rate", type=float, default=FaultRates.per_attempt, help="share of AWS call attempts")
    parser.add_argument("--death-rate", type=float, default=FaultRates.process_death, help="share of side effects")
    parser.add_argument("--retry-budget", type=int, default=ChaosSettings.retry_budget_per_hour, help="per hour")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    seeds = args.seed or [1]
    rates = FaultRates(per_attempt=args.fault_rate, process_death=args.death_rate)
    budget = {"retry_budget_per_hour": args.retry_budget}
    started = time.monotonic()
    progress = Progress("chaos", steps=len(seeds), step_name="run")
    audits = []
    for number, seed in enumerate(seeds, start=1):
        settings = ChaosSettings(seed, args.jobs, args.hours, args.fault_share, rates, **budget)
        progress.update(number, f"seed {seed}, starting the stand-in")
        clock = progress.fleet_clock(number, f"seed {seed}", fleet_phase_hours(settings), every_hours=0.25)
        audits.append(run_chaos(settings, audit_run, clock))
    seconds = time.monotonic() - started
    progress.done(f"{len(seeds)} seed(s) in {seconds:.0f} s")
    print(summary(audits, seeds, args.jobs, seconds))
    if args.json:
        args.json.write_text(json.dumps(as_json(audits, seeds, args.jobs, seconds), indent=2) + "\n")
    return 1 if any(a.violations for a in audits) else 0


if __name__ == "__main__":
    sys.exit(main())
