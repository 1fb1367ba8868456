"""Lambda Cloud's public REST API (https://cloud.lambda.ai/api/v1), the calls a burst needs.

    GET  /instance-types                    {"data": {name: {"instance_type": {..., "price_cents_per_hour",
                                              "specs": {"gpus", ...}},
                                              "regions_with_capacity_available": [...]}}}
    POST /instance-operations/launch        {"region_name", "instance_type_name", "ssh_key_names", "name"}
                                            -> {"data": {"instance_ids": [...]}}
    GET  /instances, /instances/<id>        {"data": [...]} / {"data": {"id", "name", "ip", "status", ...}}
    POST /instance-operations/terminate     {"instance_ids": [...]}
                                            -> {"data": {"terminated_instances": [...]}}
    errors                                  {"error": {"code", "message", "suggestion"?}}, HTTP 4xx/5xx
    statuses                                booting, active, unhealthy, terminating, terminated, preempted

Errors are classified by their `code` (the API description asks clients not to rely on the message):
`instance-operations/launch/insufficient-capacity` is `NoCapacity`, `global/quota-exceeded` is
`ProviderQuotaExceeded` (a limit of the account: no retry helps), `global/object-does-not-exist` on a
read is "no such instance". `tests/coordinator/burst/providers/test_lambda_contract.py` checks every
request and response shape used here against the API description.

The API key comes from `LAMBDA_API_KEY` (or the constructor) and goes only into the Authorization header:
it is not in any message, log line or repr. Lambda allows about one request per second (one launch per
12 s): calls are paced to those limits before they are sent (`request_pace.py`), and a 429 that still
comes is retried after `Retry-After` or a doubling backoff, as are 5xx answers and dropped
connections for calls that are safe to repeat (reads, terminate). A launch is repeated only after a 429
(the request was not executed); after a 5xx or a lost answer the instance may exist, so the launch raises
`LaunchUnconfirmed` and the caller looks for it by name.

Usage::

    cloud = LambdaCloud()                                    # LAMBDA_API_KEY from the environment
    launched = cloud.launch(instance_type="gpu_1x_a100_sxm4_80gb", region="us-east-1",
                            ssh_key_name="me", name="spotbatch-burst-20261202T120000Z")
    cloud.instance(launched.instance_id).status            # "booting", then "active"
    cloud.terminate([launched.instance_id])
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import requests

from coordinator.burst.providers.base import Instance, InstanceType, Launched
from coordinator.burst.providers.request_pace import RequestPace
from coordinator.errors import (
    LaunchUnconfirmed,
    NoCapacity,
    ProviderError,
    ProviderQuotaExceeded,
    RateLimited,
)
from coordinator.stack.endpoint_rules import check_credential_endpoint

API_URL = "https://cloud.lambda.ai/api/v1"
API_KEY_ENV = "LAMBDA_API_KEY"
API_URL_ENV = "LAMBDA_API_URL"  # another endpoint: the local stand-in in tests and `make burst`
MAX_ATTEMPTS = 6  # 1 + 5 retries: with doubling from 2 s, about a minute of throttling before giving up
BACKOFF_SECONDS = 2.0  # Lambda's limit is one request per second; twice that before the first retry
REQUEST_TIMEOUT_SECONDS = 30.0
NO_CAPACITY_CODE = "instance-operations/launch/insufficient-capacity"
NOT_FOUND_CODE = "global/object-does-not-exist"
QUOTA_CODE = "global/quota-exceeded"
log = logging.getLogger(__name__)


def _utc_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LambdaCloud:
    provider = "lambda"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_seconds: float = BACKOFF_SECONDS,
        pace: RequestPace | None = None,
    ) -> None:
        key = api_key or os.environ.get(API_KEY_ENV, "")
        if not key:
            raise ProviderError(f"no Lambda Cloud API key: set {API_KEY_ENV} (it is never written anywhere)")
        self.__key = key
        # the key is a bearer token: only over HTTPS, or to the stand-in on this machine (endpoint_rules.py)
        named = f"${API_URL_ENV}" if not base_url and os.environ.get(API_URL_ENV) else "the Lambda API URL"
        self.base_url = check_credential_endpoint(base_url or os.environ.get(API_URL_ENV) or API_URL, named)
        self.session = session or requests.Session()
        self.sleep = sleep
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self.retries = 0  # retried requests, for the run's record
        self.pace = pace if pace is not None else RequestPace()

    def __repr__(self) -> str:
        return f"LambdaCloud(base_url={self.base_url!r})"

    # -- the calls -------------------------------------------------------------------------------------------

    def instance_types(self) -> dict[str, InstanceType]:
        data, _ = self._call("GET", "/instance-types")
        types = {}
        for name, entry in _mapping(data, "instance-types").items():
            spec = _mapping(entry.get("instance_type"), f"instance-types {name}")
            types[name] = InstanceType(
                name=name,
                gpus=int(_mapping(spec.get("specs"), f"{name} specs").get("gpus", 1)),
                gpu_description=str(spec.get("gpu_description", spec.get("description", ""))),
                usd_per_hour=int(spec["price_cents_per_hour"]) / 100,
                regions_with_capacity=tuple(
                    r["name"] for r in entry.get("regions_with_capacity_available", [])
                ),
            )
        return types

    def launch(self, *, instance_type: str, region: str, ssh_key_name: str, name: str) -> Launched:
        body = {
            "region_name": region,
            "instance_type_name": instance_type,
            "ssh_key_names": [ssh_key_name],
            "name": name,
        }
        data, answered = self._call("POST", "/instance-operations/launch", body, repeatable=False)
        ids = _mapping(data, "launch").get("instance_ids") or []
        if len(ids) != 1:
            raise LaunchUnconfirmed(f"lambda launch of {name!r}: expected one instance id, got {ids!r}")
        return Launched(str(ids[0]), answered)

    def instances(self) -> list[Instance]:
        data, _ = self._call("GET", "/instances")
        if not isinstance(data, list):
            raise ProviderError(
                f"lambda GET /instances: expected a list in 'data', got {type(data).__name__}"
            )
        return [_instance(item) for item in data]

    def instance(self, instance_id: str) -> Instance | None:
        try:
            data, _ = self._call("GET", f"/instances/{instance_id}")
        except ProviderError as error:
            if f"HTTP 404 {NOT_FOUND_CODE}:" in str(error):
                return None
            raise
        return _instance(_mapping(data, f"instance {instance_id}"))

    def terminate(self, instance_ids: list[str]) -> str:
        _, answered = self._call("POST", "/instance-operations/terminate", {"instance_ids": instance_ids})
        return answered

    # -- HTTP ------------------------------------------------------------------------------------------------

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, repeatable: bool = True
    ) -> tuple[Any, str]:
        """`(data, answered_at)`; raises ProviderError (or a subclass) with the provider's error code."""
        where = f"lambda {method} {path}"
        for attempt in range(1, self.max_attempts + 1):
            last = attempt == self.max_attempts
            launch = path == "/instance-operations/launch"
            self.pace.before(launch=launch)
            try:
                response = self.session.request(
                    method,
                    self.base_url + path,
                    json=body,
                    timeout=REQUEST_TIMEOUT_SECONDS,
                    headers={"Authorization": f"Bearer {self.__key}", "Accept": "application/json"},
                )
            except (requests.ConnectionError, requests.Timeout) as error:
                self.pace.after(launch=launch)
                if not repeatable:
                    raise LaunchUnconfirmed(
                        f"{where}: no answer ({type(error).__name__}); the instance may exist"
                    ) from None
                if last:
                    raise ProviderError(
                        f"{where}: no answer after {attempt} tries ({type(error).__name__})"
                    ) from None
                self._wait(attempt, None, where, type(error).__name__)
                continue
            self.pace.after(launch=launch)
            status = response.status_code
            if status == 429 or (status >= 500 and repeatable):
                if last:
                    kind = RateLimited if status == 429 else ProviderError
                    raise kind(f"{where}: HTTP {status} after {attempt} tries: {_error_text(response)}")
                self._wait(attempt, response.headers.get("Retry-After"), where, f"HTTP {status}")
                continue
            if status >= 500:
                raise LaunchUnconfirmed(
                    f"{where}: HTTP {status} ({_error_text(response)}); the instance may exist"
                )
            if status >= 400:
                code = _error_code(response)
                kind = {NO_CAPACITY_CODE: NoCapacity, QUOTA_CODE: ProviderQuotaExceeded}.get(
                    code, ProviderError
                )
                raise kind(f"{where}: HTTP {status} {_error_text(response)}")
            try:
                payload = response.json()
                data = payload["data"]
            except (ValueError, KeyError, TypeError):
                raise ProviderError(f'{where}: HTTP {status} but the body is not {{"data": ...}}') from None
            return data, _answered_at(response)
        raise AssertionError("unreachable")

    def _wait(self, attempt: int, retry_after: str | None, where: str, why: str) -> None:
        delay = self.backoff_seconds * 2 ** (attempt - 1)
        if retry_after is not None:
            with contextlib.suppress(ValueError):
                delay = max(0.0, float(retry_after))
        self.retries += 1
        log.warning("%s: %s, retry %d in %.1f s", where, why, attempt, delay)
        self.sleep(delay)


def _answered_at(response: requests.Response) -> str:
    """The provider's clock from the HTTP Date header; ours if it has none."""
    header = response.headers.get("Date")
    if header:
        try:
            return _utc_iso(parsedate_to_datetime(header))
        except (TypeError, ValueError):
            pass
    return _utc_iso(datetime.now(UTC))


def _error_code(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""


def _error_text(response: requests.Response) -> str:
    try:
        error = response.json()["error"]
        text = f"{error['code']}: {error['message']}"
        return text + (f" ({error['suggestion']})" if error.get("suggestion") else "")
    except (ValueError, KeyError, TypeError):
        return f"(no error object; body starts {response.text[:80]!r})"


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProviderError(f"lambda {what}: expected an object, got {type(value).__name__}")
    return value


def _instance(item: dict[str, Any]) -> Instance:
    try:
        return Instance(
            id=str(item["id"]),
            name=str(item.get("name") or ""),
            status=str(item["status"]),
            ip=item.get("ip"),
            instance_type=str((item.get("instance_type") or {}).get("name", "")),
            region=str((item.get("region") or {}).get("name", "")),
        )
    except (KeyError, TypeError) as error:
        raise ProviderError(f"lambda instance object without {error}: keys {sorted(item)}") from None
