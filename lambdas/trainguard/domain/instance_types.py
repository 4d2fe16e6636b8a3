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
    **dict.fromkeys(["p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"], 8),
    "p5.4xlarge": 1,
    **dict.fromkeys([f"g4dn.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")], 1),
    "g4dn.12xlarge": 4,
    **dict.fromkeys(
        [f"{f}.{s}" for f in ("g5", "g6", "g6e") for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")], 1
    ),
    **dict.fromkeys([f"{f}.{s}" for f in ("g5", "g6", "g6e") for s in ("12xlarge", "24xlarge")], 4),
    **dict.fromkeys([f"{f}.48xlarge" for f in ("g5", "g6", "g6e")], 8),
}


# Trainium chips per host (the same EC2 page, "Trn1", "Trn2"): accelerators, but no GPUUtilization.
_TRAINIUM: dict[str, int] = {"trn1.2xlarge": 1, "trn1.32xlarge": 16, "trn1n.32xlarge": 16, "trn2.48xlarge": 16}
# General purpose, compute and memory optimized families: no accelerator at any size
# (https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html, co.html, mo.html).
_NO_ACCELERATOR_FAMILIES = frozenset(
    {"m4", "m5", "m5d", "m6i", "m6id", "m7i", "c4", "c5", "c5d", "c5n", "c6i", "c6id", "c6in", "c7i"}
    | {"r5", "r5d", "r6i", "r6id", "r7i", "t2", "t3"}
)


def gpus_per_host(instance_type: str) -> int | None:
    """GPUs on one host of `instance_type` ('ml.p4d.24xlarge' or 'p4d.24xlarge'), or None if unknown."""
    return _GPUS.get(instance_type.removeprefix("ml."))


def accelerators_per_host(instance_type: str) -> int | None:
    """GPUs or Trainium chips on one host (0 for a CPU family), or None when trainguard does not know: the bound on
    what a fallback may launch counts these, and refuses a type it cannot count."""
    name = instance_type.removeprefix("ml.")
    if name in _GPUS:
        return _GPUS[name]
    if name in _TRAINIUM:
        return _TRAINIUM[name]
    family = name.split(".", 1)[0]
    return 0 if family in _NO_ACCELERATOR_FAMILIES and "." in name else None
