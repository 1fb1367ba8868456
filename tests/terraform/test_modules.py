"""`terraform fmt`, `validate` of the stacks, `terraform test` (mock provider) of every module, and the files
and README tables every module and stack keeps."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from coordinator.stack.terraform import Terraform, find_binary
from tests.terraform.conftest import MODULES, STACKS, TERRAFORM_DIR


def test_every_module_has_the_standard_files() -> None:
    for module in MODULES:
        files = {p.name for p in (TERRAFORM_DIR / "modules" / module).iterdir()}
        assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"} <= files, module
        assert any((TERRAFORM_DIR / "modules" / module / "tests").glob("*.tftest.hcl")), module


def test_fmt_is_clean(terraform_ready: None) -> None:
    result = subprocess.run(
        [str(find_binary()), "fmt", "-check", "-recursive", str(TERRAFORM_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"terraform fmt would change: {result.stdout}"


@pytest.mark.parametrize("stack", STACKS)
def test_stacks_validate(stack: str, tmp_path: Path, terraform_ready: None) -> None:
    tf = Terraform.discover(TERRAFORM_DIR / "stacks" / stack, state_dir=tmp_path)
    tf.init()
    tf.validate()


@pytest.mark.parametrize("module", MODULES)
def test_module_tests_pass_with_a_mock_provider(module: str, tmp_path: Path, terraform_ready: None) -> None:
    tf = Terraform.discover(TERRAFORM_DIR / "modules" / module, state_dir=tmp_path)
    tf.init()
    output = tf.test().stdout
    assert "0 failed" in output and " passed" in output, output


def test_every_stack_has_versions_and_a_readme() -> None:
    for stack in STACKS:
        files = {p.name for p in (TERRAFORM_DIR / "stacks" / stack).iterdir()}
        assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"} <= files, stack


def test_readmes_list_every_input_and_output() -> None:
    import re

    folders = [TERRAFORM_DIR / "modules" / m for m in MODULES] + [
        TERRAFORM_DIR / "stacks" / s for s in STACKS
    ]
    for folder in folders:
        module = folder.name
        readme = (folder / "README.md").read_text()
        names = re.findall(r'^variable "([^"]+)"', (folder / "variables.tf").read_text(), re.M)
        names += re.findall(r'^output "([^"]+)"', (folder / "outputs.tf").read_text(), re.M)
        missing = [name for name in names if f"| `{name}` |" not in readme]
        assert not missing, f"{module}/README.md lacks {missing}"


BAD_VARIABLES = {  # each refused by its own validation, all in one plan (Terraform reports every one)
    "bucket_name": ("Not_A_Bucket", "bucket_name must be a valid S3 bucket name"),
    "region": ("moon-1", "region must look like us-east-1"),
    "image_id": ("ubuntu", "image_id must be null or an AMI id"),
}


def test_the_aws_stack_refuses_bad_variables_by_name(tmp_path: Path, terraform_ready: None) -> None:
    from coordinator.errors import TerraformError

    tf = Terraform.discover(TERRAFORM_DIR / "stacks" / "aws", state_dir=tmp_path)
    tf.init()
    with pytest.raises(TerraformError) as refused:
        tf.plan({name: value for name, (value, _) in BAD_VARIABLES.items()})
    missing = [message for _, message in BAD_VARIABLES.values() if message not in str(refused.value)]
    assert missing == [], str(refused.value)


@pytest.mark.parametrize(
    ("instance_type", "message"), [("p3.2xlarge", "V100 (sm_70)"), ("c7g.xlarge", "arm64 (Graviton) types")]
)
def test_the_aws_stack_refuses_types_the_image_cannot_run(
    instance_type: str, message: str, tmp_path: Path, terraform_ready: None
) -> None:
    from coordinator.errors import TerraformError

    tf = Terraform.discover(TERRAFORM_DIR / "stacks" / "aws", state_dir=tmp_path)
    tf.init()
    with pytest.raises(TerraformError, match=re.escape(message)):
        tf.plan({"region": "us-east-1", "bucket_name": "spotbatch-b", "instance_type": instance_type})


def test_the_example_backend_takes_over_from_the_wrappers_local_state(tmp_path: Path) -> None:
    """With backend.tf (local) the wrapper puts the state under the state folder; with backend.tf.example
    in its place it passes no state path and the S3 backend holds the state."""
    import shutil

    stack = tmp_path / "aws"
    shutil.copytree(TERRAFORM_DIR / "stacks" / "aws", stack, ignore=shutil.ignore_patterns(".terraform*"))
    assert Terraform.discover(stack, state_dir=tmp_path / "state").local_backend
    (stack / "backend.tf").write_text((stack / "backend.tf.example").read_text())
    assert not Terraform.discover(stack, state_dir=tmp_path / "state").local_backend


def test_the_docs_price_private_modes_standing_endpoints() -> None:
    """Private mode's interface endpoints bill every hour the stack exists, job or no job: the real-account
    page says how many and what, from the network module's own list (the S3 gateway endpoint is free)."""
    network = (TERRAFORM_DIR / "modules" / "network" / "main.tf").read_text()
    services = re.findall(r'"([a-z.]+)"', re.search(r"interface_services\s*=.*\[(.*)\]", network).group(1))  # type: ignore[union-attr]
    readme = (TERRAFORM_DIR.parent / "docs" / "aws.md").read_text()
    hourly = 0.01 * len(services) * 6  # us-east-1's six zones, a subnet (and an endpoint ENI) in each
    assert f"{len(services)} x 6 zones = ${hourly:.2f}/h" in readme
    assert f"about ${hourly * 730:.0f} a month" in readme and "job or no job" in readme
