"""The ceiling against what running attempts really cost, not only what their launches were estimated at.

A launch reserves its estimate with the budget guard (`launcher.py`). A slow host, a stalled worker that
still beats, a boot that takes longer: an attempt can run past its estimate, and the actual spend then passes
the ceiling though every reservation fitted (measured: $0.0821 spent under a $0.07 ceiling). Each cycle this
watch prices every running attempt as if it were stopped now: its billing rule from its launch to now plus
`lead` (the time a stop takes to end the bill: the next cycle and the terminate); a warned attempt still
leaving (draining, or working on until its replacement beats) bills too, and is watched alike. Before that
passes what the guard holds for it, the reservation grows (by what is due, at least a quarter of what it
holds): the guard refuses growth that would pass the ceiling, and the attempt is then stopped at once (its
worker drains to its checkpoint), so its bill ends within what the guard held. The segment's next launch
asks the guard too, and fails with the figures when nothing is left.

A grown reservation is held under the attempt's label: the guard's spend log is the one record of what is
held for each attempt (this watch keeps none of its own). When the attempt ends, its actual settles the
first and the growth is settled at nothing (`AttemptBook.settle`; a restart's
`reconcile.settle_reservations` does the same for what a kill left).

Usage::

    watch = SpendWatch(table, guard, quotes, clock, lead_seconds=clock.cloud(2 * spec.cycle_seconds))
    watch.check()                                   # each cycle, before launches
"""

from __future__ import annotations

import logging

from coordinator.cost.billing import billed_seconds, cost_usd
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.errors import BudgetGuardExceeded
from coordinator.job.core import CloudClock
from coordinator.job.loop.segment_table import SegmentTable

GROWTH = 0.25  # a reservation grows by at least this share of what it holds: few log lines per attempt
log = logging.getLogger("coordinator.budget")


class SpendWatch:
    def __init__(
        self,
        table: SegmentTable,
        guard: BudgetGuard,
        quotes: JobQuotes,
        clock: CloudClock,
        *,
        lead_seconds: float,
    ) -> None:
        self._table, self._guard, self._quotes, self._clock = table, guard, quotes, clock
        self.lead = lead_seconds

    def check(self) -> None:
        running = [a for a in self._table.watched() if not self._table.budget_stopped(a)]
        if not running:
            return
        reservations = self._guard.state().reservations
        now = self._clock.now()
        for attempt in running:
            assert attempt.launched_at is not None  # active: launched
            label = attempt.budget_label
            quote = self._quotes.of(attempt.market, attempt.instance_type)
            seconds = billed_seconds(quote.billing, attempt.launched_at, now + self.lead)
            due = cost_usd(quote.rate_usd_per_hour, seconds)
            held = sum(r.estimate for r in reservations.get(label, []))
            if due <= held:
                continue
            more = max(due - held, GROWTH * held)
            try:
                self._guard.authorize(label, more)
            except BudgetGuardExceeded as refusal:
                self._table.stop_for_budget(
                    attempt,
                    f"it has cost ${due:.4f}, the guard holds ${held:.4f} for it and will not hold "
                    f"${more:.4f} more: {refusal}",
                )
                continue
            log.info(
                "%s: %s has cost $%.4f; the guard now holds $%.4f for it",
                attempt.segment_id,
                label,
                due,
                held + more,
            )
