"""The job's attempts as the ledger records them: every attempt that had an instance, priced by its own
pool's quote (the CPU and memory each used are filled in by `aws/attempt_usage.py`).

Usage::

    records = ledger_records(table.attempts(), spec, quotes)     # [AttemptRecord, ...] in launch order
"""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.ledger import AttemptRecord
from coordinator.cost.pricing import PriceTable
from coordinator.job.core import AttemptRow, JobSpec

RECORD_COLUMNS = (  # the state's attempt columns a ledger record carries as they are
    *("segment_id", "attempt_id", "instance_id", "instance_type", "market", "launched_at", "ended_at"),
    *("billed_seconds", "cost_usd", "end_reason", "rows_kept", "rows_wasted", "rows_per_s", "heartbeat_puts"),
)


def ledger_records(attempts: Iterable[AttemptRow], spec: JobSpec, quotes: JobQuotes) -> list[AttemptRecord]:
    """Every ended attempt that had an instance (failed launch calls had none and cost nothing)."""
    records = []
    table = PriceTable.load()
    for a in attempts:
        if a.instance_id is None or a.ended_at is None:
            continue
        quote = quotes.of(a.market, a.instance_type)  # its own pool's type
        records.append(
            AttemptRecord(
                job_id=spec.job_id,
                provider=spec.provider,
                region=spec.region,
                gpus=table.gpus(spec.provider, a.instance_type),
                rate_usd_per_hour=quote.rate_usd_per_hour,
                price_source=quote.source,
                billing=quote.billing.name,
                **{column: getattr(a, column) for column in RECORD_COLUMNS},
            )
        )
    return records
