"""An endpoint that fails past botocore's retries (an emulator answering 500, or not listening) is one line
and exit 2, not a botocore traceback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from coordinator.cli import main

OUTPUTS = {
    "region": "us-east-1",
    "bucket": "b",
    "launch_template_ids": {"spot": "lt-1"},
    "subnet_ids": {"us-east-1a": "subnet-1"},
    "name": "s",
    "worker_role_path": "/spotbatch/s/",
    "worker_boundary_arn": "arn:aws:iam::123456789012:policy/spotbatch/s/boundary",
    "repository_arn": "arn:aws:ecr:us-east-1:123456789012:repository/s-worker",
    "log_group": "/spotbatch/s/workers",
    "log_group_arn": "arn:aws:logs:us-east-1:123456789012:log-group:/spotbatch/s/workers",
    "metrics_namespace": "spotbatch",
    "instance_type": "c7i.xlarge",
}


class Failing(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.send_response(500)
        body = b"<Error><Code>InternalError</Code><Message>the emulator broke</Message></Error>"
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = _answer

    def log_message(self, *args: object) -> None: ...


@pytest.fixture
def failing_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _outputs(tmp_path: Path) -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    return path


def test_an_emulator_answering_500_is_one_line(
    failing_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], aws_credentials: None
) -> None:
    code = main(["fetch", "job-1", "--endpoint", failing_endpoint, "--outputs", str(_outputs(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: the endpoint answered 500 to GetCallerIdentity after botocore's"), err


def test_an_endpoint_that_does_not_listen_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], aws_credentials: None
) -> None:
    code = main(["fetch", "job-1", "--endpoint", "http://127.0.0.1:9", "--outputs", str(_outputs(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: the endpoint did not answer"), err
