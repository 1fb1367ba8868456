"""One coordinator per job, across machines: a lease object under the job's control prefix, written only with
S3's conditional writes and judged on each reader's own monotonic clock, never by comparing two clocks.

Two coordinators on one job launched every segment twice (a job resumed on a laptop while its coordinator
still ran elsewhere); a second coordinator whose clock ran 60-90 s ahead read a live lease's expiry as past.
So the lease says only who holds it (host, process, run folder, a token) and how often it was renewed (each
renewal's body, so its ETag, differs: S3's ETag is the body's digest): the holder rewrites it every
`term / 3` with `If-Match` on its own ETag, and a reader that sees the object unchanged (the same ETag) for a
whole `term` of its own monotonic clock takes it over with `If-Match` on that ETag, which succeeds only if
nobody renewed or took it meanwhile. A lease held by a process of this host that no longer runs (a
coordinator killed and started again) is taken over at once; so is an object that is not a lease (only the
coordinator's role may write the control prefix: garbage there is damage, not a holder).

The holder fences itself: a renewal refused (412: taken over) or answered "no such key" (the lease was
deleted) stops it at once (`JobLeaseLost` at its next `check()`, before any launch); a renewal that fails for
another reason (the network, S3 busy) is tried again with backoff, and once none has succeeded for
`STOP_AFTER` of the term on the holder's own clock it stops as well: before any reader may take over, since
a reader waits a whole term from its own first look, which came after the holder's last renewal. A second
coordinator that sees the lease renewed or released while it waits refuses to start, in one line naming the
holder it watched (`JobLeaseHeld`). Every field of the lease is parsed as untrusted. AWS S3 and moto 5.2.5
honour both conditions (412 PreconditionFailed; an If-Match on a deleted key answers 404 NoSuchKey).

Usage::

    with JobLease(s3, bucket, lease_key("job-1"), run_dir=run_dir) as lease:   # or JobLeaseHeld
        ...
        lease.check()                  # each cycle: JobLeaseLost once the lease is no longer this one's
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Self

from botocore.exceptions import BotoCoreError, ClientError

from coordinator.background import Background
from coordinator.errors import JobLeaseHeld, JobLeaseLost, UntrustedInput
from coordinator.untrusted import load_json
from inference.layout import JOB_LEASE_KEY, job_prefix

TERM_SECONDS = 90.0  # a coordinator killed elsewhere holds its job this long after its last renewal
STOP_AFTER = 2 / 3  # of a term without a renewal, on the holder's clock: it stops before anyone may take over
FIRST_RETRY_SECONDS = 1.0  # a failed renewal is tried again after this, doubling up to a renewal period
MAX_LEASE_BYTES = 4096
MAX_FIELD = 512  # characters of a host name or a run folder shown from a lease
log = logging.getLogger("coordinator.lease")


def lease_key(job_id: str) -> str:
    """The job's lease in the bucket: under its control prefix, which no worker may write."""
    return f"{job_prefix(job_id)}/{JOB_LEASE_KEY}"


Written = Literal["held", "refused", "gone"]  # a conditional write: done, its condition refused, no object


@dataclass(frozen=True, slots=True)
class Holder:
    """Who a lease names, parsed as untrusted: a lease any process could have written must never stop a
    reader with a traceback."""

    host: str
    pid: int
    run_dir: str
    token: str

    @classmethod
    def parse(cls, data: bytes, where: str) -> Holder | None:
        """The holder, or None when the object is not a lease."""
        try:
            fields = load_json(data, what=where, max_bytes=MAX_LEASE_BYTES)
        except UntrustedInput as refusal:
            log.warning("%s", refusal)
            return None
        if not isinstance(fields, dict):
            return None
        host, pid, run_dir, token = (fields.get(k) for k in ("host", "pid", "run_dir", "token"))
        texts = all(isinstance(v, str) and len(v) <= MAX_FIELD for v in (host, run_dir, token))
        if not texts or type(pid) is not int or not 0 < pid < 2**31:
            log.warning("%s: not a lease (its fields are not a holder's)", where)
            return None
        return cls(str(host), pid, str(run_dir), str(token))

    def __str__(self) -> str:
        return f"process {self.pid} on {self.host} (run folder {self.run_dir})"


