"""`terraform fmt`, `validate` of both stacks, and `terraform test` (mock provider) of every module."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from coordinator.stack.terraform import Terraform, find_binary
from tests.terraform.conftest import MODULES, TERRAFORM_DIR


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


@pytest.mark.parametrize("stack", ["emulator", "aws"])
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


def test_module_readmes_list_every_input_and_output() -> None:
    import re

    for module in MODULES:
        folder = TERRAFORM_DIR / "modules" / module
        readme = (folder / "README.md").read_text()
        names = re.findall(r'^variable "([^"]+)"', (folder / "variables.tf").read_text(), re.M)
        names += re.findall(r'^output "([^"]+)"', (folder / "outputs.tf").read_text(), re.M)
        missing = [name for name in names if f"| `{name}` |" not in readme]
        assert not missing, f"{module}/README.md lacks {missing}"
