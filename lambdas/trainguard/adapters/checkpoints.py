"""S3: list a job's checkpoint prefix and find the newest object.

IAM: `needs` on read (ListObjectsV2 is authorized as s3:ListBucket), granted on the checkpoint buckets.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import ClientError

from trainguard.adapters.permissions import needs
from trainguard.domain.checkpoint_health import KEPT_TIMES
from trainguard.domain.checkpoints import CheckpointState

MAX_PAGES = 20  # 20,000 objects: enough to find a checkpoint; a bound on cost and time


class CheckpointReader:
    def __init__(self, client: Any) -> None:
        self._client = client

    @needs("s3:ListBucket")
    def read(self, s3_uri: str) -> CheckpointState:
        if not s3_uri:
            return CheckpointState(s3_uri="")
        parsed = urlparse(s3_uri)
        if parsed.scheme != "s3" or not parsed.netloc:
            return CheckpointState(s3_uri=s3_uri, listing_error="not an s3:// URI")
        bucket, prefix = parsed.netloc, parsed.path.lstrip("/")
        times: list[datetime] = []
        count = 0
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        try:
            for _ in range(MAX_PAGES):
                page = self._client.list_objects_v2(**kwargs)
                for item in page.get("Contents", []):
                    count += 1
                    if (modified := item.get("LastModified")) is not None:
                        times.append(modified)
                times = sorted(times)[-KEPT_TIMES:]
                if not page.get("IsTruncated"):
                    return _state(s3_uri, times, count, truncated=False)
                kwargs["ContinuationToken"] = page["NextContinuationToken"]
        except ClientError as err:
            error = err.response.get("Error", {})
            return CheckpointState(s3_uri, listing_error=f"{error.get('Code', 'error')}: {error.get('Message', '')}")
        return _state(s3_uri, times, count, truncated=True)


def _state(s3_uri: str, times: list[datetime], count: int, *, truncated: bool) -> CheckpointState:
    newest = times[-1] if times else None
    return CheckpointState(s3_uri, newest, count, listing_truncated=truncated, object_times=tuple(times))
