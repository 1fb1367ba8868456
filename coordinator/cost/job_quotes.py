"""A job's prices when it may run on several instance types: one quote per (market, type).

As a mapping it is what every caller had before pools: `quotes["spot"]` is the quote of the job's first
type (the stack's), used for the job as a whole (the what-if, the report's all-on-demand baseline,
pre-flight). An attempt is priced by its own pool's type (`of`), and a launch reserves budget at the
dearest of the job's types for its market (`dearest`): the pool is known only once EC2 answers.

Usage::

    quotes = JobQuotes({("spot", "c7i.xlarge"): q1, ("on-demand", "c7i.xlarge"): q2, ...}, "c7i.xlarge")
    quotes["spot"]                        # the first type's
    quotes.of("spot", "m7i.xlarge")       # an attempt's own
    quotes.dearest("spot")                # what a launch reserves
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.cost.pricing import PriceQuote


class JobQuotes(dict[str, PriceQuote]):
    def __init__(self, by_pool: Mapping[tuple[str, str], PriceQuote], first_type: str) -> None:
        super().__init__({market: q for (market, kind), q in by_pool.items() if kind == first_type})
        self.by_type = dict(by_pool)
        self.first_type = first_type

    @classmethod
    def single(cls, quotes: Mapping[str, PriceQuote], instance_type: str) -> JobQuotes:
        """One type's quotes by market (a job without other types)."""
        if isinstance(quotes, JobQuotes):
            return quotes
        return cls({(market, instance_type): q for market, q in quotes.items()}, instance_type)

    def of(self, market: str, instance_type: str) -> PriceQuote:
        """The quote of `market` for `instance_type` (the first type's for a type the job does not have: an
        attempt recorded before its type was)."""
        return self.by_type.get((market, instance_type)) or self[market]

    def dearest(self, market: str) -> PriceQuote:
        return max(
            (q for (m, _), q in self.by_type.items() if m == market), key=lambda q: q.rate_usd_per_hour
        )
