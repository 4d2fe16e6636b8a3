"""moto server for deploying trainguard's stack on this machine with the real CDK CLI.

It is moto server with one CloudFormation type added (trainguard_local.deploy_local.cloudformation_extras: without
AWS::Scheduler::ScheduleGroup, moto fails the stack). `make deploy-local` starts it for its run; to follow
the steps of docs/deploying.md by hand instead, start it here, export what it prints in another shell, and run
`cdk bootstrap`, `cdk deploy`, ... as docs/deploying.md says:

    .venv/bin/python -m trainguard_local.deploy_local.server [--port 5055]

It listens on 127.0.0.1 only. The endpoint is spelled `localhost`: with 127.0.0.1 the CDK CLI cannot find
its asset bucket (docs/local-aws.md).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

REGION = "us-east-1"
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# No instance metadata lookups, no CDK telemetry or version check, no jsii banner for Node 20.
QUIET_CLI = {
    "AWS_EC2_METADATA_DISABLED": "true",
    "CDK_DISABLE_CLI_TELEMETRY": "true",
    "CDK_DISABLE_VERSION_CHECK": "true",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "1",
}


def local_aws_variables(endpoint: str) -> dict[str, str]:
    """What points the AWS SDKs and the CDK CLI at `endpoint`, with dummy credentials."""
    return {
        **DUMMY_CREDENTIALS,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        **QUIET_CLI,
    }


def shell_exports(endpoint: str) -> str:
    """The lines a user pastes into a shell (a profile or a session token would win over the dummy keys)."""
    exports = " \\\n  ".join(f"{name}={value}" for name, value in local_aws_variables(endpoint).items())
    return f"unset AWS_PROFILE AWS_SESSION_TOKEN\nexport {exports}"


@contextmanager
def moto_server(port: int = 0) -> Iterator[str]:
    """moto server on 127.0.0.1 (`port`, or a free one), with the CloudFormation type trainguard needs;
    yields its endpoint, spelled with `localhost`. Stopped on the way out, whatever happened."""
    from moto.server import ThreadedMotoServer

    from trainguard_local.deploy_local import cloudformation_extras

    cloudformation_extras.register()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the access log
    # "No Moto CloudFormation support for ...", and on update or delete "Unable to delete ..., as it was never
    # created", once per resource of such a type: deploy-local reports these types itself.
    logging.getLogger("moto").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Tried to parse .* not supported by moto", category=UserWarning)
    warnings.filterwarnings("ignore", message="Unable to delete .* as it was never created", category=UserWarning)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://localhost:{server.get_host_and_port()[1]}"
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    with moto_server(args.port) as endpoint:
        print(f"moto server for CDK deploys on {endpoint}. In another shell:\n\n{shell_exports(endpoint)}\n")
        print("Ctrl-C stops it (and forgets everything deployed).", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
