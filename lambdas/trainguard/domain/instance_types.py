"""GPUs per SageMaker training instance: GPUUtilization runs from 0 to 100 x this count (docs/aws-facts.md).

Counts from the EC2 accelerated computing specifications (https://docs.aws.amazon.com/ec2/latest/
instancetypes/ac.html), cross-checked with a public table by an AWS author
(https://gist.github.com/shashankprasanna/10ebe6dc1ba1d8d93db17da4e2cc890e). A type not listed has
no known count; callers then treat a host as one GPU, which only makes "idle" harder to reach.
Trainium and Inferentia hosts report no GPUUtilization at all.
"""

from __future__ import annotations

_GPUS: dict[str, int] = {
    **dict.fromkeys(["p3.2xlarge"], 1),
    **dict.fromkeys(["p3.8xlarge"], 4),
    **dict.fromkeys(["p3.16xlarge", "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge"], 8),
    **dict.fromkeys(["p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"], 8),
    **dict.fromkeys([f"g4dn.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")], 1),
    "g4dn.12xlarge": 4,
    **dict.fromkeys(
        [f"{f}.{s}" for f in ("g5", "g6", "g6e") for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")], 1
    ),
    **dict.fromkeys([f"{f}.{s}" for f in ("g5", "g6", "g6e") for s in ("12xlarge", "24xlarge")], 4),
    **dict.fromkeys([f"{f}.48xlarge" for f in ("g5", "g6", "g6e")], 8),
}


def gpus_per_host(instance_type: str) -> int | None:
    """GPUs on one host of `instance_type` ('ml.p4d.24xlarge' or 'p4d.24xlarge'), or None if unknown."""
    return _GPUS.get(instance_type.removeprefix("ml."))
