"""The ceiling against what running attempts really cost, not only what their launches were estimated at.

A launch reserves its estimate with the budget guard (`attempts.py`). A slow host, a stalled worker that
still beats, a boot that takes longer: an attempt can run past its estimate, and the actual spend then passes
the ceiling though every reservation fitted (measured: $0.0821 spent under a $0.07 ceiling). Each cycle this
watch prices every running attempt as if it were stopped now: its billing rule from its launch to now plus
`lead` (the time a stop takes to end the bill: the next cycle and the terminate). Before that passes what
the guard holds for it, the reservation grows (by what is due, at least a quarter of what it holds): the
guard refuses growth that would pass the ceiling, and the attempt is then stopped at once (its worker
drains to its checkpoint), so its bill ends within what the guard held. The segment's next launch asks the
guard too, and fails with the figures when nothing is left.

A grown reservation is held under the attempt's label; when the attempt ends, its actual settles the first
and the growth is settled at nothing (a restart's `reconcile.settle_reservations` does the same for what a
kill left).

Usage::

    watch = SpendWatch(book, lead_seconds=clock.cloud(2 * spec.cycle_seconds))   # hooked to the book's ends
    watch.check()                                   # each cycle, before launches
"""

from __future__ import annotations

import logging

from coordinator.cost.billing import billed_seconds, cost_usd
from coordinator.errors import BudgetGuardExceeded
from coordinator.job.loop.attempt_book import AttemptBook, attempt_label
from coordinator.job.loop.monitor import ActiveAttempt

GROWTH = 0.25  # a reservation grows by at least this share of what it holds: few log lines per attempt
log = logging.getLogger("coordinator.budget")


class SpendWatch:
    def __init__(self, book: AttemptBook, *, lead_seconds: float) -> None:
        self.book, self.lead = book, lead_seconds
        self.held: dict[str, float] = {}  # label -> what the guard holds for it (all its reservations)
        self.grown: dict[str, int] = {}  # label -> reservations added to its launch's
        self.stopped: set[str] = set()  # labels refused more: their instance was told to stop
        book.on_end(self.attempt_ended)

    def check(self) -> None:
        book = self.book
        running = {t.budget_label: (segment, t) for segment, t in book.active.items()}
        unknown = [label for label in running if label not in self.held]
        if unknown:  # launched or adopted since the last look: what the guard holds for it
            reservations = book.guard.state().reservations
            for label in unknown:
                found = reservations.get(label, [])
                self.held[label] = sum(r.estimate for r in found)
                self.grown[label] = max(0, len(found) - 1)
        now = book.clock.now()
        for label, (segment, tracked) in running.items():
            if label in self.stopped:
                continue
            quote = book.quotes.of(tracked.active.market, tracked.instance_type)
            seconds = billed_seconds(quote.billing, tracked.launched_cloud, now + self.lead)
            due = cost_usd(quote.rate_usd_per_hour, seconds)
            held = self.held[label]
            if due <= held:
                continue
            more = max(due - held, GROWTH * held)
            try:
                book.guard.authorize(label, more)
            except BudgetGuardExceeded as refusal:
                self.stopped.add(label)
                book.fleet.terminate([tracked.active.instance_id])
                log.error(
                    "%s: stopping %s: it has cost $%.4f, the guard holds $%.4f for it and will not hold "
                    "$%.4f more: %s",
                    segment,
                    tracked.active.instance_id,
                    due,
                    held,
                    more,
                    refusal,
                )
                continue
            self.held[label] = held + more
            self.grown[label] = self.grown.get(label, 0) + 1
            log.info(
                "%s: %s has cost $%.4f; the guard now holds $%.4f for it", segment, label, due, held + more
            )

    def attempt_ended(self, attempt: ActiveAttempt, end_reason: str) -> None:
        """Its actual settled the launch's reservation; the growth is settled at nothing."""
        label = attempt_label(attempt.attempt_id, attempt.market)
        for _ in range(self.grown.pop(label, 0)):
            self.book.guard.record_actual(label, 0.0)
        self.held.pop(label, None)
        self.stopped.discard(label)
