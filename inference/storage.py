"""Object storage behind one small interface: a local directory or an S3 prefix.

Usage::

    store = open_store("s3://bucket/jobs/job-1")     # or "/tmp/out", or "file:///tmp/out"
    store.put("checkpoints/seg-0001.json", b"{...}")
    store.get("checkpoints/seg-0001.json")

Writes are atomic: a local write goes to a temporary file in the same directory and is renamed over the
target; an S3 write is a single PUT, which S3 makes visible all at once. The S3 client honours the usual
environment (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`, credentials), so moto and real AWS both work.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol
from urllib.parse import urlencode, urlparse

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


class ObjectNotFound(KeyError):
    """The key does not exist in the store."""


NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})  # a HEAD's code is its status: no body
DENIED_CODES = frozenset({"403", "AccessDenied", "Forbidden"})


class ObjectStore(Protocol):
    """Keys are '/'-separated paths relative to the store's root URI."""

    @property
    def uri(self) -> str: ...

    def get(self, key: str) -> bytes: ...

    def put(self, key: str, data: bytes, tags: dict[str, str] | None = None) -> None: ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str = "") -> list[str]: ...

    def fingerprints(self, prefix: str = "") -> dict[str, str]:
        """Each key under `prefix` with a tag that changes whenever the object is rewritten (S3's ETag; a
        local file's modification time and size): one listing tells what changed without reading it."""
        ...

    def delete(self, key: str) -> None: ...

    def open_read(self, key: str) -> BinaryIO: ...


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def uri(self) -> str:
        return str(self.root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"key {key!r} escapes the store root {self.root}")
        return path

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise ObjectNotFound(f"{self.uri}/{key}") from None

    def put(self, key: str, data: bytes, tags: dict[str, str] | None = None) -> None:
        """`tags` are S3 object tags (lifecycle rules use them); a directory has none and ignores them."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str = "") -> list[str]:
        if not self.root.exists():
            return []
        keys = []
        for path in self.root.rglob("*"):
            if path.is_file() and not path.name.endswith(".tmp"):
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    keys.append(key)
        return sorted(keys)

    def fingerprints(self, prefix: str = "") -> dict[str, str]:
        tags = {}
        for key in self.list(prefix):
            try:
                stat = self._path(key).stat()
            except FileNotFoundError:  # removed since the listing
                continue
            tags[key] = f"{stat.st_ino}-{stat.st_mtime_ns}-{stat.st_size}"  # each write is a new file
        return tags

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def open_read(self, key: str) -> BinaryIO:
        try:
            return self._path(key).open("rb")
        except FileNotFoundError:
            raise ObjectNotFound(f"{self.uri}/{key}") from None


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


def split_uri(uri: str) -> tuple[str, str]:
    """'s3://b/data/x.parquet' -> ('s3://b/data', 'x.parquet'); works for local paths too."""
    parent, _, name = uri.rstrip("/").rpartition("/")
    if not name:
        raise ValueError(f"{uri!r} names no object")
    return parent or ".", name


def open_store(uri: str) -> ObjectStore:
    """The store rooted at a URI: `s3://bucket[/prefix]`, `file:///path` or a plain path."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ValueError(f"{uri!r}: an S3 URI needs a bucket, as in s3://bucket/prefix")
        return S3Store(parsed.netloc, parsed.path)
    if parsed.scheme == "file":
        return LocalStore(Path(parsed.path))
    if parsed.scheme in ("", None) or len(parsed.scheme) == 1:  # plain path (or a Windows drive letter)
        return LocalStore(Path(uri))
    raise ValueError(f"{uri!r}: unsupported storage scheme {parsed.scheme!r} (use s3://, file:// or a path)")
