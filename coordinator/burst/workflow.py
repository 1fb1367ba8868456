"""The burst workflow: one rented GPU box, from launch to confirmed-gone, with its cost on the record.

Steps (each logged with its time since the start to stdout and `<run dir>/burst.log`):

1. pre-flight: budget headroom, price date, payload allow-list, no other burst box alive, the type and
   region have capacity; then `BudgetGuard.authorize(label, rate x GPUs x planned hours + margin)`;
2. launch: `instance.json` is written before the call (name, no id yet) and again with the id and the boot
   time (the provider's Date on its answer) before anything else can fail; a launch that failed after the
   provider may have created the box is resolved by listing boxes by name;
3. wait for `active` and for SSH, within `boot_timeout`;
4. parity: the fingerprint here and on the box must agree, else the run is void;
5. sync: the file list is printed, then exactly those files go by rsync (the payload passed the allow-list);
6. smoke run, then the job;
7. pull back the listed artifacts if their total size is under the cap;
8. always, from the moment a box may exist (failure, Ctrl-C, SIGTERM included): terminate (retried), re-list
   until it is gone or `terminated`, record the teardown time, price boot -> teardown into the ledger and
   MLflow, `record_actual` with the budget guard, and compare with the estimate.

The steps on the box are in `on_box.py`, the teardown (step 8) in `teardown.py`, which `burst_down`
also runs alone, from `instance.json`, for a run whose process died.

Errors: `BurstFailed` (a step failed; the box is gone), `ParityMismatch` (what differs), plus the provider's
and the pre-flight's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from coordinator.burst.burst_state import BURST_PREFIX, BurstPlan, BurstState, StepLog, now_iso
from coordinator.burst.cost import BurstCost
from coordinator.burst.on_box import work_on_the_box
from coordinator.burst.payload import (
    BURST_ALLOW,
)
from coordinator.burst.providers.base import GONE, GpuCloud
from coordinator.burst.teardown import teardown
from coordinator.cost.budget import BudgetGuard
from coordinator.errors import (
    BurstFailed,
    LaunchUnconfirmed,
    ProviderError,
    SpotbatchError,
)
from coordinator.preflight.allow_list import check_payload
from coordinator.preflight.checks import (
    PRICE_MAX_AGE_DAYS,
    CheckResult,
    apply_overrides,
    check_budget_headroom,
    require_preflight,
)


@dataclass(frozen=True, slots=True)
class BurstOutcome:
    state: BurstState
    cost: BurstCost | None
    artifacts: Path


def preflight(plan: BurstPlan, cloud: GpuCloud, guard: BudgetGuard) -> list[CheckResult]:
    results = [check_budget_headroom(guard, plan.estimate_usd)]
    age = (datetime.now(UTC).date() - plan.price_date).days
    results.append(
        CheckResult(
            "price-of-the-day",
            age <= PRICE_MAX_AGE_DAYS,
            f"${plan.rate_per_gpu_hour:.2f}/GPU-h dated {plan.price_date} ({age} days old, limit "
            f"{PRICE_MAX_AGE_DAYS})",
        )
    )
    problems = check_payload(plan.payload, BURST_ALLOW)
    results.append(
        CheckResult(
            "sync-allow-list",
            not problems,
            "; ".join(problems[:5]) or f"{plan.payload}: every file on the allow-list",
        )
    )
    strays = [
        f"{i.id} ({i.name}, {i.status})"
        for i in cloud.instances()
        if i.name.startswith(BURST_PREFIX) and i.status not in GONE
    ]
    results.append(
        CheckResult(
            "no-stray-instances",
            not strays,
            f"burst boxes alive: {', '.join(strays)}" if strays else "no burst box is alive",
        )
    )
    offer = cloud.instance_types().get(plan.instance_type)
    if offer is None:
        results.append(CheckResult("capacity", False, f"{plan.provider} sells no {plan.instance_type}"))
    else:
        has = plan.region in offer.regions_with_capacity
        where = ", ".join(offer.regions_with_capacity) or "nowhere"
        results.append(CheckResult("capacity", has, f"{plan.instance_type} has capacity in {where}"))
    return results


def run_burst(
    plan: BurstPlan,
    cloud: GpuCloud,
    guard: BudgetGuard,
    *,
    tracking_uri: str | None,
    out: TextIO | None = None,
) -> BurstOutcome:
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    step = StepLog(plan.run_dir / "burst.log", out)
    step(plan.describe())
    results = apply_overrides(preflight(plan, cloud, guard), plan.overrides, plan.run_dir / "preflight.jsonl")
    for result in results:
        step(f"pre-flight {result.status:<10} {result.name}: {result.reason}")
    require_preflight(results)
    guard.authorize(plan.label, plan.estimate_usd)
    step(f"budget guard: authorized ${plan.estimate_usd:.2f} ({guard.remaining:.2f} left of the ceiling)")
    state = BurstState(
        plan.name,
        plan.provider,
        plan.instance_type,
        plan.region,
        plan.gpus,
        plan.rate_per_gpu_hour,
        plan.label,
    )
    state.save(plan.run_dir)
    try:
        _launch(plan, cloud, state, step)
        work_on_the_box(plan, cloud, state, step)
    except LaunchUnconfirmed as error:
        step(f"launch unconfirmed ({error}); looking for a box named {plan.name}")
        found = [i for i in cloud.instances() if i.name == plan.name and i.status not in GONE]
        if found:
            state.instance_id, state.boot_utc, state.status = found[0].id, now_iso(), "launched"
            state.save(plan.run_dir)
            step(f"found {found[0].id}: it exists after all; tearing it down (boot time: when it was found)")
        teardown(plan.run_dir, cloud, guard, step, tracking_uri=tracking_uri)
        raise BurstFailed(f"launch failed: {error}") from None
    except BaseException as error:  # Ctrl-C and SIGTERM too: nothing may keep running
        step(f"FAILED: {type(error).__name__}: {error}")
        teardown(plan.run_dir, cloud, guard, step, tracking_uri=tracking_uri)
        if isinstance(error, ProviderError | SpotbatchError) and not isinstance(error, BurstFailed):
            raise BurstFailed(f"{type(error).__name__}: {error}") from None
        raise
    cost = teardown(plan.run_dir, cloud, guard, step, tracking_uri=tracking_uri)
    return BurstOutcome(BurstState.load(plan.run_dir), cost, plan.run_dir / "artifacts")


def _launch(plan: BurstPlan, cloud: GpuCloud, state: BurstState, step: StepLog) -> None:
    """The launch call; its id and boot time (the provider's clock) are saved before anything can fail."""
    launched = cloud.launch(
        instance_type=plan.instance_type,
        region=plan.region,
        ssh_key_name=plan.ssh_key_name,
        name=plan.name,
    )
    state.instance_id, state.boot_utc, state.status = launched.instance_id, launched.requested_at, "launched"
    state.save(plan.run_dir)
    step(
        f"launched {launched.instance_id} at {launched.requested_at} (provider's clock); recorded in "
        "instance.json"
    )
