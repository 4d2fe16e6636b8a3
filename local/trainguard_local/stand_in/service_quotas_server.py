"""Serve a ``SimulatedServiceQuotas`` over HTTP on 127.0.0.1 (X-Amz-Target ``ServiceQuotasV20190624.<Op>``).

Production code reaches it through an ordinary boto3 ``service-quotas`` client with only the endpoint
changed: ``AWS_ENDPOINT_URL_SERVICE_QUOTAS=<endpoint_url>`` (botocore's per-service variable for the
service id "Service Quotas"), or ``endpoint_url=``.

    with ServiceQuotasServer(SimulatedServiceQuotas()) as server:
        client = boto3.client("service-quotas", endpoint_url=server.endpoint_url, ...)
"""

from __future__ import annotations

from trainguard_local.stand_in.json_api_server import JsonApiServer
from trainguard_local.stand_in.service_quotas import SimulatedServiceQuotas
from trainguard_local.stand_in.service_quotas_catalogue import SERVICE_QUOTAS_API

ENDPOINT_VARIABLE = "AWS_ENDPOINT_URL_SERVICE_QUOTAS"


class ServiceQuotasServer(JsonApiServer[SimulatedServiceQuotas]):
    def __init__(self, plane: SimulatedServiceQuotas, *, port: int = 0, poll_interval: float = 0.01) -> None:
        super().__init__(
            plane,
            SERVICE_QUOTAS_API,
            port=port,
            poll_interval=poll_interval,
            thread_name="simulated-service-quotas",
        )
