"""Launch examples/train.py on SageMaker with the SDK v3's ModelTrainer, opted in to trainguard.

    pip install '.[sdk]'
    python examples/launch.py --dry-run      # no AWS account: prints the CreateTrainingJob request
    python examples/launch.py --role arn:aws:iam::123456789012:role/TrainingRole \\
        --checkpoint-s3-uri s3://my-bucket/checkpoints/llama-pretrain-0001/

The trainguard part is two lines: `GuardSettings(...)` (checked as the guard will read it) and
`**model_trainer_arguments(guard)` (the tags and the CheckpointConfig). The rest is an ordinary launch.
Give each run its own checkpoint prefix: a relaunch resumes from whatever is newest there.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trainguard_sdk import GuardSettings, model_trainer_arguments
from trainguard_sdk.offline import OfflineAws, offline_session

EXAMPLES = Path(__file__).resolve().parent
PLACEHOLDER_ROLE = "arn:aws:iam::123456789012:role/TrainingRole"


def build_trainer(args: argparse.Namespace, session: Any) -> Any:
    from sagemaker.core.training.configs import Compute, SourceCode, StoppingCondition
    from sagemaker.train.distributed import Torchrun
    from sagemaker.train.model_trainer import ModelTrainer

    guard = GuardSettings(
        checkpoint_s3_uri=args.checkpoint_s3_uri,
        max_retries=args.max_retries,
        stall_minutes=args.stall_minutes,
    )
    return ModelTrainer(
        sagemaker_session=session,
        role=args.role,
        training_image=args.image_uri or default_image(args),
        base_job_name=args.base_job_name,
        source_code=SourceCode(source_dir=str(EXAMPLES), entry_script="train.py"),
        distributed=Torchrun(),  # one process per GPU on every instance, under torchrun
        compute=Compute(instance_type=args.instance_type, instance_count=args.instance_count),
        stopping_condition=StoppingCondition(max_runtime_in_seconds=int(args.max_runtime_hours * 3600)),
        # Passed to train.py as --steps ... --checkpoint-dir ...
        hyperparameters={"steps": args.steps, "checkpoint-dir": guard.checkpoint_local_path},
        **model_trainer_arguments(guard, extra_tags={"project": "trainguard-example"}),
    )


def default_image(args: argparse.Namespace) -> str:
    """The SDK's PyTorch training image for the region and instance type (read from the SDK, no AWS call)."""
    from sagemaker.core import image_uris

    return str(
        image_uris.retrieve(
            framework="pytorch",
            region=args.region,
            version="2.8",
            py_version="py312",
            instance_type=args.instance_type,
            image_scope="training",
        )
    )


def dry_run(args: argparse.Namespace) -> dict[str, Any]:
    """The CreateTrainingJob request, as the SDK would send it; every AWS call answered locally."""
    bucket = args.checkpoint_s3_uri.removeprefix("s3://").split("/")[0]
    aws = OfflineAws(bucket=bucket, region=args.region)
    with offline_session(aws) as session:
        build_trainer(args, session).train(wait=False, logs=False)
    return aws.create_training_job_requests[-1]


def launch(args: argparse.Namespace) -> str:
    import boto3
    from sagemaker.core.helper.session_helper import Session

    trainer = build_trainer(args, Session(boto_session=boto3.session.Session(region_name=args.region)))
    trainer.train(wait=False, logs=False)
    return str(trainer._latest_training_job.training_job_name)  # the SDK keeps the job it created here


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the CreateTrainingJob request; call no AWS")
    parser.add_argument("--role", help="the job's execution role ARN (required unless --dry-run)")
    parser.add_argument("--checkpoint-s3-uri", help="s3://bucket/prefix/ for this run (required unless --dry-run)")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--base-job-name", default="trainguard-example")
    parser.add_argument("--image-uri", help="default: the SDK's PyTorch 2.8 training image")
    parser.add_argument("--instance-type", default="ml.g5.xlarge")
    parser.add_argument("--instance-count", type=int, default=2)
    parser.add_argument("--max-runtime-hours", type=float, default=24.0)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--max-retries", type=int, default=2, help="trainguard:max-retries (0-20)")
    parser.add_argument("--stall-minutes", type=int, help="trainguard:stall-minutes (5-1440)")
    args = parser.parse_args(argv)
    if args.dry_run:
        args.role = args.role or PLACEHOLDER_ROLE
        args.checkpoint_s3_uri = args.checkpoint_s3_uri or f"s3://my-bucket/checkpoints/{args.base_job_name}/"
    elif not (args.role and args.checkpoint_s3_uri):
        parser.error("--role and --checkpoint-s3-uri are required to launch (or pass --dry-run)")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.dry_run:
        print(json.dumps(dry_run(args), indent=2, default=str))
    else:
        print(f"launched {launch(args)}", file=sys.stderr)


if __name__ == "__main__":
    main()
