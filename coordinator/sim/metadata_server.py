"""Simulator only: a local stand-in for the EC2 instance metadata service (IMDSv2), one path per instance.

moto has no metadata service, so the simulator serves the two calls a worker makes, with IMDSv2's rules:

    PUT /<instance-id>/latest/api/token            needs X-aws-ec2-metadata-token-ttl-seconds (1..21600)
    GET /<instance-id>/latest/meta-data/spot/instance-action
                                                   needs a valid X-aws-ec2-metadata-token, else 401;
                                                   404 until a notice is issued, then 200 with
                                                   {"action": "terminate", "time": "<ISO 8601>"}

A worker is pointed at its instance with `AWS_EC2_METADATA_SERVICE_ENDPOINT=<endpoint_for(instance_id)>`.

Usage::

    with MetadataServer() as imds:
        env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.endpoint_for("i-0abc")
        imds.issue_notice("i-0abc", action_time="2026-12-02T12:00:00Z")
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler

from coordinator.sim.local_http import LocalHttpServer

MAX_TOKEN_TTL = 21_600


class MetadataServer(LocalHttpServer):
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._notices: dict[str, str] = {}
        self._tokens: set[str] = set()
        self._lock = threading.Lock()
        self.requests = 0  # instance-action GETs served: lets tests see that workers poll
        super().__init__(name="imds", host=host, port=port)

    def endpoint_for(self, instance_id: str) -> str:
        return f"{self.base_url}/{instance_id}"

    def issue_notice(self, instance_id: str, action_time: str, action: str = "terminate") -> None:
        with self._lock:
            self._notices[instance_id] = json.dumps({"action": action, "time": action_time})

    def clear_notice(self, instance_id: str) -> None:
        with self._lock:
            self._notices.pop(instance_id, None)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # quiet: workers poll every second
                pass

            def _reply(self, status: int, body: str = "") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # worker killed mid-poll
                    self.wfile.write(data)

            def _split(self) -> tuple[str, str]:
                instance_id, _, rest = self.path.lstrip("/").partition("/")
                return instance_id, "/" + rest

            def do_PUT(self) -> None:
                _, path = self._split()
                if path != "/latest/api/token":
                    return self._reply(404)
                ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
                if not ttl.isdigit() or not 1 <= int(ttl) <= MAX_TOKEN_TTL:
                    return self._reply(400, "missing or invalid X-aws-ec2-metadata-token-ttl-seconds")
                token = secrets.token_urlsafe(24)
                with server._lock:
                    server._tokens.add(token)
                self._reply(200, token)

            def do_GET(self) -> None:
                instance_id, path = self._split()
                with server._lock:
                    valid = self.headers.get("X-aws-ec2-metadata-token", "") in server._tokens
                    notice = server._notices.get(instance_id)
                    server.requests += path == "/latest/meta-data/spot/instance-action"
                if not valid:
                    return self._reply(401)
                if path != "/latest/meta-data/spot/instance-action" or notice is None:
                    return self._reply(404)
                self._reply(200, notice)

        return Handler
