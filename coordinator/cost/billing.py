"""Billing rules as code: how a provider turns an instance's lifetime into billed seconds.

EC2 Linux bills per second with a 60-second minimum, from boot (the instance entering `pending`/`running`)
to termination: not busy time. Other providers bill per minute or per hour; each price-table row names
its rule.

Usage::

    seconds = billed_seconds(EC2_LINUX, launched_at, ended_at)    # 61.2 s -> 62; 12 s -> 60
    dollars = cost_usd(rate_per_hour=0.17, seconds=seconds)
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BillingRule:
    name: str
    increment_seconds: int  # lifetimes are rounded up to a whole number of these
    minimum_seconds: int  # a started instance is billed at least this long


EC2_LINUX = BillingRule("per-second-60s-min", 1, 60)
PER_SECOND = BillingRule("per-second", 1, 1)
PER_MINUTE = BillingRule("per-minute", 60, 60)
PER_HOUR = BillingRule("per-hour", 3_600, 3_600)
RULES = {rule.name: rule for rule in (EC2_LINUX, PER_SECOND, PER_MINUTE, PER_HOUR)}
# S3 Standard PUT, COPY, POST and LIST requests, $0.005 per 1,000 in us-east-1 (aws.amazon.com/s3/pricing)
S3_PUT_USD = 0.005 / 1_000


def rule_named(name: str) -> BillingRule:
    try:
        return RULES[name]
    except KeyError:
        raise ValueError(f"unknown billing rule {name!r}; known: {', '.join(sorted(RULES))}") from None


def billed_seconds(rule: BillingRule, started_at: float, ended_at: float) -> int:
    """Seconds billed for a lifetime `[started_at, ended_at]` (epoch seconds, simulated or real)."""
    lifetime = ended_at - started_at
    if lifetime < 0:
        raise ValueError(f"instance ended ({ended_at}) before it started ({started_at})")
    increments = math.ceil(round(lifetime, 6) / rule.increment_seconds)  # 61.0000001 s is 61 s, not 62
    return max(rule.minimum_seconds, increments * rule.increment_seconds)


def cost_usd(rate_per_hour: float, seconds: float) -> float:
    return rate_per_hour * seconds / 3_600