class JobLease(Background):
    def __init__(
        self,
        s3: Any,
        bucket: str,
        key: str,
        *,
        run_dir: Path,
        term: float = TERM_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.s3, self.bucket, self.key, self.term, self.clock = s3, bucket, key, term, clock
        self.holder = Holder(socket.gethostname(), os.getpid(), str(run_dir.absolute()), uuid.uuid4().hex)
        self.etag = ""
        self.renewals = 0  # written into the lease: each renewal's body, and so its ETag, differs
        self.lost = ""  # why this coordinator no longer holds the job
        self._renewed = 0.0  # own monotonic time of the last write that held
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="job-lease", daemon=True)

    @property
    def where(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def start(self) -> Self:
        if self._put(IfNoneMatch="*") != "held":
            self._take_over()
        self._renewed = self.clock()
        self._thread.start()
        return self

    def check(self) -> None:
        """Each cycle, before any launch: `JobLeaseLost` once the lease is not this one's, or has not been
        renewed for `STOP_AFTER` of its term (a renewal stuck in a slow call counts too)."""
        if not self.lost and self.clock() - self._renewed > STOP_AFTER * self.term:
            self.lost = self._unrenewed()
        if self.lost:
            raise JobLeaseLost(self.lost)

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.lost or not self.etag:
            return
        try:  # only our own lease: read first, deleted only if it is still the one we wrote
            holder, etag = self._read()
            if holder is not None and holder.token == self.holder.token and etag == self.etag:
                self.s3.delete_object(Bucket=self.bucket, Key=self.key)
        except (ClientError, BotoCoreError) as error:  # it is taken over a term from now anyway
            log.warning("job lease %s not released: %s", self.where, error)

    # -- taking it ------------------------------------------------------------------------------------------

    def _take_over(self) -> None:
        """Another lease is there: take it at once if its holder is gone or it is no lease; else watch it
        for a whole term of this clock and take it if nobody renewed it (`JobLeaseHeld` if somebody did)."""
        holder, etag = self._read()
        if not etag:
            written = self._put(IfNoneMatch="*")  # released just now
        elif holder is None or self._gone(holder):
            written = self._put(IfMatch=etag)
        else:
            log.warning("%s: held by %s; taken over if not renewed for %.0f s", self.where, holder, self.term)
            changed = self._changed_within_a_term(etag)
            if changed:
                raise JobLeaseHeld(
                    f"the job is run by another coordinator: {holder} held its lease ({self.where}) and "
                    f"{changed} while this one watched; stop it first, or run this again once it has stopped "
                    f"(its lease is taken over {self.term:.0f} s after its last renewal)"
                )
            written = self._put(IfMatch=etag)
        if written != "held":
            raise JobLeaseHeld(f"another coordinator took the job's lease ({self.where}) just now")

    def _changed_within_a_term(self, etag: str) -> str:
        """Watch the lease for a whole term of this clock: what its holder did meanwhile ("": nothing, it is
        there to take). A lease released while watched is not taken either: its holder was running the job a
        moment ago, and a run started again after it sees what it left."""
        since = self.clock()
        while self.clock() - since < self.term:
            self._closed.wait(min(self.term / 10, 5.0))
            holder, now = self._read()
            if not now:
                return "released it"
            if now != etag:
                return "renewed it" if holder is not None else "something else overwrote it"
        return ""

    def _gone(self, holder: Holder) -> bool:
        """A lease of a process of this host that no longer runs (a coordinator killed and run again)."""
        return holder.host == self.holder.host and not _running(holder.pid)

    # -- keeping it -----------------------------------------------------------------------------------------

    def _keep(self) -> None:
        """Renew every third of a term; retry a failure with backoff; stop at the first sign of another
        holder, or when no renewal has held for `STOP_AFTER` of the term."""
        period = wait = self.term / 3
        while not self._closed.wait(wait):
            try:
                written = self._put(IfMatch=self.etag)
            except Exception as error:  # the network, S3 busy: again soon, within the term
                if self.clock() - self._renewed > STOP_AFTER * self.term:
                    self._lose(self._unrenewed())
                    return
                wait = min(period, wait * 2 if wait < period else FIRST_RETRY_SECONDS)
                log.warning("job lease %s not renewed (%s); again in %.0f s", self.where, error, wait)
                continue
            if written == "gone":
                self._lose(f"the job's lease ({self.where}) was deleted: this coordinator stops")
                return
            if written == "refused":
                holder, _ = self._read()
                self._lose(
                    f"another coordinator took the job over ({holder or 'a writer'} holds {self.where}): "
                    "this one stops and leaves the job's instances to it"
                )
                return
            self._renewed, wait = self.clock(), period

    def _lose(self, why: str) -> None:
        self.lost = why
        log.error("%s", why)

    def _unrenewed(self) -> str:
        return (
            f"the job's lease ({self.where}) could not be renewed for {self.clock() - self._renewed:.0f} s: "
            "this coordinator stops before another may take the job over"
        )

    # -- S3 -------------------------------------------------------------------------------------------------

    def _put(self, **condition: str) -> Written:
        """Write the lease under `condition`: "refused" if S3 refused the condition (412, or 409 for a write
        racing another), "gone" if an If-Match found no object (404 NoSuchKey)."""
        body = json.dumps({**asdict(self.holder), "renewal": self.renewals + 1}).encode()
        try:
            answer = self.s3.put_object(Bucket=self.bucket, Key=self.key, Body=body, **condition)
        except ClientError as error:
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = error.response.get("Error", {}).get("Code")
            if "IfMatch" in condition and (code == "NoSuchKey" or status == 404):
                return "gone"
            if status in (409, 412):
                return "refused"
            raise
        self.etag, self.renewals = str(answer["ETag"]), self.renewals + 1
        return "held"

    def _read(self) -> tuple[Holder | None, str]:
        """The lease's holder (None: not a lease) and its ETag ("": no lease there)."""
        try:
            answer = self.s3.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None, ""
            raise
        return Holder.parse(answer["Body"].read(), self.where), str(answer["ETag"])


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
