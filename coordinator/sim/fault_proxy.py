"""Simulator only: an HTTP proxy in front of moto that answers chosen EC2 calls with AWS errors.

moto never throttles, never fails with a 500 and always has capacity. The coordinator's boto3 client talks
to this proxy instead, so its real retry and fallback code meets real HTTP error responses (EC2's XML error
shape, the status codes AWS uses); everything else is forwarded to moto unchanged.

Usage::

    with FaultProxy(moto_endpoint) as proxy:
        proxy.add(FaultRule("RunInstances", "RequestLimitExceeded", times=2))          # the next two calls
        proxy.add(FaultRule("RunInstances", "InsufficientInstanceCapacity",
                            template_id=spot_template, active=lambda: not trace.available()))
        ec2 = boto3.client("ec2", endpoint_url=proxy.endpoint)
"""

from __future__ import annotations

import http.client
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from coordinator.sim.local_http import LocalHttpServer

# the HTTP status AWS sends with each error code
STATUS = {
    "RequestLimitExceeded": 503,
    "Throttling": 400,
    "InternalError": 500,
    "Unavailable": 503,
    "InsufficientInstanceCapacity": 500,
    "SpotMaxPriceTooLow": 400,
    "UnauthorizedOperation": 403,
}


@dataclass(slots=True)
class FaultRule:
    action: str  # EC2 query action, as in RunInstances
    code: str  # the error code to answer with
    times: int | None = None  # answer this many matching calls, then stand aside; None: while active
    template_id: str | None = None  # only calls that launch from this launch template
    instance_type: str | None = None  # only calls that launch this type (a capacity pool's)
    active: Callable[[], bool] = field(default=lambda: True)
    html: bool = False  # answer 500 with an HTML page instead of AWS's XML (what a crashed emulator sends)
    hits: int = 0

    def matches(self, params: dict[str, list[str]]) -> bool:
        if params.get("Action", [""])[0] != self.action:
            return False
        if self.template_id and params.get("LaunchTemplate.LaunchTemplateId", [""])[0] != self.template_id:
            return False
        if self.instance_type and params.get("InstanceType", [""])[0] != self.instance_type:
            return False
        if self.times is not None and self.hits >= self.times:
            return False
        return self.active()


INSTANCE_ID = re.compile(r"<instanceId>(i-[0-9a-f]+)</instanceId>")
HTML_500 = b"<!doctype html>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n"


def error_body(code: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Response><Errors><Error><Code>{code}</Code><Message>{code} (injected by the spotbatch simulator)"
        f"</Message></Error></Errors><RequestID>{uuid.uuid4()}</RequestID></Response>"
    ).encode()


class FaultProxy(LocalHttpServer):
    def __init__(self, upstream: str, host: str = "127.0.0.1") -> None:
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.rules: list[FaultRule] = []
        self.injected: list[str] = []  # "Action: Code" of every error answered, in order
        self.latencies: dict[str, list[float]] = {}  # action -> wall seconds moto took, forwarded calls
        self.launched: dict[str, float] = {}  # instance id -> wall time its RunInstances call answered
        self._lock = threading.Lock()
        super().__init__(name="fault-proxy", host=host)

    @property
    def endpoint(self) -> str:
        return self.base_url

    def add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def _fault_for(self, body: bytes) -> FaultRule | None:
        params = parse_qs(body.decode("utf-8", "replace"))
        with self._lock:
            for rule in self.rules:
                if rule.matches(params):
                    rule.hits += 1
                    self.injected.append(f"{rule.action}: {rule.code}")
                    return rule
        return None

    def _timed(self, body: bytes, seconds: float, answer: bytes) -> None:
        action = parse_qs(body.decode("utf-8", "replace")).get("Action", ["?"])[0]
        now = time.time()
        with self._lock:
            self.latencies.setdefault(action, []).append(seconds)
            if action == "RunInstances":
                for instance_id in INSTANCE_ID.findall(answer.decode("utf-8", "replace")):
                    self.launched.setdefault(instance_id, now)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                rule = proxy._fault_for(body) if self.command == "POST" else None
                if rule is not None and rule.html:
                    return self._send(500, HTML_500, [("Content-Type", "text/html")])
                if rule is not None:
                    return self._send(
                        STATUS.get(rule.code, 400), error_body(rule.code), [("Content-Type", "text/xml")]
                    )
                upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=60)
                started = time.monotonic()
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    reply = upstream.getresponse()
                    data = reply.read()
                    proxy._timed(body, time.monotonic() - started, data)
                    keep = [
                        (k, v)
                        for k, v in reply.getheaders()
                        if k.lower() not in ("transfer-encoding", "content-length", "connection")
                    ]
                    self._send(reply.status, data, keep)
                finally:
                    upstream.close()

            def _send(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward  # EC2 speaks POST; S3 clients go to moto directly

        return Handler
