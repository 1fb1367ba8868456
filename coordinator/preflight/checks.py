"""Pre-flight: the checks a tired person would otherwise forget, run mechanically before any launch.

Each check returns PASS or FAIL with its reason. A launch path calls `require_preflight`, which refuses to
start while a check fails, unless that check is overridden with a reason; every override is appended to
the pre-flight log (JSONL) with the time and the reason.

Checks (names are what `--override NAME=REASON` takes):
- `no-stray-instances`: no pending/running instance tagged `Project=spotbatch` outside this job
- `budget-headroom`:    budget remaining >= estimate + 50%
- `auto-termination`:   instances carry a max-lifetime tag and terminate on shutdown
- `teardown-dry-run`:   `TerminateInstances` with `DryRun=True` is allowed on an instance of the project
                        (EC2 answers DryRunOperation); with none alive there is nothing to probe (a made-up
                        id proves nothing), and the fleet dry-runs the job's first instance instead
- `price-of-the-day`:   the price used is live, or the table's row is dated at most 30 days ago; recorded
- `vcpu-quota`:         the fleet fits in the account's vCPU quotas of the family (`quotas.py`; run only)
- `sync-allow-list`:    the payload folder (burst only) passes the allow-list
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.pricing import PriceQuote
from coordinator.errors import PreflightFailed
from coordinator.job.aws import InstanceInfo, list_instances
from coordinator.job.core import TAG_MAX_LIFETIME
from coordinator.preflight.allow_list import check_payload

BUDGET_HEADROOM = 0.5  # remaining must cover the estimate plus half again: estimates run low
PRICE_MAX_AGE_DAYS = 30  # a price table older than a month is not "the price of the day"
CHECK_NAMES = (
    "no-stray-instances",
    "budget-headroom",
    "auto-termination",
    "teardown-dry-run",
    "price-of-the-day",
    "sync-allow-list",
    "vcpu-quota",
)


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    passed: bool
    reason: str
    overridden: str = ""  # the reason given for overriding a failure

    @property
    def status(self) -> str:
        return "PASS" if self.passed else ("OVERRIDDEN" if self.overridden else "FAIL")


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchPlan:
    """What is about to be launched, as far as the checks need to know."""

    job_id: str
    estimate_usd: float
    price: PriceQuote
    shutdown_behavior: str  # "terminate" or "stop"
    max_lifetime_seconds: int | None
    sync_dir: Path | None = None


def check_no_stray_instances(job_id: str, alive: dict[str, InstanceInfo] | None) -> CheckResult:
    """`alive`: the project's live instances, None when they could not be listed."""
    if alive is None:  # no credentials, no endpoint: cannot prove the fleet is empty
        return CheckResult("no-stray-instances", False, "cannot list the project's instances")
    strays = [f"{i.instance_id} ({i.state}, job {i.job or '?'})" for i in alive.values() if i.job != job_id]
    if strays:
        reason = f"{len(strays)} instance(s) of the project alive: {', '.join(strays)}"
        return CheckResult("no-stray-instances", False, reason)
    return CheckResult("no-stray-instances", True, "no instance tagged Project=spotbatch is alive")


def check_budget_headroom(guard: BudgetGuard, estimate_usd: float) -> CheckResult:
    needed = estimate_usd * (1 + BUDGET_HEADROOM)
    remaining = guard.remaining
    reason = (
        f"remaining ${remaining:.2f}, estimate ${estimate_usd:.2f} + {BUDGET_HEADROOM:.0%} = ${needed:.2f}"
    )
    return CheckResult("budget-headroom", remaining >= needed, reason)


def check_auto_termination(plan: LaunchPlan) -> CheckResult:
    problems = []
    if plan.shutdown_behavior != "terminate":
        problems.append(f"shutdown behaviour is {plan.shutdown_behavior!r}, not 'terminate'")
    if not plan.max_lifetime_seconds or plan.max_lifetime_seconds <= 0:
        problems.append(f"no {TAG_MAX_LIFETIME} tag (instances could run forever)")
    if problems:
        return CheckResult("auto-termination", False, "; ".join(problems))
    return CheckResult(
        "auto-termination", True, f"terminate on shutdown, max lifetime {plan.max_lifetime_seconds} s"
    )


def check_teardown_dry_run(ec2: Any, project_instances: list[str]) -> CheckResult:
    """A dry run of `TerminateInstances` on an instance of the project, if one is alive. An id that does not
    exist proves nothing (EC2 answers NotFound, or UnauthorizedOperation where the policy terminates only
    instances tagged Project=spotbatch), so without one the check passes with that note, and the fleet
    dry-runs the job's first instance before it launches another (`Fleet.launch_placed`)."""
    if not project_instances:
        return CheckResult(
            "teardown-dry-run",
            True,
            "no instance of the project to dry-run against (a made-up id proves nothing); "
            "checked on the job's first instance before any other launch",
        )
    return teardown_probe(ec2, project_instances[0])


