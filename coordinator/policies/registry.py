"""Every policy by name: `make_policy("hybrid", spot_share=0.9)`, `policy_names()`, and the default.

Usage::

    policy = make_policy("deadline", reserve_hours=1.0)
    driver = driver_for(policy)               # the kind decides how it is asked (drivers.py)
"""

from __future__ import annotations

from coordinator.errors import UnknownPolicy
from coordinator.policies.deadline import (
    DeadlineAware,
    DeadlinePolicy,
    Greedy,
    SafetyGreedy,
    UniformProgress,
)
from coordinator.policies.drivers import DeadlineDriver, Driver, RecoveryDriver
from coordinator.policies.recovery import Hybrid, OnDemand, RecoveryPolicy, SpotOnly

Policy = RecoveryPolicy | DeadlinePolicy
POLICIES: dict[str, type[RecoveryPolicy] | type[DeadlinePolicy]] = {
    cls.name: cls
    for cls in (OnDemand, SpotOnly, Hybrid, Greedy, SafetyGreedy, UniformProgress, DeadlineAware)
}
DEFAULT_POLICY = "hybrid"  # the original plan: spot first, on-demand from the checkpoint after a reclaim


def policy_names() -> list[str]:
    return sorted(POLICIES)


def make_policy(name: str, **options: float | int) -> Policy:
    try:
        cls = POLICIES[name]
    except KeyError:
        raise UnknownPolicy(f"unknown policy {name!r}; valid: {', '.join(policy_names())}") from None
    try:
        return cls(**options)  # type: ignore[arg-type]
    except TypeError as error:  # an option this policy does not take
        raise UnknownPolicy(f"policy {name!r} does not take the options {sorted(options)}: {error}") from None


def driver_for(policy: Policy) -> Driver:
    """The driver of the policy's kind: the one place that asks which kind a policy is."""
    if isinstance(policy, DeadlinePolicy):
        return DeadlineDriver(policy)
    return RecoveryDriver(policy)
