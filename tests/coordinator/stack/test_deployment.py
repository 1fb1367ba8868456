"""`Deployment.apply` against Terraform's own failures: beside a CPU hog, the emulator's stack once failed
with "Launch template name already in use" for the name the same apply had just generated (the provider
sent a create again after its first answer was lost), and 31 tests lost their stack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coordinator.errors import TerraformError
from coordinator.stack.deployment import Deployment
from coordinator.stack.target import AwsTarget

CREATED_TWICE = (
    "`terraform apply` in terraform/stacks/aws failed:\n"
    "Error: creating EC2 Launch Template (spotbatch-spot-20261207172548897700000005): operation error EC2: "
    "CreateLaunchTemplate, https response error StatusCode: 400, api error "
    "InvalidLaunchTemplateName.AlreadyExistsException: Launch template name already in use."
)


class ScriptedTerraform:
    """Terraform answering each apply with the next of `failures` (None: it applies)."""

    def __init__(self, *failures: str | None) -> None:
        self.failures, self.applies = list(failures), 0

    def init(self) -> None: ...

    def apply(self, variables: dict[str, Any]) -> None:
        self.applies += 1
        failure = self.failures.pop(0) if self.failures else None
        if failure:
            raise TerraformError(failure)

    def output(self) -> dict[str, Any]:
        return {"bucket": "b"}


def _deployment(tmp_path: Path, tf: ScriptedTerraform) -> Deployment:
    deployment = Deployment(tmp_path, AwsTarget.emulator("http://127.0.0.1:9", "us-east-1", ("a", "b")))
    deployment.tf = tf  # type: ignore[assignment]
    return deployment


def test_a_create_that_found_its_own_resource_is_applied_again_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tf = ScriptedTerraform(CREATED_TWICE, None)
    assert _deployment(tmp_path, tf).apply({"region": "us-east-1"}) == {"bucket": "b"}
    assert tf.applies == 2
    assert "EC2 Launch Template spotbatch-spot-20261207172548897700000005 already existed" in caplog.text


@pytest.mark.parametrize(
    "failures",
    [("Error: creating S3 Bucket (b): AccessDenied", None), (CREATED_TWICE, CREATED_TWICE)],
)
def test_any_other_failure_or_a_second_one_stops_the_apply(tmp_path: Path, failures: tuple[str, ...]) -> None:
    tf = ScriptedTerraform(*failures)
    with pytest.raises(TerraformError):
        _deployment(tmp_path, tf).apply({"region": "us-east-1"})
    assert tf.applies == len([f for f in failures if f])