def teardown_probe(ec2: Any, instance_id: str) -> CheckResult:
    """`TerminateInstances(DryRun=True)` on one instance: PASS on DryRunOperation, FAIL naming the action."""
    from botocore.exceptions import ClientError

    try:
        ec2.terminate_instances(InstanceIds=[instance_id], DryRun=True)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "DryRunOperation":
            return CheckResult(
                "teardown-dry-run", True, f"TerminateInstances dry run on {instance_id}: allowed"
            )
        return CheckResult(
            "teardown-dry-run",
            False,
            f"TerminateInstances dry run on {instance_id} (tagged Project=spotbatch): {code}: these "
            "credentials may not call ec2:TerminateInstances on the project's instances "
            "(coordinator-policy.json, TerminateOnlyTheProject)",
        )
    except Exception as error:
        return CheckResult("teardown-dry-run", False, f"TerminateInstances dry run failed: {error}")
    return CheckResult(
        "teardown-dry-run", False, "TerminateInstances dry run answered without DryRunOperation"
    )


def check_price_of_the_day(plan: LaunchPlan, today: date | None = None) -> CheckResult:
    today = today or datetime.now(UTC).date()
    rate = f"${plan.price.rate_usd_per_hour:.4f}/h ({plan.price.source})"
    if plan.price.live:
        return CheckResult("price-of-the-day", True, f"live price {rate}")
    snapshot = plan.price.snapshot_date
    if snapshot is None:
        return CheckResult(
            "price-of-the-day", False, f"table price of unknown date: {rate}; use --live-prices"
        )
    age = (today - snapshot).days
    return CheckResult(
        "price-of-the-day",
        age <= PRICE_MAX_AGE_DAYS,
        f"table price dated {snapshot.isoformat()} ({age} days old, limit {PRICE_MAX_AGE_DAYS}): {rate}",
    )


def check_sync_allow_list(plan: LaunchPlan) -> CheckResult:
    if plan.sync_dir is None:
        return CheckResult("sync-allow-list", True, "nothing is synced (EC2 workers read from the bucket)")
    problems = check_payload(plan.sync_dir)
    if problems:
        return CheckResult(
            "sync-allow-list", False, "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else "")
        )
    return CheckResult("sync-allow-list", True, f"{plan.sync_dir} is an allow-listed payload folder")


def project_instances(ec2: Any) -> dict[str, InstanceInfo] | None:
    """The project's live instances (tagged Project=spotbatch); None if they cannot be listed."""
    try:
        return list_instances(ec2.describe_instances, alive_only=True)
    except Exception:
        return None


def run_preflight(plan: LaunchPlan, *, ec2: Any, guard: BudgetGuard) -> list[CheckResult]:
    alive = project_instances(ec2)
    return [
        check_no_stray_instances(plan.job_id, alive),
        check_budget_headroom(guard, plan.estimate_usd),
        check_auto_termination(plan),
        check_teardown_dry_run(ec2, sorted(alive or {})),
        check_price_of_the_day(plan),
        check_sync_allow_list(plan),
    ]


def parse_overrides(values: Sequence[str]) -> dict[str, str]:
    overrides = {}
    for value in values:
        name, _, reason = value.partition("=")
        if not name or not reason.strip():
            raise PreflightFailed(f"--override {value!r}: use NAME=REASON (a reason is required)")
        overrides[name] = reason.strip()
    return overrides


def apply_overrides(
    results: list[CheckResult], overrides: dict[str, str], log_path: Path
) -> list[CheckResult]:
    """Mark overridden failures, append each override to the log, and raise if any failure is left."""
    names = {r.name for r in results}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise PreflightFailed(
            f"unknown check(s) to override: {', '.join(unknown)}; checks are {', '.join(sorted(names))}"
        )
    final = []
    for result in results:
        if not result.passed and result.name in overrides:
            result = CheckResult(result.name, False, result.reason, overrides[result.name])
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "a", encoding="utf-8") as log:
                entry = {"ts": datetime.now(UTC).isoformat(), "override": asdict(result)}
                log.write(json.dumps(entry) + "\n")
        final.append(result)
    return final


def require_preflight(results: list[CheckResult]) -> None:
    failed = [r for r in results if r.status == "FAIL"]
    if failed:
        raise PreflightFailed(
            "pre-flight failed: "
            + "; ".join(f"{r.name}: {r.reason}" for r in failed)
            + " (fix it, or --override NAME=REASON to proceed on the record)"
        )


def format_results(results: list[CheckResult], target: str = "") -> str:
    """One line per check; `target` (`AwsTarget.describe`: AWS, an endpoint, an emulator) heads them."""
    width = max(len(r.name) for r in results)
    lines = [f"pre-flight against {target}:"] if target else []
    for r in results:
        extra = f" [override: {r.overridden}]" if r.overridden else ""
        lines.append(f"{r.status:<10} {r.name:<{width}}  {r.reason}{extra}")
    return "\n".join(lines)
