"""Pre-flight: will the fleet fit in the account's vCPU quotas for the type's family, spot and on-demand?

EC2 limits running instances by vCPUs per group of families and per market (Service Quotas codes below):
a job of N segments may run N instances at once, in either market, so each market's quota must hold N x
the type's vCPUs on top of what the account already runs in that group. The quota is read with
`GetServiceQuota` (the applied value, or AWS's default when none was applied). An endpoint that does not
know the quota (moto has no EC2 quotas: `NoSuchResourceException`) leaves the check passing with a note;
a launch then tells `VcpuLimitExceeded` apart and stops the job.

Usage::

    result = check_vcpu_quotas(quotas_client, ec2, instance_type="g5.xlarge", vcpus=4, instances=10)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from coordinator.job.aws import GONE_STATES, error_code, raise_for_setup
from coordinator.preflight.checks import CheckResult

CHECK = "vcpu-quota"
# family group -> (on-demand quota code, spot quota code), from the EC2 quotas in Service Quotas
QUOTA_CODES = {
    "standard": ("L-1216C47A", "L-34B43A08"),  # A, C, D, H, I, M, R, T, Z
    "g": ("L-DB2E81BA", "L-3819A6DF"),  # G and VT
    "p": ("L-417A185B", "L-7212CCBC"),
    "inf": ("L-1945791B", "L-B5D1601B"),
    "trn": ("L-2C3B7624", "L-6B0D517C"),
    "x": ("L-7295265B", "L-E3A00192"),
    "f": ("L-74FC7D96", "L-88CF9481"),
    "dl": ("L-6E869C2A", "L-85EED4F7"),
}
STANDARD = frozenset("acdhimrtz")


def family_group(instance_type: str) -> str:
    family = instance_type.split(".")[0]
    for prefix in ("inf", "trn", "dl", "vt"):
        if family.startswith(prefix):
            return "g" if prefix == "vt" else prefix
    letter = family[:1]
    return "standard" if letter in STANDARD else letter


@dataclass(frozen=True, slots=True)
class Quota:
    market: str
    code: str
    value: float | None  # None: the endpoint does not report it


def read_quota(quotas: Any, code: str) -> float | None:
    """The account's value (AWS answers the default when nothing was applied); None if unknown here."""
    try:
        return float(quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code)["Quota"]["Value"])
    except ClientError as error:
        if error_code(error) == "NoSuchResourceException":
            return None
        raise_for_setup(error, "servicequotas", "pre-flight (vCPU quota)")
        raise


def vcpus_in_use(ec2: Any, group: str) -> dict[str, int]:
    """vCPUs the account runs now in the group, per market (what the quota already holds)."""
    used = {"on-demand": 0, "spot": 0}
    for page in ec2.get_paginator("describe_instances").paginate():
        for reservation in page["Reservations"]:
            for instance in reservation["Instances"]:
                if (
                    instance["State"]["Name"] in GONE_STATES
                    or family_group(instance["InstanceType"]) != group
                ):
                    continue
                cpu = instance.get("CpuOptions", {})
                count = int(cpu.get("CoreCount", 0)) * int(cpu.get("ThreadsPerCore", 1))
                used["spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand"] += count
    return used


def check_vcpu_quotas(
    quotas: Any, ec2: Any, *, instance_type: str, vcpus: int, instances: int, markets: tuple[str, ...]
) -> CheckResult:
    group = family_group(instance_type)
    codes = dict(zip(("on-demand", "spot"), QUOTA_CODES.get(group, ("", "")), strict=True))
    needed = vcpus * instances
    used = vcpus_in_use(ec2, group)
    problems: list[str] = []
    notes: list[str] = []
    fits, requests = instances, []
    for market in markets:
        code = codes[market]
        value = read_quota(quotas, code) if code else None
        if value is None:
            notes.append(f"{market} quota {code or group} not reported here")
            continue
        free = value - used[market]
        line = f"{market} {group} ({code}): {needed} vCPUs needed, {free:g} of {value:g} free"
        if needed > free:
            problems.append(line)
            fits = min(fits, max(0, int(free // vcpus)))
            requests.append(f"--quota-code {code} --desired-value {math.ceil(used[market] + needed)}")
        else:
            notes.append(line)
    if problems:
        return CheckResult(CHECK, False, "; ".join(problems) + f" ({advice(instance_type, fits, requests)})")
    return CheckResult(CHECK, True, f"{instances} x {instance_type} ({vcpus} vCPUs): " + "; ".join(notes))


def advice(instance_type: str, fits: int, requests: list[str]) -> str:
    """What to do about a quota too small: the instances that fit at once (the job's cap), and the
    request for what the job asked (new accounts start at 5-32 standard vCPUs, and 0 for G and VT)."""
    ask = "; ".join(
        f"aws service-quotas request-service-quota-increase --service-code ec2 {r}" for r in requests
    )
    if fits >= 1:
        cap = f"MAX_INSTANCES={fits} (--max-instances {fits}: the other segments wait their turn)"
        return f"run at most {fits} instances at once: {cap}, or request more in Service Quotas: {ask}"
    return f"no {instance_type} fits in the free quota: request more in Service Quotas: {ask}"
