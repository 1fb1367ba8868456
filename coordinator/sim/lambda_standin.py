"""Simulator only: a local stand-in for Lambda Cloud's REST API (there is no emulator to run).

It answers the five calls of `providers/lambda_cloud.py` with the JSON shapes of Lambda's published API
(`{"data": ...}`, errors as `{"error": {"code", "message", "suggestion"}}`, an HTTP `Date` header), checks
the bearer key, and keeps instances in memory: `booting` for `boot_seconds`, then `active` with an IP that
points at a box the caller provides (a local sshd: `ip`, the port is the caller's business); terminate
makes them `terminating`, then `terminated` on the next read.

Faults for tests, each used up as it fires:
    rate_limit_next=N           the next N requests get 429 with Retry-After: 0
    launch_error_after_create=N the next N launches create the instance, then answer HTTP 500
    terminate_failures=N        the next N terminate calls answer HTTP 500 and terminate nothing
    never_active=True           instances stay `booting`
    boot_unhealthy=True         instances go from `booting` to `unhealthy` (a failed health check)
    preempt=True                a booting or active instance is `preempted` at the next read (reclaimed)
    no_capacity=True            launches answer 400 instance-operations/launch/insufficient-capacity
    quota_exceeded=True         launches answer 400 global/quota-exceeded

Rate limits: with `limits=(every, launch_every)` it answers 429 (Retry-After) to a request that comes
sooner than `every` seconds after the previous one, or a launch sooner than `launch_every` after the
previous launch, as Lambda's API does at (1 s, 12 s); the simulator scales both sides alike.

Usage::

    with LambdaStandIn(api_key="secret", ip="127.0.0.1") as cloud:
        os.environ["LAMBDA_API_URL"] = cloud.api_url
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from typing import Any

from coordinator.sim.local_http import LocalHttpServer

# What the stand-in sells: Lambda's names and the price table's per-GPU rates (coordinator/cost/prices.csv)
CATALOG = {
    "gpu_1x_a100_sxm4_80gb": (1, "A100 (80 GB SXM4)", 179),
    "gpu_2x_a100_sxm4_80gb": (2, "A100 (80 GB SXM4)", 358),
    "gpu_1x_h100_sxm5": (1, "H100 (80 GB SXM5)", 299),
}
REGIONS = ("us-east-1", "us-west-1")


@dataclass(slots=True)
class _Box:
    id: str
    name: str
    instance_type: str
    region: str
    ssh_key_names: list[str]
    created: float
    status: str = "booting"


class LambdaStandIn(LocalHttpServer):
    def __init__(
        self,
        *,
        api_key: str,
        ip: str = "127.0.0.1",
        boot_seconds: float = 0.5,
        limits: tuple[float, float] | None = None,
    ) -> None:
        self.api_key = api_key
        self.limits = limits
        self.throttled = 0  # requests answered 429 for coming too soon (not the injected ones)
        self._last_request: float | None = None
        self._last_launch: float | None = None
        self.ip = ip
        self.boot_seconds = boot_seconds
        self.boxes: dict[str, _Box] = {}
        self.requests: list[str] = []  # "METHOD /path", in order
        self.rate_limit_next = 0
        self.launch_error_after_create = 0
        self.terminate_failures = 0
        self.never_active = False
        self.boot_unhealthy = False
        self.preempt = False
        self.no_capacity = False
        self.quota_exceeded = False
        self._lock = threading.Lock()
        super().__init__(name="lambda-standin")

    @property
    def api_url(self) -> str:
        return self.base_url + "/api/v1"

    def alive(self) -> list[str]:
        with self._lock:
            return sorted(b.id for b in self.boxes.values() if b.status not in ("terminated", "preempted"))

    # -- the API ---------------------------------------------------------------------------------------------

    def _view(self, box: _Box) -> dict[str, Any]:
        if box.status in ("booting", "active") and self.preempt:
            box.status = "preempted"
        elif (
            box.status == "booting"
            and not self.never_active
            and time.time() - box.created >= self.boot_seconds
        ):
            box.status = "unhealthy" if self.boot_unhealthy else "active"
        elif box.status == "terminating":
            box.status = "terminated"
        running = box.status in ("active", "unhealthy")
        action = {"available": running} | ({} if running else {"reason_code": "vm-has-not-launched"})
        view: dict[str, Any] = {
            "id": box.id,
            "name": box.name,
            "status": box.status,
            "ssh_key_names": box.ssh_key_names,
            "file_system_names": [],
            "region": {"name": box.region, "description": box.region},
            "instance_type": _type_object(box.instance_type),
            "actions": {
                name: dict(action) for name in ("migrate", "rebuild", "restart", "cold_reboot", "terminate")
            },
        }
        if running:  # an address only once it has one (the API omits what it does not know)
            view |= {"ip": self.ip, "private_ip": self.ip, "hostname": self.ip}
        return view

    def refusal(self, authorization: str | None, path: str) -> tuple[int, dict[str, Any], str | None] | None:
        """A wrong key (401), an injected 429, or a request that breaks the rate limits (429)."""
        if authorization != f"Bearer {self.api_key}":
            return (
                *_error(
                    401,
                    "global/invalid-api-key",
                    "API key was invalid, expired, or deleted.",
                    "Check your API key or create a new one, then try again.",
                ),
                None,
            )
        if self.rate_limit_next > 0:
            self.rate_limit_next -= 1
            return (*_error(429, "global/too-many-requests", "Too many requests."), "0")
        with self._lock:
            wait = self.too_soon(path.endswith("/instance-operations/launch"))
        if wait is not None:
            return (*_error(429, "global/too-many-requests", "Too many requests."), f"{wait:.3f}")
        return None

    def too_soon(self, launch: bool) -> float | None:
        """Seconds to wait if this request breaks the limits (and it is refused), else None (and counted)."""
        if self.limits is None:
            return None
        every, launch_every = self.limits
        now = time.monotonic()
        wait = 0.0
        if self._last_request is not None:
            wait = max(wait, self._last_request + every - now)
        if launch and self._last_launch is not None:
            wait = max(wait, self._last_launch + launch_every - now)
        if wait > 1e-3:  # the client's clock and ours tick apart by a little
            self.throttled += 1
            return wait
        self._last_request = now
        if launch:
            self._last_launch = now
        return None

    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if path == "/api/v1/instance-types" and method == "GET":
                regions = [] if self.no_capacity else [{"name": r, "description": r} for r in REGIONS]
                return 200, {
                    "data": {
                        name: {
                            "instance_type": _type_object(name),
                            "regions_with_capacity_available": regions,
                        }
                        for name in CATALOG
                    }
                }
            if path == "/api/v1/instances" and method == "GET":
                return 200, {"data": [self._view(b) for b in self.boxes.values() if b.status != "terminated"]}
            if path.startswith("/api/v1/instances/") and method == "GET":
                box = self.boxes.get(path.rsplit("/", 1)[1])
                if box is None:
                    return _error(404, "global/object-does-not-exist", "Specified instance does not exist.")
                return 200, {"data": self._view(box)}
            if path == "/api/v1/instance-operations/launch" and method == "POST":
                return self._launch(body)
            if path == "/api/v1/instance-operations/terminate" and method == "POST":
                return self._terminate(body)
        return _error(404, "global/not-found", f"no route {method} {path}")

    def _launch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        kind, region = body.get("instance_type_name"), body.get("region_name")
        if kind not in CATALOG:
            return _error(400, "global/invalid-parameters", f"Invalid instance type {kind!r}.")
        if region not in REGIONS:
            return _error(400, "global/invalid-parameters", f"Invalid region {region!r}.")
        keys = body.get("ssh_key_names")
        if not isinstance(keys, list) or len(keys) != 1:
            return _error(400, "global/invalid-parameters", "Exactly one SSH key name is required.")
        if self.quota_exceeded:
            return _error(
                400, "global/quota-exceeded", "Quota exceeded.", "Contact Support to increase your quota."
            )
        if self.no_capacity:
            return _error(
                400,
                "instance-operations/launch/insufficient-capacity",
                "Not enough capacity to fulfill launch request.",
                "Choose an instance type with more availability, or try again later.",
            )
        box = _Box(
            "standin-" + secrets.token_hex(8), str(body.get("name") or ""), kind, region, keys, time.time()
        )
        self.boxes[box.id] = box
        if self.launch_error_after_create > 0:
            self.launch_error_after_create -= 1
            return _error(500, "global/internal-error", "Something went wrong.")  # the instance exists anyway
        return 200, {"data": {"instance_ids": [box.id]}}

    def _terminate(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.terminate_failures > 0:
            self.terminate_failures -= 1
            return _error(500, "global/internal-error", "Something went wrong.")
        ids = body.get("instance_ids") or []
        missing = [i for i in ids if i not in self.boxes]
        if missing:
            return _error(404, "global/object-does-not-exist", f"Instances {missing} do not exist.")
        done = []
        for instance_id in ids:
            box = self.boxes[instance_id]
            if box.status not in ("terminated", "preempted"):  # a preempted box is already gone
                box.status = "terminating"
            done.append(self._view(box))
        return 200, {"data": {"terminated_instances": done}}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self, method: str) -> None:
                server.requests.append(f"{method} {self.path}")
                refused = server.refusal(self.headers.get("Authorization"), self.path)
                if refused is not None:
                    self._reply(*refused[:2], retry_after=refused[2])
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                except json.JSONDecodeError:
                    self._reply(*_error(400, "global/invalid-parameters", "Body is not JSON."))
                    return
                self._reply(*server.handle(method, self.path, body))

            def _reply(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def date_time_string(self, timestamp: float | None = None) -> str:
                return formatdate(timestamp, usegmt=True)

        return Handler


def _type_object(name: str) -> dict[str, Any]:
    """An instance type as Lambda describes it, inside instance and instance-type answers alike."""
    gpus, description, cents = CATALOG[name]
    return {
        "name": name,
        "description": f"{gpus}x {description}",
        "gpu_description": description,
        "price_cents_per_hour": cents,
        "specs": {"vcpus": 30 * gpus, "memory_gib": 200 * gpus, "storage_gib": 512 * gpus, "gpus": gpus},
    }


def _error(status: int, code: str, message: str, suggestion: str | None = None) -> tuple[int, dict[str, Any]]:
    error: dict[str, str] = {"code": code, "message": message}
    if suggestion:
        error["suggestion"] = suggestion
    return status, {"error": error}
