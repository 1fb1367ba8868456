"""Real AWS: `make apply-real` and `make destroy-real` through Terraform, and the confirmation after both.

Usage::

    real = RealAws(state_dir, variables)
    real.plan(); real.apply_saved_plan()          # exactly the plan that was shown
    real.destroy_and_confirm(ec2)                 # instance ids of the project still alive, if any
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coordinator.errors import InfraError
from coordinator.job.instances import list_instances
from coordinator.paths import TERRAFORM_DIR
from coordinator.stack.terraform import Terraform

STACKS_DIR = TERRAFORM_DIR / "stacks"


class RealAws:
    """`make apply-real` / `make destroy-real`: plan to a file, apply exactly that plan, destroy, confirm."""

    def __init__(self, state_dir: Path, variables: Mapping[str, Any]) -> None:
        self.tf = Terraform.discover(STACKS_DIR / "aws", state_dir=state_dir)
        self.variables = dict(variables)
        self.plan_file = state_dir / "tfplan"

    def plan(self) -> str:
        self.tf.init()
        return self.tf.plan(self.variables, out=self.plan_file).stdout

    def apply_saved_plan(self) -> dict[str, Any]:
        if not self.plan_file.is_file():
            raise InfraError(f"{self.plan_file}: no saved plan; run the plan step first")
        self.tf.apply(plan_file=self.plan_file)
        self.plan_file.unlink()
        return self.tf.output()

    def destroy_and_confirm(self, ec2: Any) -> list[str]:
        """Destroy the stack, then re-list instances tagged Project=spotbatch; returns any still alive."""
        self.tf.init()
        self.tf.destroy(self.variables)
        return sorted(list_instances(ec2.describe_instances, alive_only=True))
