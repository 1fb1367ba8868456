"""One coordinator per job, across machines: a lease object in the job's S3 prefix, written only with S3's
conditional writes.

Two coordinators on one job launched every segment twice (a job resumed on a laptop while its coordinator
still ran on a server). The lease is `jobs/<job>/coordinator.lease`: who holds it (host, process, run
folder) and until when. Taking it is a PutObject with `If-None-Match: *` (it succeeds only where there is no
lease); a lease that has run out, or whose holder was this host's process that is gone (a coordinator
killed and started again), is taken over with `If-Match` on the ETag just read (it succeeds only if nobody
took it in between). The holder renews it every third of its term, again with `If-Match` on its own ETag.
A renewal refused means another coordinator has taken the job over: this one stops launching and leaves
the instances to it (`JobLeaseLost`). A second coordinator refuses to start, in one line naming the holder
and when its lease runs out (`JobLeaseHeld`). AWS S3 honours both conditions (412 PreconditionFailed); so
does moto 5.2.5, which the tests use.

Usage::

    with JobLease(s3, bucket, "jobs/job-1/coordinator.lease", run_dir=run_dir) as lease:  # or JobLeaseHeld
        ...
        lease.check()                  # each cycle: JobLeaseLost once another coordinator took over
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Self

from botocore.exceptions import ClientError

from coordinator.background import Background
from coordinator.errors import JobLeaseHeld, JobLeaseLost, UntrustedInput
from coordinator.stack.permissions import JOB_LEASE
from coordinator.untrusted import load_json

LEASE_NAME = JOB_LEASE  # the coordinator's policy lets it write and delete this object of a job, no other
TERM_SECONDS = 90.0  # wall: a coordinator killed elsewhere holds its job this long at most
log = logging.getLogger("coordinator.lease")


class JobLease(Background):
    def __init__(self, s3: Any, bucket: str, key: str, *, run_dir: Path, term: float = TERM_SECONDS) -> None:
        self.s3, self.bucket, self.key, self.term = s3, bucket, key, term
        self.holder = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "run_dir": str(run_dir.absolute()),
            "token": uuid.uuid4().hex,
        }
        self.etag = ""
        self.lost = ""  # why, once another coordinator took the job over
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="job-lease", daemon=True)

    @property
    def where(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def start(self) -> Self:
        if not self._put(IfNoneMatch="*"):
            found, etag = self._read()
            if found is not None and not self._may_take(found):
                until = time.strftime("%H:%M:%S UTC", time.gmtime(float(found.get("expires_at", 0))))
                raise JobLeaseHeld(
                    f"the job is run by another coordinator: {_who(found)} holds its lease ({self.where}) "
                    f"until {until}, renewed while it runs; stop it first, or resume after then"
                )
            taken = self._put(IfMatch=etag) if etag else self._put(IfNoneMatch="*")  # "": it just went
            if not taken:
                raise JobLeaseHeld(f"another coordinator took the job's lease ({self.where}) just now")
        self._thread.start()
        return self

    def check(self) -> None:
        if self.lost:
            raise JobLeaseLost(self.lost)

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.lost or not self.etag:
            return
        try:  # only our own lease: a delete conditional on its ETag where S3 offers it, else read first
            found, etag = self._read()
            if found is not None and found.get("token") == self.holder["token"] and etag == self.etag:
                self.s3.delete_object(Bucket=self.bucket, Key=self.key)
        except ClientError as error:  # it runs out by itself
            log.warning("job lease %s not released: %s", self.where, error)

    def _keep(self) -> None:
        while not self._closed.wait(self.term / 3):
            try:
                if not self._put(IfMatch=self.etag):
                    found, _ = self._read()
                    self.lost = (
                        f"another coordinator took the job over ({_who(found or {})} holds {self.where}): "
                        "this one stops and leaves the job's instances to it"
                    )
                    log.error("%s", self.lost)
                    return
            except ClientError as error:  # S3 busy: try again next time, well within the term
                log.warning("job lease %s not renewed: %s", self.where, error)

    def _put(self, **condition: str) -> bool:
        """Write the lease under `condition`; False if S3 refused it (412: the condition does not hold)."""
        body = json.dumps({**self.holder, "expires_at": time.time() + self.term}).encode()
        try:
            answer = self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=body, **condition)
        except ClientError as error:
            if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") in (409, 412):
                return False  # 409: a conditional write racing another on the same key
            raise
        self.etag = str(answer["ETag"])
        return True

    def _read(self) -> tuple[dict[str, Any] | None, str]:
        try:
            answer = self.s3.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None, ""
            raise
        etag, data = str(answer["ETag"]), answer["Body"].read()
        try:
            found = load_json(data, what=self.where, max_bytes=4096)
        except UntrustedInput as refusal:  # not a lease: whoever wrote it, it is taken over
            log.warning("%s; taken over", refusal)
            return {}, etag
        return (found if isinstance(found, dict) else {}), etag

    def _may_take(self, found: dict[str, Any]) -> bool:
        """A lease that ran out, is not one, or is held by this host's process that no longer runs."""
        expires = found.get("expires_at")
        if not isinstance(expires, (int, float)) or expires < time.time():
            return True
        pid = found.get("pid")
        return found.get("host") == self.holder["host"] and isinstance(pid, int) and not _running(pid)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _who(found: dict[str, Any]) -> str:
    return f"process {found.get('pid')} on {found.get('host')} (run folder {found.get('run_dir')})"
