"""The job's attempts as the ledger records them: every attempt that had an instance, priced.

Usage::

    records = attempt_records(state, spec, quotes)       # [AttemptRecord, ...] in launch order
"""

from __future__ import annotations

from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.ledger import AttemptRecord
from coordinator.cost.pricing import PriceQuote, PriceTable
from coordinator.job.spec import JobSpec
from coordinator.job.state import CoordinatorState

RECORD_COLUMNS = (  # the state's attempt columns a ledger record carries as they are
    *("segment_id", "attempt_id", "instance_id", "instance_type", "market", "launched_at", "ended_at"),
    *("billed_seconds", "cost_usd", "end_reason", "rows_kept", "rows_wasted", "rows_per_s", "heartbeat_puts"),
)


def attempt_records(
    state: CoordinatorState, spec: JobSpec, quotes: dict[str, PriceQuote]
) -> list[AttemptRecord]:
    """Every ended attempt that had an instance (failed launch calls had none and cost nothing)."""
    records = []
    table, job_quotes = PriceTable.load(), JobQuotes.single(quotes, spec.instance_type)
    for a in state.attempts(spec.job_id):
        if a.instance_id is None or a.ended_at is None:
            continue
        quote = job_quotes.of(a.market, a.instance_type)  # its own pool's type
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
