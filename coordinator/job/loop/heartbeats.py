"""Heartbeats read by change: one listing of the job's heartbeat objects per cycle, then only the objects
whose fingerprint (S3's ETag and LastModified) moved since the last cycle are fetched, several at a time.

A cycle over 1,000 steady segments whose workers beat every 30 s costs one or two ListObjectsV2 requests
and the GETs of the ~1/6 that beat since the last 5-s cycle, instead of 1,000 GETs one after another.

Usage::

    reader = HeartbeatReader(store)
    beats = reader.changed(["seg-0001", "seg-0002"])   # segment id -> its heartbeat, only those that changed
    reader.requests                                      # lists and gets made so far
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Any, get_args

from botocore.exceptions import BotoCoreError, ClientError

from coordinator.errors import ThrottledError, UntrustedInput
from coordinator.job.aws import raise_for_setup
from coordinator.untrusted import load_json
from inference.heartbeat import Heartbeat, HeartbeatState
from inference.layout import heartbeat_key
from inference.storage import ObjectStore
from inference.store_errors import ObjectNotFound

HEARTBEATS_PREFIX = heartbeat_key("").rsplit("/", 1)[0] + "/"
MAX_HEARTBEAT_BYTES = 16 * 1024  # a worker's is a few hundred bytes; its message is cut at 2,000 characters
BEAT_STATES = frozenset(get_args(HeartbeatState))
HEARTBEAT_FIELDS: dict[str, tuple[type, ...]] = {  # each field of a heartbeat, and the JSON types it may be
    f.name: (int, float) if f.type in ("float", float) else ((int,) if f.type in ("int", int) else (str,))
    for f in fields(Heartbeat)
}
FETCHERS = 16  # GETs in flight at once: S3 serves thousands a second per prefix
log = logging.getLogger(__name__)


@dataclass(slots=True)
class RequestCount:
    lists: int = 0
    gets: int = 0


def parse_heartbeat(segment_id: str, data: bytes) -> Heartbeat | None:
    """The heartbeat object of `segment_id`, or None (logged) when it is not one a worker of this segment
    writes: not UTF-8, not JSON, nested, huge, a number not finite or of more than 20 digits (`load_json`
    refuses both), a field of the wrong type or negative, more rows done than it has, a state no worker
    sends (its rows are checked against the segment's by the monitor). Its `ts` is the worker's clock's
    and may be anything finite: no age is read from it (`monitor`)."""
    try:
        document = load_json(data, what=f"heartbeat of {segment_id}", max_bytes=MAX_HEARTBEAT_BYTES)
        return _heartbeat_of(segment_id, document)
    except UntrustedInput as refusal:  # a torn, foreign or forged object: as if there were no beat
        log.warning("%s; ignored", refusal)
        return None


def _heartbeat_of(segment_id: str, document: Any) -> Heartbeat:
    what = f"heartbeat of {segment_id}"
    if not isinstance(document, dict):
        raise UntrustedInput(f"{what}: {type(document).__name__}, not an object")
    values: dict[str, Any] = {}
    for name, kind in HEARTBEAT_FIELDS.items():
        if name not in document:
            continue  # the dataclass's default, or its TypeError below for a required one
        value = document[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise UntrustedInput(
                f"{what}: {name} {value!r:.40} is not {' or '.join(k.__name__ for k in kind)}"
            )
        if isinstance(value, int | float) and value < 0:
            raise UntrustedInput(f"{what}: {name} {value} is negative")
        values[name] = value
    if values.get("state", "running") not in BEAT_STATES:
        raise UntrustedInput(f"{what}: state {values['state']!r:.40} is not one a worker sends")
    if values.get("segment_id") != segment_id:
        raise UntrustedInput(f"{what}: it names segment {values.get('segment_id')!r:.40}")
    if values.get("rows_done", 0) > values.get("rows_total", 0):
        raise UntrustedInput(f"{what}: rows_done {values['rows_done']} is more than rows_total")
    try:
        return Heartbeat(**values)
    except TypeError as error:
        raise UntrustedInput(f"{what}: {error}") from None


def read_heartbeat(store: ObjectStore, segment_id: str) -> Heartbeat | None:
    """One segment's heartbeat object as it is now (None when there is none)."""
    try:
        data = store.get(heartbeat_key(segment_id))
    except ObjectNotFound:
        return None
    return parse_heartbeat(segment_id, data)


class HeartbeatReader:
    def __init__(self, store: ObjectStore, *, fetchers: int = FETCHERS) -> None:
        self.store = store
        self.fetchers = fetchers
        self.requests = RequestCount()
        self._seen: dict[str, str] = {}  # segment id -> fingerprint of the object last fetched
        self._pool: ThreadPoolExecutor | None = None  # made once: 16 threads a cycle cost 13 ms at 1,000

    def changed(self, segment_ids: Iterable[str]) -> dict[str, Heartbeat]:
        """The heartbeats of `segment_ids` whose objects changed since this reader last fetched them."""
        wanted = set(segment_ids)
        if not wanted:
            return {}
        try:
            listing = self.store.fingerprints(HEARTBEATS_PREFIX)
        except ClientError as error:  # denied: the job stops with what to grant; else look next cycle
            raise_for_setup(error, "s3", "listing the job's heartbeats")
            raise ThrottledError(
                f"listing the job's heartbeats: {error}", [f"ListObjectsV2: {error}"]
            ) from None
        except BotoCoreError as error:  # a reset connection, an unparsable answer: look again next cycle
            raise ThrottledError(f"listing the job's heartbeats: {error}", [type(error).__name__]) from None
        self.requests.lists += 1 + len(listing) // 1000  # ListObjectsV2 returns 1,000 keys a page
        moved = {}
        for segment_id in sorted(wanted):
            tag = listing.get(heartbeat_key(segment_id))
            if tag is not None and self._seen.get(segment_id) != tag:
                moved[segment_id] = tag
        fetched = self._fetch(list(moved))
        beats = {}
        for segment_id, beat in fetched.items():
            self._seen[segment_id] = moved[segment_id]
            if beat is not None:
                beats[segment_id] = beat
        return beats

    def _fetch(self, segment_ids: list[str]) -> dict[str, Heartbeat | None]:
        self.requests.gets += len(segment_ids)
        if len(segment_ids) <= 1:
            return {s: read_heartbeat(self.store, s) for s in segment_ids}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.fetchers, thread_name_prefix="heartbeats")
        beats = self._pool.map(lambda segment_id: read_heartbeat(self.store, segment_id), segment_ids)
        return dict(zip(segment_ids, beats, strict=True))

    def close(self) -> None:
        """Stop the fetching threads (a reader used again starts them again)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
