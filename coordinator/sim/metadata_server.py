"""Simulator only: a local stand-in for the EC2 instance metadata service (IMDSv2), one path per instance.

moto has no metadata service, so the simulator serves what the boot script, botocore and the worker read on
a real instance, with IMDSv2's rules (a token from a PUT first, 401 without it):

    PUT /<instance-id>/latest/api/token                     X-aws-ec2-metadata-token-ttl-seconds (1..21600)
    GET /<instance-id>/latest/meta-data/instance-id
    GET /<instance-id>/latest/meta-data/tags/instance/<key>  (tags in metadata enabled, as the templates do)
    GET /<instance-id>/latest/meta-data/iam/security-credentials/[<role>]
                                                            the instance role's temporary credentials
    GET /<instance-id>/latest/meta-data/spot/instance-action
                                                            404 until a notice is issued, then 200 with
                                                            {"action": "terminate", "time": "<ISO 8601>"}

Anything else is 404, as on EC2 for a path that does not exist. A process on the simulated instance is
pointed at its instance with `AWS_EC2_METADATA_SERVICE_ENDPOINT=<endpoint_for(instance_id)>`, the variable
botocore reads; the boot script reads it too.

Usage::

    with MetadataServer() as imds:
        imds.register("i-0abc", tags, role_credentials=lambda: assume(role_arn))
        env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.endpoint_for("i-0abc")
        imds.issue_notice("i-0abc", action_time="2026-12-02T12:00:00Z")
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

from coordinator.sim.local_http import LocalHttpServer

MAX_TOKEN_TTL = 21_600
CREDENTIALS_REFRESH_MARGIN = timedelta(minutes=5)  # hand out fresh credentials before these expire
SPOT_ACTION = "/latest/meta-data/spot/instance-action"

RoleCredentials = Callable[[], dict[str, Any]]  # STS AssumeRole's Credentials: AccessKeyId, ..., Expiration


@dataclass(slots=True)
class InstanceRecord:
    tags: dict[str, str]
    role_name: str = ""
    role_credentials: RoleCredentials | None = None
    cached: dict[str, Any] = field(default_factory=dict)


class MetadataServer(LocalHttpServer):
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._notices: dict[str, str] = {}
        self._tokens: set[str] = set()
        self._instances: dict[str, InstanceRecord] = {}
        self._lock = threading.Lock()
        self.requests = 0  # instance-action GETs served: lets tests see that workers poll
        self.errors: list[str] = []
        super().__init__(name="imds", host=host, port=port)

    def endpoint_for(self, instance_id: str) -> str:
        return f"{self.base_url}/{instance_id}"

    def register(
        self,
        instance_id: str,
        tags: dict[str, str],
        *,
        role_name: str = "",
        role_credentials: RoleCredentials | None = None,
    ) -> None:
        """What this instance's metadata holds: its tags and, with a profile, its role's credentials."""
        with self._lock:
            self._instances[instance_id] = InstanceRecord(dict(tags), role_name, role_credentials)

    def issue_notice(self, instance_id: str, action_time: str, action: str = "terminate") -> None:
        with self._lock:
            self._notices[instance_id] = json.dumps({"action": action, "time": action_time})

    def clear_notice(self, instance_id: str) -> None:
        with self._lock:
            self._notices.pop(instance_id, None)

    def _answer(self, instance_id: str, path: str) -> tuple[int, str]:
        with self._lock:
            record = self._instances.get(instance_id)
            notice = self._notices.get(instance_id)
        if path == SPOT_ACTION:
            return (200, notice) if notice is not None else (404, "")
        if record is None:
            return 404, ""
        if path == "/latest/meta-data/instance-id":
            return 200, instance_id
        if path.startswith("/latest/meta-data/tags/instance/"):
            key = urllib.parse.unquote(path.removeprefix("/latest/meta-data/tags/instance/"))
            if not key:
                return 200, "\n".join(sorted(record.tags))
            return (200, record.tags[key]) if key in record.tags else (404, "")
        if path.startswith("/latest/meta-data/iam/security-credentials/"):
            return self._credentials(record, path.removeprefix("/latest/meta-data/iam/security-credentials/"))
        return 404, ""

    def _credentials(self, record: InstanceRecord, role: str) -> tuple[int, str]:
        if not record.role_name or record.role_credentials is None:
            return 404, ""  # no instance profile: EC2 has no such path either
        if not role:
            return 200, record.role_name
        if role != record.role_name:
            return 404, ""
        expiration = record.cached.get("Expiration")
        if expiration is None or expiration - datetime.now(UTC) < CREDENTIALS_REFRESH_MARGIN:
            try:
                record.cached = dict(record.role_credentials())
            except Exception as error:  # the role is gone, STS refused: EC2 answers with an error code
                self.errors.append(f"credentials for {role}: {error}")
                return 200, json.dumps({"Code": "AssumeRoleUnauthorizedAccess", "Message": str(error)})
        cached = record.cached
        return 200, json.dumps(
            {
                "Code": "Success",
                "LastUpdated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "Type": "AWS-HMAC",
                "AccessKeyId": cached["AccessKeyId"],
                "SecretAccessKey": cached["SecretAccessKey"],
                "Token": cached["SessionToken"],
                "Expiration": cached["Expiration"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )

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
                return instance_id, "/" + rest.split("?", 1)[0]

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
                    server.requests += path == SPOT_ACTION
                if not valid:
                    return self._reply(401)
                self._reply(*server._answer(instance_id, path))

        return Handler
