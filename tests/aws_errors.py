"""AWS's answers that moto never gives (`tests/fixtures/aws-errors/errors.json`), queued on a client with
botocore's Stubber.

Usage::

    with Stubber(ec2) as stub:
        queue_error(stub, "vcpu-limit-exceeded")        # the next run_instances fails as AWS would
"""

from __future__ import annotations

import json
from typing import Any

from botocore.stub import Stubber

from tests.conftest import FIXTURES

ERRORS: dict[str, Any] = json.loads((FIXTURES / "aws-errors" / "errors.json").read_text())


def queue_error(stub: Stubber, name: str, **expected_params: Any) -> dict[str, Any]:
    """The recorded error `name` as the stubbed client's next answer to its operation; the record."""
    record = dict(ERRORS[name])
    stub.add_client_error(
        record["operation"],
        service_error_code=record["code"],
        service_message=record["message"],
        http_status_code=record["status"],
        expected_params=expected_params or None,
    )
    return record
