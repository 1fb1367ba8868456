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

import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlparse

from inference.s3_store import S3Store
from inference.store_errors import ConditionFailed, ObjectNotFound


class ObjectStore(Protocol):
    """Keys are '/'-separated paths relative to the store's root URI."""

    @property
    def uri(self) -> str: ...

    def get(self, key: str) -> bytes: ...

    def get_versioned(self, key: str) -> tuple[bytes, str]:
        """The object and its version tag (S3's ETag), read together; `put_if` takes that tag."""
        ...

    def put(self, key: str, data: bytes, tags: dict[str, str] | None = None) -> None: ...

    def put_if(self, key: str, data: bytes, version: str | None) -> str:
        """Write only if the object is still `version` (None: only if there is none); returns the new
        version, or raises `ConditionFailed`. Of two writers that read one version, one wins."""
        ...

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

    def get_versioned(self, key: str) -> tuple[bytes, str]:
        data = self.get(key)
        return data, _content_version(data)

    def put_if(self, key: str, data: bytes, version: str | None) -> str:
        """Compare and rename under an exclusive lock on the folder, the way S3 serializes them. The
        version is the content's hash: a file's inode and time may repeat, its content does not."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            try:
                current: str | None = _content_version(path.read_bytes())
            except FileNotFoundError:
                current = None
            if current != version:
                raise ConditionFailed(
                    f"{self.uri}/{key}: is {current or 'absent'}, not {version or 'absent'}"
                )
            self.put(key, data)
            return _content_version(data)
        finally:
            os.close(folder)  # and the lock with it

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


def _content_version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
