"""The stack's outputs, as `terraform output -json` saved them: what a run needs to find the fleet.

Usage::

    stack = StackOutputs.read(Path("runs/infra/aws/outputs.json"))
    stack.bucket, stack.launch_template_ids["spot"], stack.subnet_ids      # zone name -> subnet id
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.errors import StackOutputsError

REQUIRED = (
    "region",
    "bucket",
    "launch_template_ids",
    "subnet_ids",
    "name",
    "worker_role_path",
    "worker_boundary_arn",
    "repository_arn",
    "log_group",
    "log_group_arn",
    "metrics_namespace",
)


def read_outputs(path: Path) -> dict[str, Any]:
    """`terraform output -json` ({name: {value: ...}}) or plain {name: value}; errors name the missing key."""
    if not path.exists():
        raise StackOutputsError(
            f"{path}: no stack outputs: the stack was never applied here; run `make apply-real REGION=... "
            "BUCKET=...` first (or pass --outputs with the file it wrote)"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise StackOutputsError(f"{path}: cannot read the stack outputs ({error})") from None
    if not isinstance(raw, dict):
        raise StackOutputsError(f"{path}: not a JSON object of outputs")
    outputs = {k: (v["value"] if isinstance(v, dict) and "value" in v else v) for k, v in raw.items()}
    for key in ("bucket", "launch_template_ids"):
        if key not in outputs:
            raise StackOutputsError(
                f"{path}: no {key!r} output; is this the spotbatch stack's `terraform output -json`?"
            )
    return outputs


@dataclass(frozen=True, slots=True, kw_only=True)
class StackOutputs:
    region: str
    bucket: str
    launch_template_ids: dict[str, str]  # market -> template id
    subnet_ids: dict[str, str]  # availability zone name -> subnet id
    name: str
    worker_role_path: str
    worker_boundary_arn: str
    repository_arn: str
    log_group: str
    log_group_arn: str
    metrics_namespace: str
    instance_type: str = ""
    gpu: bool = False
    kms_key_arn: str | None = None
    worker_trusted_principals: tuple[str, ...] = ()
    emulator: bool = False  # the stack lives on an emulator: its IAM matches resources by ARN for S3 only
    events_queue_url: str = ""  # EC2's interruption events (a stack applied before they existed: "")
    events_queue_arn: str = ""
    # market -> the version to launch (the latest apply's); a stack applied before it was an output: {}
    launch_template_versions: dict[str, str] = field(default_factory=dict)

    def template_version(self, market: str) -> str:
        """The version a launch of `market` names, and the pre-flight reads: the stack's latest apply's
        (EC2's `$Default` for a stack that does not say)."""
        return self.launch_template_versions.get(market, "$Default")

    @classmethod
    def from_dict(cls, outputs: dict[str, Any], where: str = "the stack outputs") -> StackOutputs:
        missing = [key for key in REQUIRED if outputs.get(key) in (None, "")]
        if missing:
            raise StackOutputsError(
                f"{where}: no {', '.join(repr(k) for k in missing)} output; apply the current stack "
                "(`make apply-real`) and use the outputs.json it writes"
            )
        templates = outputs["launch_template_ids"]
        if not templates:
            raise StackOutputsError(
                f"{where}: the stack has no launch templates yet: push the worker image (`make image-push`) "
                "and apply again"
            )
        return cls(
            region=str(outputs["region"]),
            bucket=str(outputs["bucket"]),
            launch_template_ids={str(k): str(v) for k, v in templates.items()},
            subnet_ids={str(k): str(v) for k, v in dict(outputs["subnet_ids"]).items()},
            name=str(outputs["name"]),
            worker_role_path=str(outputs["worker_role_path"]),
            worker_boundary_arn=str(outputs["worker_boundary_arn"]),
            repository_arn=str(outputs["repository_arn"]),
            log_group=str(outputs["log_group"]),
            log_group_arn=str(outputs["log_group_arn"]),
            metrics_namespace=str(outputs["metrics_namespace"]),
            instance_type=str(outputs.get("instance_type") or ""),
            gpu=bool(outputs.get("gpu")),
            kms_key_arn=outputs.get("kms_key_arn") or None,
            worker_trusted_principals=tuple(outputs.get("worker_trusted_principals") or ()),
            emulator=bool(outputs.get("emulator")),
            events_queue_url=str(outputs.get("events_queue_url") or ""),
            events_queue_arn=str(outputs.get("events_queue_arn") or ""),
            launch_template_versions={
                str(k): str(v) for k, v in dict(outputs.get("launch_template_versions") or {}).items()
            },
        )

    @classmethod
    def read(cls, path: Path) -> StackOutputs:
        return cls.from_dict(read_outputs(path), str(path))
