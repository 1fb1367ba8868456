"""The spotbatch stack (`terraform/stacks/aws`) deployed to a target: real AWS or an emulator, the same stack.

`StackSettings` are what a user chooses (bucket, instance type, image, network); `variables()` turns them
into the stack's variables for a target (for an emulator, with its endpoint and credentials). `Deployment`
runs Terraform in a state folder and keeps there what a later command needs:

    <state_dir>/variables.tfvars.json   the variables of the last plan or apply (0600): destroy needs only it
    <state_dir>/tfplan                  a saved plan, applied exactly as shown, then removed
    <state_dir>/outputs.json            `terraform output` after every apply: what `spotbatch run` reads

Usage::

    deployment = Deployment(Path("runs/infra/aws"), AwsTarget.real("eu-west-1"))
    planned = deployment.plan(StackSettings(bucket_name="my-bucket").variables(deployment.target))
    print(planned.text); outputs = deployment.apply_saved_plan()
    deployment.destroy()                                    # with the saved variables
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.errors import InfraError, TerraformError
from coordinator.paths import TERRAFORM_DIR
from coordinator.stack.defaults import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_MAX_LIFETIME_SECONDS,
    DEFAULT_STACK_NAME,
    require_worker_type,
)
from coordinator.stack.target import AwsTarget
from coordinator.stack.terraform import Terraform

log = logging.getLogger(__name__)

STACK_DIR = TERRAFORM_DIR / "stacks" / "aws"


@dataclass(frozen=True, slots=True, kw_only=True)
class StackSettings:
    bucket_name: str
    instance_type: str = DEFAULT_INSTANCE_TYPE
    worker_image: str | None = None  # <repository url>@sha256:...; None until an image is pushed
    name: str = DEFAULT_STACK_NAME
    network_mode: str = "public"
    max_lifetime_seconds: int = DEFAULT_MAX_LIFETIME_SECONDS
    kms_key_arn: str | None = None
    force_destroy: bool = False
    image_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # any other variable of the stack, as given

    def __post_init__(self) -> None:
        require_worker_type(self.instance_type)

    def variables(self, target: AwsTarget) -> dict[str, Any]:
        variables: dict[str, Any] = {
            "region": target.region,
            "name": self.name,
            "bucket_name": self.bucket_name,
            "instance_type": self.instance_type,
            "network_mode": self.network_mode,
            "max_lifetime_seconds": self.max_lifetime_seconds,
            "force_destroy": self.force_destroy,
            **target.terraform_variables(),
            **self.extra,
        }
        for name, value in (
            ("worker_image", self.worker_image),
            ("kms_key_arn", self.kms_key_arn),
            ("image_id", self.image_id),
        ):
            if value is not None:
                variables[name] = value
        return variables


@dataclass(frozen=True, slots=True)
class PlannedChanges:
    text: str  # what `terraform plan` printed
    creates: list[str]  # resource addresses
    updates: list[str]
    deletes: list[str]
    document: dict[str, Any]  # `terraform show -json` of the saved plan

    def planned_resources(self, resource_type: str) -> list[dict[str, Any]]:
        """The planned values of every resource of a type (nested modules included)."""
        found: list[dict[str, Any]] = []

        def walk(module: dict[str, Any]) -> None:
            found.extend(r for r in module.get("resources", []) if r.get("type") == resource_type)
            for child in module.get("child_modules", []):
                walk(child)

        walk(self.document.get("planned_values", {}).get("root_module", {}))
        return found


def _changes(document: dict[str, Any], action: str) -> list[str]:
    return sorted(
        str(change["address"])
        for change in document.get("resource_changes", [])
        if action in change.get("change", {}).get("actions", [])
    )


def _created_twice(error: str) -> str:
    """The resource a failed apply says already existed under the name it had just generated ("" if none):
    `Error: creating <kind> (<name>): ... AlreadyExists...` in Terraform's words."""
    for line in error.splitlines():
        if "AlreadyExists" in line or "already in use" in line:
            match = re.search(r"creating ([^(]+) \(([^)]+)\)", line)
            return f"{match.group(1).strip()} {match.group(2)}" if match else line.strip()[:200]
    return ""


