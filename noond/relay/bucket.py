"""A relay in an S3-compatible bucket (AWS, R2, MinIO, Ceph, SeaweedFS), through boto3.

Credentials, region and endpoint come from the standard AWS chain (environment, shared files,
instance roles; ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` included), unless the relay's
URL names a region or endpoint. Every call has a bounded connect and read timeout and a bounded
number of retries; the relay runs calls in threads, never on the event loop."""

from __future__ import annotations

import logging
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from noond.relay.backend import Conflict, Entry, Missing, RelayDown, TooLarge
from noond.relay.seal import ROOT

for _chatty in ("botocore", "boto3", "urllib3", "s3transfer"):
    # Their DEBUG lines hold every request and answer whole: never noond's journal.
    logging.getLogger(_chatty).setLevel(logging.WARNING)

TIMEOUT = 10.0
ATTEMPTS = 3


class Bucket:
    def __init__(
        self,
        url: str,
        bucket: str,
        prefix: str,
        *,
        region: str | None,
        endpoint: str | None,
        path_style: bool,
        timeout: float = TIMEOUT,
    ) -> None:
        self.url = url
        self.bucket = bucket
        self.root = f"{prefix}/{ROOT}" if prefix else ROOT
        config = Config(
            connect_timeout=timeout,
            read_timeout=timeout,
            retries={"max_attempts": ATTEMPTS, "mode": "standard"},
            s3={"addressing_style": "path" if path_style else "auto"},
            max_pool_connections=16,
        )
        session = boto3.session.Session()
        self.s3: Any = session.client(
            "s3",
            region_name=region or session.region_name or "us-east-1",
            endpoint_url=endpoint or None,
            config=config,
        )

    def _call(self, what: str, fn: Any, **kwargs: Any) -> Any:
        try:
            return fn(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("NoSuchKey", "404", "NotFound") or status == 404:
                raise Missing(f"{what}: not found") from None
            if code in ("PreconditionFailed", "ConditionalRequestConflict") or status in (409, 412):
                raise Conflict(f"{what}: changed since it was read") from None
            raise RelayDown(f"{what}: {code or status}: {exc}") from None
        except BotoCoreError as exc:
            raise RelayDown(f"{what}: {exc}") from None

    def list(self) -> list[Entry]:
        out: list[Entry] = []
        token: str | None = None
        while True:
            extra = {"ContinuationToken": token} if token else {}
            page = self._call("list", self.s3.list_objects_v2, Prefix=self.root, **extra)
            for obj in page.get("Contents", []):
                name = str(obj["Key"])[len(self.root) :]
                out.append(Entry(name, int(obj["Size"]), str(obj.get("ETag", ""))))
            if not page.get("IsTruncated"):
                return out
            token = page.get("NextContinuationToken")

    def get(self, name: str, limit: int) -> bytes:
        answer = self._call(name, self.s3.get_object, Key=self.root + name)
        body = answer["Body"]
        try:
            if int(answer.get("ContentLength", 0)) > limit:
                raise TooLarge(f"{name} holds {answer['ContentLength']} bytes, more than {limit}")
            data = bytes(body.read(limit + 1))
        except (BotoCoreError, OSError) as exc:
            if isinstance(exc, TooLarge):
                raise
            raise RelayDown(f"{name}: {exc}") from None
        finally:
            body.close()
        if len(data) > limit:
            raise TooLarge(f"{name} holds more than {limit} bytes")
        return data

    def put(self, name: str, body: bytes) -> None:
        self._call(name, self.s3.put_object, Key=self.root + name, Body=body)

    def put_head(self, name: str, body: bytes, expect: str | None) -> str:
        condition = {"IfMatch": expect} if expect is not None else {"IfNoneMatch": "*"}
        answer = self._call(name, self.s3.put_object, Key=self.root + name, Body=body, **condition)
        return str(answer.get("ETag", ""))

    def delete(self, name: str) -> None:
        self._call(name, self.s3.delete_object, Key=self.root + name)
