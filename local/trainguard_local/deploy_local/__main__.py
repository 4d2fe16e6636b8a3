"""`python -m trainguard_local.deploy_local` (what `make deploy-local` runs): see deploy_local/deploy.py."""

from __future__ import annotations

import sys

from trainguard_local.deploy_local.deploy import main

if __name__ == "__main__":
    sys.exit(main())
