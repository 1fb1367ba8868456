"""How long an instance takes from the launch call to its first row, phase by phase, per market.

Both simulators use these figures: the live simulator holds each simulated instance back for a drawn
launch-to-ready time (`InstanceRuntime`, `SPOTBATCH_READY_AT`), and the matrix model (`matrix_model.py`)
draws from the same distributions; the deadline policies plan with a high quantile of them.

Each phase is a triangular distribution (low, most likely, high) in cloud seconds, bounded so that a
policy can plan for the worst case. Where the figures come from:

- `pending`: the launch call's answer to the `running` state. Percival, "EC2 boot time benchmarking"
  (daemonology.net, 2021-08-12, ec2-boot-bench, c5.xlarge, median of 9): RunInstances 1.5 s, pending to
  running 4.9 s. brevdev/ec2-coldboot-research (GitHub, 2025, c7i.large and five other types):
  pending to running 16.4-16.6 s, 25.8 s from the call to SSH.
- `os_boot`: `running` to a usable system (sshd up; here: the ECS-optimized AMI's Docker daemon and
  cloud-init running the user-data). Percival 2021: 17.2 s to the port answering, 5.6 s more to sshd on the
  Linux AMIs; brevdev: 3.2 s from boot to SSH on a minimal image; the ECS-optimized AMI also starts the
  Docker daemon and the ECS agent, hence the longer tail.
- `image_pull`: `docker pull` of the worker image from ECR in the region. elasticscale.com, "Reduce AWS
  Fargate pull times with SOCI" (2024-04-10): a 413 MB image took 53-62 s (mean 57 s) from task creation
  to start on Fargate, which caches nothing, as a fresh instance does not. The CPU worker image (Python,
  ONNX Runtime, tokenizers, pyarrow, boto3 and the model) is about twice that size: 40-120 s.
- `model_load`: the worker reading its segment and loading the model: measured here, 0.2 s wall for the
  ONNX export of MiniLM on one core (`load_classifier`), 1-2 s with the segment's read and plan.

Spot and on-demand instances are launched by the same `RunInstances` path once capacity is granted; no
published measurement gives spot a different launch time, so both markets share these figures (a
separate entry per market is there for a user who measures otherwise).

Usage::

    model = DEFAULT_BOOT_MODEL
    model.draw("spot", random.Random("0/attempt-3"))    # cloud seconds from launch to first row
    model.mean("on-demand"), model.worst("spot")          # 117.0, 189.0
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from coordinator.cost.pricing import Market


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    low: float
    likely: float
    high: float

    def draw(self, rng: random.Random) -> float:
        return rng.triangular(self.low, self.high, self.likely)

    @property
    def mean(self) -> float:
        return (self.low + self.likely + self.high) / 3


LAUNCH_PHASES = (
    Phase("pending", 4.0, 10.0, 20.0),
    Phase("os_boot", 10.0, 25.0, 45.0),
    Phase("image_pull", 40.0, 70.0, 120.0),
    Phase("model_load", 1.0, 2.0, 4.0),
)


@dataclass(frozen=True, slots=True)
class BootModel:
    phases: dict[str, tuple[Phase, ...]]  # market -> its phases, in order

    def draw(self, market: Market, rng: random.Random) -> float:
        """Cloud seconds from the launch call to the first row, one draw per phase."""
        return sum(phase.draw(rng) for phase in self.phases[market])

    def mean(self, market: Market) -> float:
        return sum(phase.mean for phase in self.phases[market])

    def worst(self, market: Market) -> float:
        """The longest launch-to-ready time the model allows: what a deadline plans for."""
        return sum(phase.high for phase in self.phases[market])

    def describe(self) -> str:
        parts = ", ".join(f"{p.name} {p.low:g}-{p.likely:g}-{p.high:g}" for p in self.phases["spot"])
        return f"launch to first row (cloud s, low-likely-high): {parts}; mean {self.mean('spot'):.0f} s"


DEFAULT_BOOT_MODEL = BootModel({"spot": LAUNCH_PHASES, "on-demand": LAUNCH_PHASES})
