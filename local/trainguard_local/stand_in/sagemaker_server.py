"""Serve a ``SimulatedSageMaker`` over HTTP on 127.0.0.1, speaking SageMaker's JSON 1.1 protocol.

The wire format is ``json_api_server.JsonApiServer``'s (X-Amz-Target ``SageMaker.<Operation>``).

    with SageMakerServer(SimulatedSageMaker()) as server:
        client = boto3.client("sagemaker", endpoint_url=server.endpoint_url, ...)
"""

from __future__ import annotations

from trainguard_local.stand_in.json_api_server import JsonApiServer
from trainguard_local.stand_in.sagemaker_api_model import SAGEMAKER_API
from trainguard_local.stand_in.sagemaker_control_plane import SimulatedSageMaker


class SageMakerServer(JsonApiServer[SimulatedSageMaker]):
    def __init__(self, plane: SimulatedSageMaker, *, port: int = 0, poll_interval: float = 0.01) -> None:
        super().__init__(
            plane, SAGEMAKER_API, port=port, poll_interval=poll_interval, thread_name="simulated-sagemaker"
        )
