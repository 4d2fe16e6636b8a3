"""`make demo`: watch trainguard work, without an AWS account.

By default, the fleet demo (demo/fleet.py): fifteen jobs, every fault kind, 24 hours of fleet time on the
fleet simulator, the SNS messages trainguard published, the figures against no guard, SageMaker's
RetryStrategy and Debugger's rule, trainguard's own AWS cost; the timeline (PNG), the HTML report and the JSON
report in `demo-out/`.

With `--acts`, the acts below, against the stand-in over HTTP (moto server and the simulated SageMaker
on 127.0.0.1, the stack's event rules):

1. An opted-in job fails with an InternalServerError: trainguard relaunches it from its checkpoint
   (and a duplicate delivery of the same event changes nothing).
2. An opted-in job fails in the user's code: trainguard does not retry, and says why.
3. A job that is not opted in fails: trainguard ignores it.
4. A quota wall: two launches refused by quotas at 0; trainguard requests what each needs, one is
   approved hours later (on a virtual clock) and the launch goes ahead, the other is denied and reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainguard_local.demo.acts import run_demo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainguard_local.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--acts", action="store_true", help="the acts against the HTTP stand-in, not the fleet")
    parser.add_argument("--out", type=Path, default=Path("demo-out"), help="the fleet demo's files (demo-out/)")
    parser.add_argument("--json", type=Path, help="also write what happened as JSON to this file")
    args = parser.parse_args(argv)
    if args.acts:
        report = run_demo()
    else:
        from trainguard_local.demo.fleet import run_fleet_demo

        report = run_fleet_demo(args.out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
