"""The steps of `make apply-real` and `make destroy-real` (`infra.py` has the commands and the prompts).

Usage::

    settings = settings_for_apply(args, deployment.saved_variables(), state_dir)
    on_demand = on_demand_quote(args, target, settings.instance_type)   # the table's, or --live-prices
    preflight_for_apply(args, target, settings, on_demand, guard)
    print(planned_summary(deployment.plan(settings.variables(target))))
    alive = destroy_stack(state_dir)          # instance ids of the project still alive afterwards
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.pricing import PriceQuote, PriceTable
from coordinator.errors import ConfigError, InfraError
from coordinator.job.aws import InstanceInfo, delete_roles_under, list_instances
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE, DEFAULT_MAX_LIFETIME_SECONDS, DEFAULT_STACK_NAME
from coordinator.stack.deployment import Deployment, PlannedChanges, StackSettings, saved_region
from coordinator.stack.target import AwsTarget

STACK_TAG = "spotbatch:stack"


def recorded_image(state_dir: Path) -> str | None:
    """The image `make image-push` recorded (image.json: {"reference": "<url>@sha256:..."})."""
    path = state_dir / "image.json"
    if not path.is_file():
        return None
    try:
        return str(json.loads(path.read_text(encoding="utf-8"))["reference"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise ConfigError(f"{path}: not the record `make image-push` writes ({error})") from None


def settings_for_apply(args: argparse.Namespace, saved: dict[str, Any], state_dir: Path) -> StackSettings:
    """The flags, else what the last apply used, else the defaults."""
    bucket = args.bucket_name or saved.get("bucket_name")
    if not bucket:
        raise ConfigError(
            "--bucket-name is needed the first time (make apply-real BUCKET=<a new bucket name>)"
        )
    return StackSettings(
        bucket_name=str(bucket),
        instance_type=args.instance_type or saved.get("instance_type") or DEFAULT_INSTANCE_TYPE,
        worker_image=args.worker_image or recorded_image(state_dir) or saved.get("worker_image"),
        name=args.name or saved.get("name") or DEFAULT_STACK_NAME,
        network_mode=args.network_mode or saved.get("network_mode") or "public",
        max_lifetime_seconds=args.max_lifetime_seconds
        or saved.get("max_lifetime_seconds")
        or DEFAULT_MAX_LIFETIME_SECONDS,
        kms_key_arn=args.kms_key_arn or saved.get("kms_key_arn"),
    )


def on_demand_quote(args: argparse.Namespace, target: AwsTarget, instance_type: str) -> PriceQuote:
    """The type's on-demand price (the spot templates' max price): the table's, or AWS's today with
    `--live-prices` (the Price List API; the table behind it, the reason on record)."""
    table = PriceTable.load()
    if not args.live_prices:
        return table.quote("aws", target.region, instance_type, "on-demand")
    from coordinator.cost.live_prices import PRICING_REGION, live_quotes, zone_names

    pricing = target.in_region(PRICING_REGION).client("pricing")
    ec2 = target.client("ec2")
    zones = zone_names(ec2)
    quotes = live_quotes(
        table, region=target.region, instance_type=instance_type, zones=zones, ec2=ec2, pricing=pricing
    )
    return quotes["on-demand"]


def preflight_for_apply(
    args: argparse.Namespace,
    target: AwsTarget,
    settings: StackSettings,
    on_demand: PriceQuote,
    guard: BudgetGuard,
) -> None:
    from coordinator.paths import preflight_log_path
    from coordinator.preflight import checks as preflight

    ec2 = target.client("ec2")
    plan = preflight.LaunchPlan(
        job_id="infra",
        estimate_usd=0.0,
        price=on_demand,
        shutdown_behavior="terminate",
        max_lifetime_seconds=settings.max_lifetime_seconds,
    )
    results = preflight.run_preflight(plan, ec2=ec2, guard=guard)
    results = preflight.apply_overrides(
        results, preflight.parse_overrides(args.override), preflight_log_path()
    )
    print(preflight.format_results(results, target.describe))
    preflight.require_preflight(results)


def planned_summary(planned: PlannedChanges) -> str:
    """What the plan creates, by resource type, and whether any rule lets traffic in."""
    kinds = Counter(
        str(change["type"])
        for change in planned.document.get("resource_changes", [])
        if "create" in change.get("change", {}).get("actions", [])
    )
    listed = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    ingress = planned.planned_resources("aws_vpc_security_group_ingress_rule")
    inbound = [r for r in planned.planned_resources("aws_security_group") if r["values"].get("ingress")]
    gate = (
        "no inbound rule" if not ingress and not inbound else f"{len(ingress) + len(inbound)} inbound rule(s)"
    )
    return f"creates {len(planned.creates)}: {listed}; {gate}"


def stack_instances(ec2: Any, name: str) -> list[InstanceInfo]:
    """Alive instances of the project launched from this stack's templates (or of unknown stack)."""
    alive = list_instances(ec2.describe_instances, alive_only=True)
    return [i for i in alive.values() if i.tags.get(STACK_TAG, name) == name]


