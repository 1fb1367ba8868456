"""State-file rows as the tests need them: an attempt launched on an instance, without a state file."""

from __future__ import annotations

from coordinator.cost.pricing import Market
from coordinator.job.core.tables import AttemptRow


def launched_attempt(
    segment: str = "seg-0000",
    number: int = 1,
    *,
    instance_id: str | None = None,
    market: Market = "spot",
    launched_at: float = 0.0,
    job_id: str = "j",
    zone: str = "",
) -> AttemptRow:
    """Attempt `number` of `segment`, open, on instance `i-<number>` unless named."""
    return AttemptRow(
        attempt_id=f"{job_id}/{segment}/{number}",
        job_id=job_id,
        segment_id=segment,
        market=market,
        instance_type="c7i.xlarge",
        instance_id=instance_id or f"i-{number}",
        launched_at=launched_at,
        ended_at=None,
        end_reason=None,
        rows_kept=0,
        rows_wasted=0,
        rows_per_s=0.0,
        billed_seconds=None,
        cost_usd=None,
        heartbeat_puts=0,
        zone=zone,
    )
