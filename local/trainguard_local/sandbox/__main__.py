"""`python -m trainguard_local.sandbox` (what `make sandbox` runs): see trainguard_local/sandbox/__init__.py."""

from __future__ import annotations

import argparse
import errno
import sys

from trainguard_local.sandbox.app import SandboxOptions, run_sandbox
from trainguard_local.sandbox.control import DEFAULT_PORT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainguard_local.sandbox",
        description="Serve the local AWS stand-in on 127.0.0.1 with trainguard attached, until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0 picks a free one")
    parser.add_argument("--speed", type=float, default=10.0, help="virtual minutes per real second, at most (10)")
    parser.add_argument("--start-minutes", type=int, default=2, help="virtual minutes from Starting to Training (2)")
    parser.add_argument("--checkpoint-minutes", type=int, default=10, help="a checkpoint every N minutes trained (10)")
    args = parser.parse_args(argv)
    if args.speed <= 0 or args.start_minutes < 0 or args.checkpoint_minutes < 1:
        parser.error("--speed must be above 0, --start-minutes at least 0, --checkpoint-minutes at least 1")
    options = SandboxOptions(args.port, args.speed, args.start_minutes, args.checkpoint_minutes)
    try:
        run_sandbox(options)
    except KeyboardInterrupt:
        print("\nsandbox stopped", flush=True)
    except OSError as err:
        if err.errno != errno.EADDRINUSE:
            raise
        print(f"port {args.port} is in use: make sandbox SANDBOX_PORT=<another>", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
