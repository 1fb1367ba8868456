"""The end of every burst: terminate, confirm gone, price boot -> teardown, record it. Idempotent.

It runs from the moment a box may exist, whatever failed (Ctrl-C and SIGTERM included), and again from
`instance.json` alone (`burst_down`, `spotbatch burst down`) for a run whose process died: the cost is
logged once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from coordinator.burst.burst_state import BurstState, StepLog, now_iso
from coordinator.burst.cost import BurstCost, log_burst_cost
from coordinator.burst.providers.base import GONE, GpuCloud
from coordinator.cost.budget import BudgetGuard
from coordinator.errors import BurstFailed, ProviderError

TERMINATE_ATTEMPTS = 5  # a terminate that fails is retried this often before a human is told loudly
GONE_TIMEOUT_SECONDS = 300.0  # terminating -> terminated takes seconds to a minute
COST_TOLERANCE = 1.0  # an actual above the estimate (which has its margin) is reported as an overrun


def teardown(
    run_dir: Path,
    cloud: GpuCloud,
    guard: BudgetGuard,
    step: Callable[[str], None],
    *,
    tracking_uri: str | None,
) -> BurstCost | None:
    """Terminate, confirm gone, price and record. Idempotent: a second call after success does nothing new."""
    state = BurstState.load(run_dir)
    if state.instance_id is None:
        found = [i for i in cloud.instances() if i.name == state.name and i.status not in GONE]
        if not found:
            guard.record_actual(state.label, 0.0)
            state.status = "cost-logged"
            state.cost_usd = 0.0
            state.save(run_dir)
            step(f"no box named {state.name} exists: nothing to tear down, $0 recorded")
            return None
        state.instance_id, state.boot_utc = found[0].id, state.boot_utc or now_iso()
        state.save(run_dir)
    if state.status != "cost-logged":
        if state.teardown_utc is None:
            state.teardown_utc = _terminate(cloud, state.instance_id, step)
            state.save(run_dir)
        _confirm_gone(cloud, state.instance_id, step)
        state.status = "gone"
        state.save(run_dir)
    if state.status == "cost-logged" or state.boot_utc is None or state.teardown_utc is None:
        return None
    cost = log_burst_cost(
        state.rate_per_gpu_hour,
        state.gpus,
        state.boot_utc,
        state.teardown_utc,
        state.provider,
        state.instance_type,
        ledger_path=run_dir / "ledger.jsonl",
        tracking_uri=tracking_uri,
        run_name=state.name,
    )
    reserved = guard.state().open_reservations.get(state.label)
    estimate = reserved[0] if reserved else None
    guard.record_actual(state.label, cost.cost_usd)
    state.cost_usd, state.status = cost.cost_usd, "cost-logged"
    state.save(run_dir)
    check = ""
    if estimate:
        over = cost.cost_usd > estimate * COST_TOLERANCE
        check = f"; estimate ${estimate:.2f}: {'OVER the estimate' if over else 'within it'}"
    step(
        f"cost: {cost.billable_hours:.4f} billable h ({cost.billing}) x ${state.rate_per_gpu_hour:.2f} x "
        f"{state.gpus} GPU = ${cost.cost_usd:.4f}{check}; ledger {run_dir / 'ledger.jsonl'}"
    )
    return cost


def _terminate(cloud: GpuCloud, instance_id: str, step: Callable[[str], None]) -> str:
    for attempt in range(1, TERMINATE_ATTEMPTS + 1):
        try:
            answered = cloud.terminate([instance_id])
            step(f"terminate {instance_id}: accepted at {answered} (provider's clock)")
            return answered
        except ProviderError as error:
            step(f"terminate {instance_id} failed (try {attempt} of {TERMINATE_ATTEMPTS}): {error}")
            if attempt == TERMINATE_ATTEMPTS:
                raise BurstFailed(
                    f"COULD NOT TERMINATE {instance_id}: it may still be billing. Run `spotbatch burst down` "
                    "or terminate it in the provider's console now"
                ) from error
            time.sleep(min(30.0, 2.0**attempt))
    raise AssertionError("unreachable")


def _confirm_gone(cloud: GpuCloud, instance_id: str, step: Callable[[str], None]) -> None:
    deadline = time.monotonic() + GONE_TIMEOUT_SECONDS
    while True:
        box = cloud.instance(instance_id)
        listed = [i for i in cloud.instances() if i.id == instance_id and i.status not in GONE]
        if (box is None or box.status in GONE) and not listed:
            step(
                f"re-listed: {instance_id} is {box.status if box else 'not found'} and not among the live "
                "boxes"
            )
            return
        if time.monotonic() > deadline:
            raise BurstFailed(
                f"{instance_id} still {box.status if box else 'listed'} {GONE_TIMEOUT_SECONDS:g} s after "
                "terminate"
            )
        time.sleep(1.0)


def burst_down(
    run_dir: Path, cloud: GpuCloud, guard: BudgetGuard, *, tracking_uri: str | None, out: TextIO | None = None
) -> BurstCost | None:
    """Teardown of a run whose process is gone, from its `instance.json`."""
    step = StepLog(run_dir / "burst.log", out)
    step(f"burst down: {run_dir / 'instance.json'}")
    return teardown(run_dir, cloud, guard, step, tracking_uri=tracking_uri)
