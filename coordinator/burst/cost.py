"""What a burst cost: from boot to teardown at the rented box's rate, into the ledger, MLflow and the budget.

`log_burst_cost(rate_per_gpu_hr, gpu_count, boot_utc_iso, teardown_utc_iso, provider, instance_type)` bills
the lifetime by the provider's rule (Lambda: per minute), appends one `{"kind": "burst", ...}` line to the
ledger (JSONL, append-only) and logs the same figures as an MLflow run (params: provider, type, GPUs, rate,
boot and teardown; metrics: billable hours, cost). The caller records the actual with the budget guard.
Both timestamps are the provider's own clock (the HTTP Date of its launch and terminate answers).

Usage::

    cost = log_burst_cost(1.79, 1, "2026-12-02T18:00:03Z", "2026-12-02T18:21:40Z", "lambda",
                          "gpu_1x_a100_sxm4_80gb", ledger_path=run / "ledger.jsonl", tracking_uri=uri)
    cost.billable_hours, cost.cost_usd          # 0.3667 h (22 minutes), $0.66
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from coordinator.cost.billing import PER_MINUTE, BillingRule, billed_seconds, cost_usd
from coordinator.cost.ledger import use_experiment
from coordinator.errors import BurstCostError


@dataclass(frozen=True, slots=True)
class BurstCost:
    provider: str
    instance_type: str
    gpu_count: int
    rate_per_gpu_hr: float
    boot_utc: str
    teardown_utc: str
    billing: str
    billable_hours: float
    cost_usd: float


def _parse(field: str, value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BurstCostError(f"{field}={value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise BurstCostError(f"{field}={value!r} has no time zone; give UTC (…Z)")
    return moment


def price_burst(
    rate_per_gpu_hr: float,
    gpu_count: int,
    boot_utc_iso: str,
    teardown_utc_iso: str,
    provider: str,
    instance_type: str,
    billing: BillingRule = PER_MINUTE,
) -> BurstCost:
    if not rate_per_gpu_hr > 0:
        raise BurstCostError(f"rate_per_gpu_hr={rate_per_gpu_hr} must be positive")
    if gpu_count < 1:
        raise BurstCostError(f"gpu_count={gpu_count} must be at least 1")
    boot, teardown = _parse("boot_utc_iso", boot_utc_iso), _parse("teardown_utc_iso", teardown_utc_iso)
    if teardown < boot:
        raise BurstCostError(f"teardown {teardown_utc_iso} is before boot {boot_utc_iso}")
    seconds = billed_seconds(billing, boot.timestamp(), teardown.timestamp())
    return BurstCost(
        provider,
        instance_type,
        gpu_count,
        rate_per_gpu_hr,
        boot_utc_iso,
        teardown_utc_iso,
        billing.name,
        round(seconds / 3600, 6),
        round(cost_usd(rate_per_gpu_hr * gpu_count, seconds), 6),
    )


def log_burst_cost(
    rate_per_gpu_hr: float,
    gpu_count: int,
    boot_utc_iso: str,
    teardown_utc_iso: str,
    provider: str,
    instance_type: str,
    *,
    ledger_path: Path,
    tracking_uri: str | None,
    run_name: str = "burst",
    billing: BillingRule = PER_MINUTE,
) -> BurstCost:
    cost = price_burst(
        rate_per_gpu_hr, gpu_count, boot_utc_iso, teardown_utc_iso, provider, instance_type, billing
    )
    ledger_path.parent.mkdir(parents=True, exist_ok=True)
    with open(ledger_path, "a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({"kind": "burst", "run": run_name, **asdict(cost)}) + "\n")
    if tracking_uri:
        _log_mlflow(cost, tracking_uri, run_name)
    return cost


def _log_mlflow(cost: BurstCost, tracking_uri: str, run_name: str) -> None:
    import mlflow

    with use_experiment("spotbatch-burst", tracking_uri), mlflow.start_run(run_name=run_name):
        mlflow.log_params(
            {
                "provider": cost.provider,
                "instance_type": cost.instance_type,
                "gpu_count": cost.gpu_count,
                "rate_per_gpu_hr": cost.rate_per_gpu_hr,
                "boot_utc": cost.boot_utc,
                "teardown_utc": cost.teardown_utc,
                "billing": cost.billing,
            }
        )
        mlflow.log_metrics({"billable_hours": cost.billable_hours, "cost_usd": cost.cost_usd})
