"""botocore's SageMaker service model, turned into plain data for the domain core.

The request builder keeps exactly the fields the CreateTrainingJob input accepts; this module
reads that shape from the model installed with boto3, so new API fields carry over by themselves.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import botocore.session
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

_MAX_DEPTH = 12  # SageMaker's training shapes nest about 6 deep; guards against recursive shapes


@cache
def create_training_job_shape(service_model: ServiceModel | None = None) -> dict[str, Any]:
    """The CreateTrainingJob input shape. Pass a SageMaker client's `meta.service_model` to reuse
    the model that client already loaded (it is large); without one, it is loaded once here."""
    model = service_model or botocore.session.get_session().get_service_model("sagemaker")
    return shape_as_data(model.operation_model("CreateTrainingJob").input_shape)


def shape_as_data(shape: Shape, depth: int = 0) -> dict[str, Any]:
    if depth > _MAX_DEPTH:
        return {"type": "opaque"}
    if isinstance(shape, StructureShape):
        return {
            "type": "structure",
            "required": list(shape.required_members),
            "members": {name: shape_as_data(member, depth + 1) for name, member in shape.members.items()},
        }
    if isinstance(shape, ListShape):
        # "min": the API's fewest items (ContainerEntrypoint: 1), so that an empty list is left out, not sent.
        return {"type": "list", "member": shape_as_data(shape.member, depth + 1), "min": shape.metadata.get("min", 0)}
    if isinstance(shape, MapShape):
        return {"type": "map", "value": shape_as_data(shape.value, depth + 1)}
    return {"type": shape.type_name}


@cache
def training_instance_types() -> tuple[str, ...]:
    """The instance types CreateTrainingJob accepts (its TrainingInstanceType enum), as this botocore knows them:
    a type launched after this botocore was released is missing until boto3 is upgraded."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("TrainingInstanceType").enum)