def saved_target(state_dir: Path, region: str) -> AwsTarget:
    """Where the stack in `state_dir` was applied: AWS, or the emulator its saved variables name."""
    saved = Deployment(state_dir, AwsTarget(region)).saved_variables()
    endpoint, credentials = saved.get("endpoint"), saved.get("emulator_credentials")
    if not endpoint:
        return AwsTarget.real(region)
    if not isinstance(credentials, dict):
        raise InfraError(f"{state_dir}: the saved variables name emulator {endpoint} without its credentials")
    return AwsTarget.emulator(str(endpoint), region, (credentials["access_key"], credentials["secret_key"]))


def data_left(target: AwsTarget, bucket: str, repository: str) -> list[str]:
    """What a destroy would delete with the stack: objects in the bucket, images in the repository."""
    found = []
    if target.client("s3").list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount", 0):
        found.append(f"objects in s3://{bucket} (inputs, predictions)")
    ecr = target.client("ecr")
    with contextlib.suppress(ecr.exceptions.RepositoryNotFoundException):
        if ecr.list_images(repositoryName=repository, maxResults=1).get("imageIds"):
            found.append(f"images in the repository {repository}")
    return found


def destroy_stack(state_dir: Path, *, delete_data: bool = False) -> list[str]:
    region = saved_region(state_dir)
    if region is None:
        raise InfraError(f"{state_dir}: the saved variables have no region")
    deployment = Deployment(state_dir, saved_target(state_dir, region))
    name = str(deployment.saved_variables().get("name") or DEFAULT_STACK_NAME)
    ec2 = deployment.target.client("ec2")
    running = stack_instances(ec2, name)
    if running:
        listed = ", ".join(f"{i.instance_id} (job {i.job or '?'})" for i in running)
        raise InfraError(
            f"instances of stack {name} are alive: {listed}; let their job end (or stop it with Ctrl-C), "
            "then destroy again"
        )
    saved = deployment.saved_variables()
    if not saved.get("force_destroy"):
        left = data_left(deployment.target, str(saved["bucket_name"]), f"{name}-worker")
        if left and not delete_data:
            raise InfraError(
                f"the stack holds {' and '.join(left)}: copy what you need, then destroy with "
                "--delete-data (make destroy-real DELETE_DATA=1)"
            )
        if left:  # destroy deletes non-empty buckets and repositories only when the state says so
            deployment.apply({**saved, "force_destroy": True})
    removed = delete_roles_under(deployment.target.client("iam"), f"/spotbatch/{name}/")
    if removed:
        print(f"removed job roles left by killed runs: {', '.join(removed)}")
    deployment.destroy()
    return sorted(list_instances(ec2.describe_instances, alive_only=True))
