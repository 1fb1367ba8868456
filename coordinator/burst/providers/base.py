"""The small interface a GPU cloud needs for the burst workflow, the same verbs as the EC2 fleet.

`launch` / `instances` / `instance` / `terminate` / `instance_types` (with prices). A second provider is one
more file implementing this protocol; the burst workflow (`coordinator/burst.py`) only talks to it.

Errors (exit codes are mapped at the CLI):

    SpotbatchError
    └── ProviderError            an HTTP failure, a refusal, an answer that does not parse
        ├── NoCapacity           the type has no capacity in the region (try another, later)
        ├── RateLimited          still throttled after the retries
        ├── ProviderQuotaExceeded  the account's quota is used up
        └── LaunchUnconfirmed    launch failed, but an instance may exist: list by name before giving up
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

GONE = ("terminated", "preempted")  # statuses after which nothing is billed and nothing comes back
FAILED = ("unhealthy",)  # the provider's health check failed: waiting for `active` would wait in vain


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    gpus: int
    gpu_description: str
    usd_per_hour: float  # the whole instance
    regions_with_capacity: tuple[str, ...]

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_hour / max(1, self.gpus)


@dataclass(frozen=True, slots=True)
class Instance:
    id: str
    name: str
    status: str  # booting, active, unhealthy, terminating, terminated, preempted
    ip: str | None
    instance_type: str
    region: str


@dataclass(frozen=True, slots=True)
class Launched:
    instance_id: str
    requested_at: str  # the provider's clock (HTTP Date of the answer), ISO 8601 UTC: when billing may start


class GpuCloud(Protocol):
    provider: str

    def instance_types(self) -> dict[str, InstanceType]: ...

    def launch(self, *, instance_type: str, region: str, ssh_key_name: str, name: str) -> Launched: ...

    def instances(self) -> list[Instance]: ...

    def instance(self, instance_id: str) -> Instance | None: ...

    def terminate(self, instance_ids: list[str]) -> str: ...  # the provider's time of the answer (ISO UTC)
