from datetime import date

from coordinator.cost.billing import EC2_LINUX
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.pricing import PriceQuote


def quote(rate: float) -> PriceQuote:
    return PriceQuote(rate, "test", EC2_LINUX, date(2026, 1, 1))


def test_a_mapping_of_the_first_type_and_each_attempts_own_type() -> None:
    quotes = JobQuotes(
        {
            ("spot", "c7i.xlarge"): quote(0.07),
            ("on-demand", "c7i.xlarge"): quote(0.18),
            ("spot", "m7i.xlarge"): quote(0.09),
            ("on-demand", "m7i.xlarge"): quote(0.20),
        },
        "c7i.xlarge",
    )
    assert set(quotes) == {"spot", "on-demand"} and quotes["spot"].rate_usd_per_hour == 0.07
    assert quotes.of("spot", "m7i.xlarge").rate_usd_per_hour == 0.09
    assert quotes.of("spot", "t3.medium").rate_usd_per_hour == 0.07  # not the job's: the first type's
    assert quotes.dearest("spot").rate_usd_per_hour == 0.09  # what a launch reserves
    assert JobQuotes.single(quotes, "x") is quotes
    single = JobQuotes.single({"spot": quote(0.07)}, "c7i.xlarge")
    assert single.of("spot", "c7i.xlarge").rate_usd_per_hour == 0.07
