"""The client side of the sandbox's control API: ``trainguard sandbox inject JOB FAULT``.

The ``trainguard`` command imports this module lazily (it is not in the Lambda asset), so it imports
nothing but the standard library: a JSON POST to ``<endpoint>/_sandbox/inject`` on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlparse

FAULTS = ("hang", "internal-error", "capacity", "quota")
DEFAULT_PORT = 5005
DEFAULT_ENDPOINT = f"http://127.0.0.1:{DEFAULT_PORT}"
CONTROL_PREFIX = "/_sandbox/"  # '_' cannot start an S3 bucket name, so no path-style S3 request is taken
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class SandboxUnreachable(ValueError):
    """No sandbox answered, or it refused the request; the message is the one line the user sees."""


def sandbox_endpoint(explicit: str | None = None) -> str:
    """``--endpoint-url``, else $AWS_ENDPOINT_URL (what the sandbox told the user to export), else the default."""
    endpoint = (explicit or os.environ.get("AWS_ENDPOINT_URL") or DEFAULT_ENDPOINT).rstrip("/")
    if urlparse(endpoint).hostname not in LOOPBACK_HOSTS:
        raise SandboxUnreachable(f"{endpoint} is not a local sandbox (it listens on 127.0.0.1 only)")
    return endpoint


def inject(endpoint: str, job: str, fault: str) -> dict[str, Any]:
    """Ask the sandbox at ``endpoint`` to inject ``fault`` into ``job``; its answer, as JSON."""
    return call(endpoint, "inject", {"job": job, "fault": fault})


def call(endpoint: str, action: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST (with a payload) or GET ``<endpoint>/_sandbox/<action>``; the JSON answer, or SandboxUnreachable."""
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        f"{endpoint}{CONTROL_PREFIX}{action}", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as err:
        answer = _json_or_empty(err.read())
        raise SandboxUnreachable(str(answer.get("error") or f"HTTP {err.code} from {endpoint}")) from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as err:
        reason = getattr(err, "reason", err)
        raise SandboxUnreachable(f"no sandbox at {endpoint} ({reason}); start one with `make sandbox`") from None


def run_inject(args: argparse.Namespace) -> dict[str, Any]:
    return inject(sandbox_endpoint(args.endpoint_url), args.job, args.fault)


def inject_text(answer: dict[str, Any]) -> str:
    return f"{answer['job']}: {answer['fault']} injected. {answer['effect']}"


def _json_or_empty(body: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(body)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}
