"""Expected savings in closed form, for the random interruption model: the check on every simulated figure.

A spot instance is reclaimed at a constant hazard `lam` (per cloud second; p per interval gives
`lam = -ln(1 - p) / interval`), counted from its start. A segment needs `work` seconds of work after a
launch-to-first-row time `boot` (the boot model's mean). A notice drains the worker (nothing is lost), so:

- **relaunch on spot** (spot-only, and the deadline policy while its slack lasts): the work phases add up to
  `work`, and by memorylessness the reclaims during them are Poisson with mean `lam * work`; each of the
  `1 + lam * work` boots that must succeed is retried while a reclaim lands inside it, which bills
  `(e^(lam*boot) - 1) / lam` seconds per successful boot in all. Billed spot time:
  `work + (1 + lam*work) * (e^(lam*boot) - 1) / lam` plus a drain per reclaim.
- **fall back to on-demand at the first reclaim** (the seed-style hybrid): the first spot instance runs for
  `min(X, work + boot)` with `X ~ Exp(lam)`; what it did not finish is done on on-demand after a new boot.
  Whatever the hazard, its savings cannot exceed `spot_share * (1 - price_ratio)`: the on-demand share pays
  full price from the start.

Savings are against one on-demand instance per segment (`work + boot`, billed at the on-demand price).

Usage::

    lam = hazard(0.3, 300.0)
    relaunch_savings(lam, work=611, boot=90, price_ratio=0.393)      # 0.56
    fallback_savings(lam, work=611, boot=90, price_ratio=0.393, spot_share=0.9)
"""

from __future__ import annotations

import math


def hazard(probability: float, interval: float) -> float:
    """Reclaims per cloud second that give `probability` per `interval`."""
    if probability >= 1.0:
        return math.inf
    return -math.log(1.0 - probability) / interval


def relaunch_billed_seconds(lam: float, work: float, boot: float, drain: float = 0.0) -> float:
    """Expected billed spot seconds for one segment relaunched on spot after every reclaim."""
    if lam == 0:
        return work + boot
    successful_boots = 1.0 + lam * work
    boots_billed = successful_boots * math.expm1(lam * boot) / lam
    reclaims = successful_boots * math.exp(lam * boot) - 1.0
    return work + boots_billed + reclaims * drain


def relaunch_savings(lam: float, work: float, boot: float, price_ratio: float, drain: float = 0.0) -> float:
    return 1.0 - price_ratio * relaunch_billed_seconds(lam, work, boot, drain) / (work + boot)


def fallback_savings(lam: float, work: float, boot: float, price_ratio: float, spot_share: float) -> float:
    """Seed-style hybrid: `spot_share` of the segments start on spot and go on-demand at the first reclaim."""
    whole = work + boot
    if lam == 0:
        return spot_share * (1.0 - price_ratio)
    spot_billed = -math.expm1(-lam * whole) / lam  # E[min(X, work + boot)]
    reclaimed = -math.expm1(-lam * whole)  # P(X < work + boot)
    # E[(X - boot)+ ; X < work + boot]: the work the spot instance finished before its reclaim
    done_on_spot = math.exp(-lam * boot) * (-math.expm1(-lam * work) / lam - work * math.exp(-lam * work))
    on_demand_billed = reclaimed * whole - done_on_spot  # the rest of the work, and a new boot
    spot_segment = (price_ratio * spot_billed + on_demand_billed) / whole
    return spot_share * (1.0 - spot_segment)


def price_ratio_for(savings: float, lam: float, work: float, boot: float, drain: float = 0.0) -> float:
    """The spot/on-demand price ratio at which relaunching on spot saves exactly `savings`."""
    if lam == 0:
        return 1.0 - savings
    return (1.0 - savings) * (work + boot) / relaunch_billed_seconds(lam, work, boot, drain)
