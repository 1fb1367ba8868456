"""The object store over an S3 prefix (`storage.py` holds the interface and the local one).

The client honours the usual environment (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`, credentials), so moto
and real AWS both work; a PUT is made visible all at once by S3.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlencode

from inference.store_errors import ConditionFailed, ObjectNotFound

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})  # a HEAD's code is its status: no body
DENIED_CODES = frozenset({"403", "AccessDenied", "Forbidden"})


def make_s3_client() -> S3Client:
    """An S3 client from the environment; path-style addressing when an endpoint (moto) is set."""
    import boto3
    from botocore.config import Config

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    config = Config(
        retries={"max_attempts": 8, "mode": "standard"},
        s3={"addressing_style": "path"} if endpoint else {},
    )
    return boto3.client("s3", endpoint_url=endpoint, config=config)


class S3Store:
    def __init__(self, bucket: str, prefix: str, client: S3Client | None = None) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._client = client

    @property
    def client(self) -> S3Client:
        # Built lazily so that importing or constructing a store never touches the network.
        if self._client is None:
            self._client = make_s3_client()
        return self._client

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def get(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
            return body.read()
        except ClientError as error:
            raise self._why_not(key, error) from None

    def _why_not(self, key: str, error: Exception) -> Exception:
        """What a refused read means. 404: absent. 403: absent too, for a caller that may not list the
        bucket there (S3 hides which keys exist from it: a worker's role lists only under its job); so the
        key is listed, which that role may do: not listed, absent; listed, a real refusal. Else the error."""
        from botocore.exceptions import ClientError

        code = str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))
        where = f"{self.uri}/{key}"
        if code in NOT_FOUND_CODES:
            return ObjectNotFound(where)
        if code not in DENIED_CODES:
            return error
        try:
            listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=self._key(key), MaxKeys=1)
        except ClientError:
            return PermissionError(f"{where}: access denied, and listing it too: this role may not read it")
        if any(item["Key"] == self._key(key) for item in listed.get("Contents", [])):
            return PermissionError(
                f"{where}: access denied (S3 403; the object is there): this role may not read it"
            )
        return ObjectNotFound(where)

    def put(self, key: str, data: bytes, tags: dict[str, str] | None = None) -> None:
        if tags:
            tagging = urlencode(tags)
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, Tagging=tagging)
        else:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def get_versioned(self, key: str) -> tuple[bytes, str]:
        from botocore.exceptions import ClientError

        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as error:
            raise self._why_not(key, error) from None
        return answer["Body"].read(), answer["ETag"]

    def put_if(self, key: str, data: bytes, version: str | None) -> str:
        """S3's conditional PutObject: `If-Match` on the ETag, or `If-None-Match: *`. 412 when it does not
        hold, 409 when another conditional write of the key is in flight: either way another writer won."""
        from botocore.exceptions import ClientError

        bucket, full_key = self.bucket, self._key(key)
        try:
            if version is None:
                answer = self.client.put_object(Bucket=bucket, Key=full_key, Body=data, IfNoneMatch="*")
            else:
                answer = self.client.put_object(Bucket=bucket, Key=full_key, Body=data, IfMatch=version)
        except ClientError as error:
            if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412):
                raise ConditionFailed(f"{self.uri}/{key}: changed since version {version}") from None
            raise
        return answer["ETag"]

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as error:
            why = self._why_not(key, error)
            if isinstance(why, ObjectNotFound):
                return False
            raise why from None
        return True

    def list(self, prefix: str = "") -> list[str]:
        keys: list[str] = []
        strip = len(self.prefix) + 1 if self.prefix else 0
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
            keys.extend(item["Key"][strip:] for item in page.get("Contents", []))
        return sorted(keys)

    def fingerprints(self, prefix: str = "") -> dict[str, str]:
        tags: dict[str, str] = {}
        strip = len(self.prefix) + 1 if self.prefix else 0
        paginator = self.client.get_paginator("list_objects_v2")  # 1,000 keys a request
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self._key(prefix)):
            for item in page.get("Contents", []):
                tags[item["Key"][strip:]] = f"{item['ETag']}@{item['LastModified'].timestamp()}"
        return tags

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def open_read(self, key: str) -> BinaryIO:
        from botocore.exceptions import ClientError

        try:
            size = self.client.head_object(Bucket=self.bucket, Key=self._key(key))["ContentLength"]
        except ClientError as error:
            raise self._why_not(key, error) from None
        reader = _S3RangeReader(self.client, self.bucket, self._key(key), size)
        return io.BufferedReader(reader, buffer_size=1 << 20)


class _S3RangeReader(io.RawIOBase):
    """A seekable read-only file over ranged GETs, so Parquet readers fetch only the row groups they need."""

    def __init__(self, client: Any, bucket: str, key: str, size: int) -> None:
        self._client, self._bucket, self._key, self._size = client, bucket, key, size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._size - self._pos)
        if want <= 0:
            return 0
        byte_range = f"bytes={self._pos}-{self._pos + want - 1}"
        data = self._client.get_object(Bucket=self._bucket, Key=self._key, Range=byte_range)["Body"].read()
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)
