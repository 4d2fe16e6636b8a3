"""A user's launch with the SageMaker Python SDK (v3, ModelTrainer), run by test_sandbox.py in its own process
with the environment the sandbox printed.

Any connection or name lookup beyond the loopback is refused and recorded, so the test can assert that the
SDK made every call to the sandbox (its STS, S3 and telemetry calls included). Prints one JSON line:
{"blocked": [...]}.

    python sandbox_sdk_client.py BASE_JOB_NAME INSTANCE_TYPE CHECKPOINT_S3_URI SOURCE_DIR

The source directory (with train.py) is uploaded by the SDK to its default bucket, as on AWS.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

LOOPBACK = ("127.0.0.1", "localhost", "::1")
blocked: list[str] = []
_connect, _getaddrinfo = socket.socket.connect, socket.getaddrinfo


def _loopback_connect(self: socket.socket, address: Any) -> None:
    if isinstance(address, tuple) and address[0] not in LOOPBACK:
        blocked.append(f"connect {address[0]}:{address[1]}")
        raise OSError(f"the test allows loopback connections only, not {address}")
    _connect(self, address)


def _loopback_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host not in (*LOOPBACK, None):
        blocked.append(f"lookup {host}")
        raise socket.gaierror(f"the test allows loopback names only, not {host}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _loopback_connect  # type: ignore[method-assign]
socket.getaddrinfo = _loopback_getaddrinfo


def main(base_job_name: str, instance_type: str, checkpoint_uri: str, source_dir: str) -> None:
    from sagemaker.train import ModelTrainer
    from sagemaker.train.configs import CheckpointConfig, Compute, SourceCode, StoppingCondition

    trainer = ModelTrainer(
        training_image="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-gpu-py311",
        role="arn:aws:iam::123456789012:role/TrainingRole",
        base_job_name=base_job_name,
        source_code=SourceCode(source_dir=source_dir, entry_script="train.py"),
        compute=Compute(instance_type=instance_type, instance_count=1),
        stopping_condition=StoppingCondition(max_runtime_in_seconds=2 * 24 * 3600),
        checkpoint_config=CheckpointConfig(s3_uri=checkpoint_uri, local_path="/opt/ml/checkpoints"),
        # SDK v3 validates tags as its own Tag model: lower-case "key" and "value".
        tags=[{"key": "trainguard:enabled", "value": "true"}, {"key": "team", "value": "vision"}],
    )
    trainer.train(wait=False)
    print(json.dumps({"blocked": blocked}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