class Deployment:
    def __init__(self, state_dir: Path, target: AwsTarget) -> None:
        self.state_dir = state_dir
        self.target = target
        self.tf = Terraform.discover(
            STACK_DIR, state_dir=state_dir, extra_env=target.env(), base_env=target.process_env()
        )
        self._initialised = False

    @property
    def plan_file(self) -> Path:
        return self.state_dir / "tfplan"

    @property
    def outputs_file(self) -> Path:
        return self.state_dir / "outputs.json"

    def _init(self) -> None:
        if not self._initialised:
            self.tf.init()
            self._initialised = True

    def plan(self, variables: dict[str, Any]) -> PlannedChanges:
        self._require_region(variables)
        self._init()
        text = self.tf.plan(variables, out=self.plan_file).stdout
        document = self.tf.show_plan(self.plan_file)
        return PlannedChanges(
            text,
            _changes(document, "create"),
            _changes(document, "update"),
            _changes(document, "delete"),
            document,
        )

    def apply_saved_plan(self) -> dict[str, Any]:
        if not self.plan_file.is_file():
            raise InfraError(f"{self.plan_file}: no saved plan; run the plan step first")
        self._init()
        self.tf.apply(plan_file=self.plan_file)
        self.plan_file.unlink()
        return self.outputs()

    def apply(self, variables: dict[str, Any]) -> dict[str, Any]:
        """`terraform apply`, once more if a create found its own resource: beside a CPU hog, a launch
        template's create answered "name already in use" for the name the same apply had just sent (the
        first answer was lost on the way and the provider sent the call again). The second apply creates it
        under a new generated name; the first, outside the state, is named in a warning (a launch template,
        a security group or a role costs nothing, and carries the stack's tags)."""
        self._require_region(variables)
        self._init()
        try:
            self.tf.apply(variables)
        except TerraformError as error:
            found = _created_twice(str(error))
            if not found:
                raise
            log.warning(
                "terraform apply: %s already existed when the apply created it (a retried call): applying "
                "again; delete the first %s by hand if it stays",
                found,
                found,
            )
            self.tf.apply(variables)
        return self.outputs()

    def outputs(self) -> dict[str, Any]:
        """`terraform output`, also saved to outputs.json for `spotbatch run`."""
        outputs = self.tf.output()
        self.outputs_file.write_text(json.dumps(outputs, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return outputs

    def saved_variables(self) -> dict[str, Any]:
        return self.tf.saved_variables()

    def destroy(self) -> None:
        """Destroy with the variables of the last apply (nothing else is needed)."""
        variables = self.saved_variables()
        if not variables:
            raise InfraError(
                f"{self.tf.variables_file}: no saved variables, so nothing was applied from "
                f"{self.state_dir} (or the folder is not the one `apply-real` used)"
            )
        self._require_region(variables)
        self._init()
        self.tf.destroy()
        self.outputs_file.unlink(missing_ok=True)

    def _require_region(self, variables: dict[str, Any]) -> None:
        region = variables.get("region")
        if region != self.target.region:
            raise InfraError(
                f"the stack's variables say region {region!r} but the target is {self.target.describe}"
            )


def saved_region(state_dir: Path) -> str | None:
    """The region of the stack in a state folder, from its saved variables (destroy needs nothing else)."""
    path = state_dir / "variables.tfvars.json"
    if not path.is_file():
        return None
    try:
        region = json.loads(path.read_text(encoding="utf-8")).get("region")
    except (OSError, json.JSONDecodeError) as error:
        raise InfraError(f"{path}: cannot read the saved variables ({error})") from None
    return str(region) if region else None
