"""The embedded AWS's process: moto's server, plus one behaviour of EC2 that moto lacks.

EC2 shows a terminated instance in `DescribeInstances` for about an hour, then forgets it ("Terminated
instances remain visible ... for approximately one hour", the EC2 User Guide, "Terminate Amazon EC2
instances"). moto keeps every instance it ever launched, and each `DescribeInstances`/`RunInstances`
walks all of them: over a matrix of simulated runs (hundreds of instances) its answers slowed from 12-16 ms
to 85 ms and the emulated boots fell behind their modelled ones. This process forgets a terminated
instance (and its tags) `--terminated-visible-seconds` after it first saw it terminated (the simulator
passes an hour on its scaled clock), so every run meets the emulator as the first one did.

Usage::

    python -m coordinator.sim.moto_main --terminated-visible-seconds 240 -H 127.0.0.1 -p 5000
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

EC2_TERMINATED_VISIBLE_SECONDS = 3600.0  # the EC2 User Guide's "approximately one hour"
SWEEP_EVERY_SECONDS = 1.0


class TerminatedInstanceForgetter:
    """Drops instances that have been terminated for longer than `visible_seconds` from moto's EC2
    backends (every account and region in this process)."""

    def __init__(self, visible_seconds: float, clock: Any = time.monotonic) -> None:
        self.visible_seconds = visible_seconds
        self.clock = clock
        self.terminated_since: dict[str, float] = {}  # instance id -> when first seen terminated
        self.forgotten = 0

    def sweep(self) -> None:
        from moto.ec2.models import ec2_backends

        now = self.clock()
        for account in list(ec2_backends.values()):
            for backend in list(account.values()):
                self._sweep_backend(backend, now)

    def _sweep_backend(self, backend: Any, now: float) -> None:
        for reservation_id, reservation in list(backend.reservations.items()):
            forget = {i.id for i in list(reservation.instances) if self._forgettable(i, now)}
            if not forget:
                continue  # untouched: RunInstances may still be filling it (it has nothing terminated)
            kept = [i for i in reservation.instances if i.id not in forget]
            reservation.instances = kept  # a new list: a request walking the old one still sees it whole
            for instance_id in forget:
                backend.tags.pop(instance_id, None)
                self.terminated_since.pop(instance_id, None)
            self.forgotten += len(forget)
            if not kept:
                backend.reservations.pop(reservation_id, None)

    def _forgettable(self, instance: Any, now: float) -> bool:
        if instance.state != "terminated":
            return False
        since = self.terminated_since.setdefault(instance.id, now)
        return now - since >= self.visible_seconds

    def run_forever(self) -> None:
        while True:
            time.sleep(SWEEP_EVERY_SECONDS)
            try:
                self.sweep()
            except Exception as error:  # an internal moto change: say so in moto's log, keep serving
                print(f"moto_main: cannot forget terminated instances: {error!r}", file=sys.stderr)
                return


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=False)
    parser.add_argument("--terminated-visible-seconds", type=float, default=EC2_TERMINATED_VISIBLE_SECONDS)
    ours, moto_args = parser.parse_known_args(argv)
    if ours.terminated_visible_seconds <= 0:
        raise SystemExit(f"--terminated-visible-seconds must be > 0, got {ours.terminated_visible_seconds}")
    forgetter = TerminatedInstanceForgetter(ours.terminated_visible_seconds)
    threading.Thread(target=forgetter.run_forever, name="forget-terminated", daemon=True).start()
    from moto.server import main as moto_server_main

    moto_server_main(moto_args)


if __name__ == "__main__":
    main()
