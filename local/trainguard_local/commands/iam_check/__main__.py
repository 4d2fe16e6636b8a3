"""`python -m trainguard_local.commands.iam_check`: make lint's IAM step (command.py)."""

import sys

from trainguard_local.commands.iam_check.command import main

sys.exit(main(sys.argv[1:]))
