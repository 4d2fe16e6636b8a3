"""Several accounts and regions behind one simulated endpoint, as AWS serves them: each request is answered by the
plane (simulated SageMaker, simulated Service Quotas) of the account and region it is signed for.

A request's SigV4 `Authorization` header names its access key and its region in the credential scope
(`Credential=<access key>/<date>/<region>/<service>/aws4_request`:
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html). The account is the
one moto gave that access key: its own default account for the stand-in's static keys, the role's account for
the credentials of an STS AssumeRole (moto.iam.models.get_account_id_from), as moto answers its own services.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from trainguard.domain.origin import Location
from trainguard_local.stand_in.json_api import ApiError
from trainguard_local.stand_in.json_api_server import JsonApiPlane

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([a-z0-9-]+)/")
PlaneT = TypeVar("PlaneT", bound=JsonApiPlane)


def signed_for(authorization: str) -> Location:
    """The account and region a SigV4-signed request acts in."""
    from moto.iam.models import get_account_id_from

    found = _CREDENTIAL.search(authorization)
    if found is None:
        raise ApiError("MissingAuthenticationTokenException", "The request is not signed with SigV4.")
    access_key, region = found.groups()
    return Location(get_account_id_from(access_key), region)


class PlanesByPlace(Generic[PlaneT]):
    """One plane per account and region. A request signed for anywhere else is refused as AWS refuses a call
    to a region where the account has nothing (here: no stand-in was made there)."""

    def __init__(self, planes: Mapping[Location, PlaneT]) -> None:
        self.planes = dict(planes)

    def for_request(self, authorization: str) -> PlaneT:
        place = signed_for(authorization)
        if place not in self.planes:
            raise ApiError("UnrecognizedClientException", f"The stand-in has no {place}.")
        return self.planes[place]

    def handle(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        raise ApiError("MissingAuthenticationTokenException", "Which account and region: the request is not signed.")
