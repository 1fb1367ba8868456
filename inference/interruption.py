"""Stop requests: the EC2 spot interruption notice (IMDSv2) and SIGTERM, both setting one event.

The worker checks `StopSignal.requested` after every batch; on a stop it finishes that batch, writes its
part and checkpoint, heartbeats `draining` and exits 0.

IMDSv2: PUT `/latest/api/token` (with a TTL header) gives a token; GET
`/latest/meta-data/spot/instance-action` with that token answers 404 until AWS schedules the interruption,
then 200 with `{"action": "terminate", "time": "..."}`. The endpoint is `$AWS_EC2_METADATA_SERVICE_ENDPOINT`
(the simulator gives each instance its own), else the link-local address of a real instance.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

import requests

DEFAULT_METADATA_ENDPOINT = "http://169.254.169.254"
METADATA_ENDPOINT_ENV = "AWS_EC2_METADATA_SERVICE_ENDPOINT"
TOKEN_TTL_SECONDS = 21_600  # the IMDSv2 maximum; the poller renews on 401 anyway
NOTICE_POLL_SECONDS = 1.0  # AWS suggests every 5 s; 1 s costs nothing on a link-local call and wins 4 s
REQUEST_TIMEOUT_SECONDS = 1.0  # IMDS answers in milliseconds; off EC2 the first call fails fast
UNREACHABLE_LIMIT = 3  # consecutive connection failures before the poller decides it is not on EC2

log = logging.getLogger(__name__)


class StopSignal:
    """One event for every reason to stop; the first reason is kept for the log."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def request(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)

    def install_sigterm_handler(self) -> None:
        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            self.request("SIGTERM")

        signal.signal(signal.SIGTERM, on_sigterm)


class MetadataClient:
    """The two IMDSv2 calls the worker needs."""

    def __init__(self, endpoint: str, session: requests.Session | None = None) -> None:
        self.base = endpoint.rstrip("/")
        self.session = session or requests.Session()
        self._token: str | None = None

    def _fetch_token(self) -> str:
        response = self.session.put(
            f"{self.base}/latest/api/token",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL_SECONDS)},
            timeout=REQUEST_TIMEOUT_SECONDS,
        )
        response.raise_for_status()
        return response.text

    def instance_action(self) -> str | None:
        """The notice body, or None while there is no notice (404)."""
        for _ in range(2):
            if self._token is None:
                self._token = self._fetch_token()
            response = self.session.get(
                f"{self.base}/latest/meta-data/spot/instance-action",
                headers={"X-aws-ec2-metadata-token": self._token},
                timeout=REQUEST_TIMEOUT_SECONDS,
            )
            if response.status_code == 401:  # token expired: fetch a new one once
                self._token = None
                continue
            if response.status_code == 404:
                return None
            response.raise_for_status()
            return response.text
        raise requests.HTTPError("IMDS refused two fresh tokens")


class NoticePoller(threading.Thread):
    """Polls the interruption notice in the background and requests a stop when one appears."""

    def __init__(self, stop: StopSignal, client: MetadataClient, every: float = NOTICE_POLL_SECONDS) -> None:
        super().__init__(name="notice-poller", daemon=True)
        self.stop, self.client, self.every = stop, client, every
        self._finished = threading.Event()

    def run(self) -> None:
        failures = 0
        while not self._finished.is_set() and not self.stop.requested:
            try:
                notice = self.client.instance_action()
                failures = 0
            except requests.ConnectionError:
                failures += 1
                if failures >= UNREACHABLE_LIMIT:
                    log.info("metadata endpoint %s unreachable; not polling for notices", self.client.base)
                    return
                notice = None
            except requests.RequestException as error:
                log.warning("metadata poll failed: %s", error)
                notice = None
            if notice is not None:
                log.info("spot interruption notice: %s", notice)
                self.stop.request(f"spot interruption notice {notice}")
                return
            self._finished.wait(self.every)

    def close(self) -> None:
        self._finished.set()


def metadata_endpoint_from_env() -> str:
    return os.environ.get(METADATA_ENDPOINT_ENV) or DEFAULT_METADATA_ENDPOINT
