"""The part of a burst that happens on the box: wait for it, check parity, sync, run, pull back.

Every step raises `BurstFailed` (or `ParityMismatch`) when it cannot go on; the workflow then tears the box
down. Timeouts come from the plan.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable

from coordinator.burst.burst_state import BurstPlan, BurstState
from coordinator.burst.payload import FINGERPRINT_SCRIPT, differences, local_fingerprint, lock_names
from coordinator.burst.providers.base import FAILED, GONE, GpuCloud
from coordinator.burst.remote_box import RemoteBox
from coordinator.errors import BurstFailed, ParityMismatch

SMOKE_TIMEOUT_SECONDS = 900.0
Step = Callable[[str], None]


def work_on_the_box(plan: BurstPlan, cloud: GpuCloud, state: BurstState, step: Step) -> None:
    remote = wait_until_ready(plan, cloud, state, step)
    check_parity(plan, remote, step)
    sync_payload(plan, remote, step)
    run_commands(plan, remote, step)
    pull_back(plan, remote, step)


def wait_until_ready(plan: BurstPlan, cloud: GpuCloud, state: BurstState, step: Step) -> RemoteBox:
    """`active` with an address, then SSH answering, both within the plan's boot timeout."""
    assert state.instance_id is not None
    deadline = time.monotonic() + plan.boot_timeout
    while True:
        box = cloud.instance(state.instance_id)
        if box is not None and box.status == "active" and box.ip:
            ip = box.ip
            break
        if box is None or box.status in GONE or box.status in FAILED:
            raise BurstFailed(
                f"{state.instance_id} is {box.status if box else 'gone'} while booting (the provider "
                "ended or failed it); it is torn down and the run can be tried again"
            )
        if time.monotonic() > deadline:
            raise BurstFailed(
                f"{state.instance_id} not active within {plan.boot_timeout:g} s (status "
                f"{box.status if box else 'gone'})"
            )
        time.sleep(plan.poll_seconds)
    remote = RemoteBox(
        host=ip,
        user=plan.ssh_user,
        key=plan.ssh_private_key,
        known_hosts=plan.run_dir / "known_hosts",
        port=plan.ssh_port,
    )
    while not remote.reachable():
        if time.monotonic() > deadline:
            raise BurstFailed(
                f"{state.instance_id} active at {ip} but SSH did not answer within {plan.boot_timeout:g} s"
            )
        time.sleep(plan.poll_seconds)
    step(f"{state.instance_id} active at {ip}, SSH answers")
    return remote


def check_parity(plan: BurstPlan, remote: RemoteBox, step: Step) -> None:
    """The same fingerprint program here and on the box: the run is void if they differ."""
    names = lock_names(plan.payload)
    here = local_fingerprint(plan.local_python, names)
    command = f"{plan.remote_python} - {' '.join(names)}"
    there = json.loads(remote.run(command, stdin=FINGERPRINT_SCRIPT, timeout=120).stdout)
    step(
        f"parity: here python {here['python']} torch {here['torch']} cuda {here['cuda']}; box python "
        f"{there['python']} torch {there['torch']} cuda {there['cuda']} driver {there['driver']}"
    )
    differ = differences(here, there)
    if differ:
        raise ParityMismatch("parity check failed, run void: " + "; ".join(differ))
    step("parity: python, torch, transformers, tokenizers and the lock hash agree")


def sync_payload(plan: BurstPlan, remote: RemoteBox, step: Step) -> None:
    """The file list first, then exactly those files."""
    files = sorted(p.relative_to(plan.payload).as_posix() for p in plan.payload.rglob("*") if p.is_file())
    size = sum((plan.payload / f).stat().st_size for f in files)
    step(f"sync: {len(files)} files, {size / 1e6:.1f} MB to {remote.target}:{plan.remote_dir}/:")
    for name in files:
        step(f"  send {name}")
    remote.send(plan.payload, files, plan.remote_dir)


def run_commands(plan: BurstPlan, remote: RemoteBox, step: Step) -> None:
    """The smoke run, then the job, each in the run's folder on the box."""
    python = shlex.quote(plan.remote_python)
    for what, command, timeout in (
        ("smoke run", plan.smoke_command, SMOKE_TIMEOUT_SECONDS),
        ("job", plan.job_command, None),
    ):
        started = time.monotonic()
        done = remote.run(
            f"cd {shlex.quote(plan.remote_dir)} && {command.format(python=python)}",
            timeout=timeout or 3_600 * max(plan.planned_hours, 0.1) * 2,
        )
        step(f"{what}: ok in {time.monotonic() - started:.1f} s: {done.stdout.strip()[-300:]}")


def pull_back(plan: BurstPlan, remote: RemoteBox, step: Step) -> None:
    """The listed artifacts, if their total size is under the cap."""
    quoted = " ".join(shlex.quote(f"{plan.remote_dir}/{a}") for a in plan.artifacts)
    sizes = remote.run(f"du -sbc {quoted} 2>/dev/null | tail -n 1", timeout=60, check=False).stdout.split()
    total = int(sizes[0]) if sizes and sizes[0].isdigit() else 0
    if total > plan.artifact_cap_bytes:
        raise BurstFailed(
            f"artifacts are {total / 1e6:.1f} MB, over the {plan.artifact_cap_bytes / 1e6:.0f} MB cap: not "
            "pulled back"
        )
    remote.fetch([f"{plan.remote_dir}/{a}" for a in plan.artifacts], plan.run_dir / "artifacts")
    step(f"pulled back {', '.join(plan.artifacts)} ({total / 1e3:.1f} kB) to {plan.run_dir / 'artifacts'}")
