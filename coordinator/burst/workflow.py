"""The burst workflow: one rented GPU box, from launch to confirmed-gone, with its cost on the record.

Steps (each logged with its time since the start to stdout and `<run dir>/burst.log`):

1. pre-flight: budget headroom, price date, payload allow-list, no other burst box alive, the type and
   region have capacity; then `BudgetGuard.authorize(label, rate x GPUs x planned hours + margin)`;
2. launch: `instance.json` is written before the call (name, no id yet) and again with the id and the boot
   time (the provider's Date on its answer) before anything else can fail; a launch that failed after the
   provider may have created the box is resolved by listing boxes by name;
3. wait for `active` and for SSH, within `boot_timeout`;
4. parity: the fingerprint here and on the box must agree, else the run is void;
5. sync: the file list is printed, then exactly those files go by rsync (the payload passed the allow-list);
6. smoke run, then the job;
7. pull back the listed artifacts if their total size is under the cap;
8. always, from the moment a box may exist (failure, Ctrl-C, SIGTERM included): terminate (retried), re-list
   until it is gone or `terminated`, record the teardown time, price boot -> teardown into the ledger and
   MLflow, `record_actual` with the budget guard, and compare with the estimate.

`burst_down(run_dir, cloud)` is step 8 alone, from `instance.json`, for a run whose process died.

Errors: `BurstFailed` (a step failed; the box is gone), `ParityMismatch` (what differs), plus the provider's
and the pre-flight's own.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TextIO

from coordinator.burst.cost import BurstCost, log_burst_cost
from coordinator.burst.payload import (
    BURST_ALLOW,
    FINGERPRINT_SCRIPT,
    differences,
    local_fingerprint,
    lock_names,
)
from coordinator.burst.providers.base import GONE, GpuCloud
from coordinator.burst.remote_box import RemoteBox
from coordinator.cost.allow_list import check_payload
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.preflight import (
    PRICE_MAX_AGE_DAYS,
    CheckResult,
    apply_overrides,
    check_budget_headroom,
    require_preflight,
)
from coordinator.cost.pricing import ESTIMATE_MARGIN
from coordinator.errors import (
    BurstFailed,
    ConfigError,
    LaunchUnconfirmed,
    ParityMismatch,
    ProviderError,
    SpotbatchError,
)

BURST_PREFIX = "spotbatch-burst-"  # every box this workflow launches is named so; strays are found by it
BOOT_TIMEOUT_SECONDS = 900.0  # Lambda boxes take "several minutes"; fifteen without SSH means it is broken
POLL_SECONDS = 5.0  # between status reads: Lambda allows about one request per second
TERMINATE_ATTEMPTS = 5  # a terminate that fails is retried this often before a human is told loudly
GONE_TIMEOUT_SECONDS = 300.0  # terminating -> terminated takes seconds to a minute
SMOKE_TIMEOUT_SECONDS = 900.0
ARTIFACT_CAP_BYTES = 50 * 1024 * 1024  # outputs, metrics, logs: anything bigger stays on the box (and dies)
COST_TOLERANCE = 1.0  # an actual above the estimate (which has its margin) is reported as an overrun


@dataclass(frozen=True, slots=True, kw_only=True)
class BurstPlan:
    name: str  # spotbatch-burst-<UTC time>: the box's name and the run folder's
    provider: str
    instance_type: str
    region: str
    gpus: int
    rate_per_gpu_hour: float
    price_date: date
    planned_hours: float
    payload: Path
    ssh_key_name: str  # as registered with the provider
    ssh_private_key: Path
    run_dir: Path
    ssh_user: str = "ubuntu"
    ssh_port: int = 22
    remote_python: str = "python3"
    local_python: str = sys.executable
    remote_root: str = "spotbatch-burst"  # under the remote home; the run's folder is <root>/<name>
    smoke_command: str = "{python} burst_job.py --smoke"
    job_command: str = "{python} burst_job.py"
    artifacts: tuple[str, ...] = (
        "outputs/job/predictions.csv",
        "metrics-smoke.json",
        "metrics-job.json",
        "logs",
    )
    artifact_cap_bytes: int = ARTIFACT_CAP_BYTES
    boot_timeout: float = BOOT_TIMEOUT_SECONDS
    poll_seconds: float = POLL_SECONDS
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def estimate_usd(self) -> float:
        return self.rate_per_gpu_hour * self.gpus * self.planned_hours * (1 + ESTIMATE_MARGIN)

    @property
    def label(self) -> str:
        return f"burst {self.name} {self.provider} {self.instance_type}"

    @property
    def remote_dir(self) -> str:
        return f"{self.remote_root}/{self.name}"

    def describe(self) -> str:
        return (
            f"burst {self.name}: {self.provider} {self.instance_type} ({self.gpus} GPU) in {self.region} at "
            f"${self.rate_per_gpu_hour:.2f}/GPU-h (price of {self.price_date}), planned "
            f"{self.planned_hours:g} h -> "
            f"estimate ${self.estimate_usd:.2f} (+{ESTIMATE_MARGIN:.0%} margin); payload {self.payload}; "
            f"smoke `{self.smoke_command}`, job `{self.job_command}`; pull back {', '.join(self.artifacts)} "
            f"(cap {self.artifact_cap_bytes / 2**20:.0f} MiB); then terminate, confirm gone, log the cost"
        )


@dataclass(slots=True)
class BurstState:
    """`instance.json`: what teardown needs, written before it can be needed."""

    name: str
    provider: str
    instance_type: str
    region: str
    gpus: int
    rate_per_gpu_hour: float
    label: str
    instance_id: str | None = None
    boot_utc: str | None = None
    teardown_utc: str | None = None
    cost_usd: float | None = None
    status: str = "launching"  # launching, launched, gone, cost-logged

    def save(self, run_dir: Path) -> None:
        path = run_dir / "instance.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, run_dir: Path) -> BurstState:
        path = run_dir / "instance.json"
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, TypeError) as error:
            raise ConfigError(f"{path}: no readable burst state ({error})") from None


@dataclass(frozen=True, slots=True)
class BurstOutcome:
    state: BurstState
    cost: BurstCost | None
    artifacts: Path


class StepLog:
    def __init__(self, path: Path, out: TextIO | None = None) -> None:
        self.started = time.monotonic()
        self.path = path
        self.out = out

    def __call__(self, message: str) -> None:
        line = f"[{time.monotonic() - self.started:7.1f}s] {message}"
        print(line, file=self.out or sys.stdout, flush=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {line}\n")


def _now_iso() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"


def preflight(plan: BurstPlan, cloud: GpuCloud, guard: BudgetGuard) -> list[CheckResult]:
    results = [check_budget_headroom(guard, plan.estimate_usd)]
    age = (datetime.now(UTC).date() - plan.price_date).days
    results.append(
        CheckResult(
            "price-of-the-day",
            age <= PRICE_MAX_AGE_DAYS,
            f"${plan.rate_per_gpu_hour:.2f}/GPU-h dated {plan.price_date} ({age} days old, limit "
            f"{PRICE_MAX_AGE_DAYS})",
        )
    )
    problems = check_payload(plan.payload, BURST_ALLOW)
    results.append(
        CheckResult(
            "sync-allow-list",
            not problems,
            "; ".join(problems[:5]) or f"{plan.payload}: every file on the allow-list",
        )
    )
    strays = [
        f"{i.id} ({i.name}, {i.status})"
        for i in cloud.instances()
        if i.name.startswith(BURST_PREFIX) and i.status not in GONE
    ]
    results.append(
        CheckResult(
            "no-stray-instances",
            not strays,
            f"burst boxes alive: {', '.join(strays)}" if strays else "no burst box is alive",
        )
    )
    offer = cloud.instance_types().get(plan.instance_type)
    if offer is None:
        results.append(CheckResult("capacity", False, f"{plan.provider} sells no {plan.instance_type}"))
    else:
        has = plan.region in offer.regions_with_capacity
        where = ", ".join(offer.regions_with_capacity) or "nowhere"
        results.append(CheckResult("capacity", has, f"{plan.instance_type} has capacity in {where}"))
    return results


def run_burst(
    plan: BurstPlan,
    cloud: GpuCloud,
    guard: BudgetGuard,
    *,
    tracking_uri: str | None,
    out: TextIO | None = None,
) -> BurstOutcome:
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    step = StepLog(plan.run_dir / "burst.log", out)
    step(plan.describe())
    results = apply_overrides(preflight(plan, cloud, guard), plan.overrides, plan.run_dir / "preflight.jsonl")
    for result in results:
        step(f"pre-flight {result.status:<10} {result.name}: {result.reason}")
    require_preflight(results)
    guard.authorize(plan.label, plan.estimate_usd)
    step(f"budget guard: authorized ${plan.estimate_usd:.2f} ({guard.remaining:.2f} left of the ceiling)")
    state = BurstState(
        plan.name,
        plan.provider,
        plan.instance_type,
        plan.region,
        plan.gpus,
        plan.rate_per_gpu_hour,
        plan.label,
    )
    state.save(plan.run_dir)
    try:
        launched = cloud.launch(
            instance_type=plan.instance_type,
            region=plan.region,
            ssh_key_name=plan.ssh_key_name,
            name=plan.name,
        )
        state.instance_id, state.boot_utc, state.status = (
            launched.instance_id,
            launched.requested_at,
            "launched",
        )
        state.save(plan.run_dir)
        step(
            f"launched {launched.instance_id} at {launched.requested_at} (provider's clock); recorded in "
            "instance.json"
        )
        _work_on_the_box(plan, cloud, state, step)
    except LaunchUnconfirmed as error:
        step(f"launch unconfirmed ({error}); looking for a box named {plan.name}")
        found = [i for i in cloud.instances() if i.name == plan.name and i.status not in GONE]
        if found:
            state.instance_id, state.boot_utc, state.status = found[0].id, _now_iso(), "launched"
            state.save(plan.run_dir)
            step(f"found {found[0].id}: it exists after all; tearing it down (boot time: when it was found)")
        teardown(plan.run_dir, cloud, guard, step, tracking_uri=tracking_uri)
        raise BurstFailed(f"launch failed: {error}") from None
    except BaseException as error:  # Ctrl-C and SIGTERM too: nothing may keep running
        step(f"FAILED: {type(error).__name__}: {error}")
        teardown(plan.run_dir, cloud, guard, step, tracking_uri=tracking_uri)
        if isinstance(error, ProviderError | SpotbatchError) and not isinstance(error, BurstFailed):
            raise BurstFailed(f"{type(error).__name__}: {error}") from None
        raise
    cost = teardown(plan.run_dir, cloud, guard, step, tracking_uri=tracking_uri)
    return BurstOutcome(BurstState.load(plan.run_dir), cost, plan.run_dir / "artifacts")


def _work_on_the_box(
    plan: BurstPlan, cloud: GpuCloud, state: BurstState, step: Callable[[str], None]
) -> None:
    assert state.instance_id is not None
    deadline = time.monotonic() + plan.boot_timeout
    ip = None
    while True:
        box = cloud.instance(state.instance_id)
        if box is not None and box.status == "active" and box.ip:
            ip = box.ip
            break
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

    names = lock_names(plan.payload)
    here = local_fingerprint(plan.local_python, names)
    there = json.loads(
        remote.run(f"{plan.remote_python} - {' '.join(names)}", stdin=FINGERPRINT_SCRIPT, timeout=120).stdout
    )
    step(
        f"parity: here python {here['python']} torch {here['torch']} cuda {here['cuda']}; box python "
        f"{there['python']} torch {there['torch']} cuda {there['cuda']} driver {there['driver']}"
    )
    differ = differences(here, there)
    if differ:
        raise ParityMismatch("parity check failed, run void: " + "; ".join(differ))
    step("parity: python, torch, transformers, tokenizers and the lock hash agree")

    files = sorted(p.relative_to(plan.payload).as_posix() for p in plan.payload.rglob("*") if p.is_file())
    size = sum((plan.payload / f).stat().st_size for f in files)
    step(f"sync: {len(files)} files, {size / 1e6:.1f} MB to {remote.target}:{plan.remote_dir}/:")
    for name in files:
        step(f"  send {name}")
    remote.send(plan.payload, files, plan.remote_dir)

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


def teardown(
    run_dir: Path,
    cloud: GpuCloud,
    guard: BudgetGuard,
    step: Callable[[str], None],
    *,
    tracking_uri: str | None,
) -> BurstCost | None:
    """Terminate, confirm gone, price and record. Idempotent: a second call after success does nothing new."""
    state = BurstState.load(run_dir)
    if state.instance_id is None:
        found = [i for i in cloud.instances() if i.name == state.name and i.status not in GONE]
        if not found:
            guard.record_actual(state.label, 0.0)
            state.status = "cost-logged"
            state.cost_usd = 0.0
            state.save(run_dir)
            step(f"no box named {state.name} exists: nothing to tear down, $0 recorded")
            return None
        state.instance_id, state.boot_utc = found[0].id, state.boot_utc or _now_iso()
        state.save(run_dir)
    if state.status != "cost-logged":
        if state.teardown_utc is None:
            state.teardown_utc = _terminate(cloud, state.instance_id, step)
            state.save(run_dir)
        _confirm_gone(cloud, state.instance_id, step)
        state.status = "gone"
        state.save(run_dir)
    if state.status == "cost-logged" or state.boot_utc is None or state.teardown_utc is None:
        return None
    cost = log_burst_cost(
        state.rate_per_gpu_hour,
        state.gpus,
        state.boot_utc,
        state.teardown_utc,
        state.provider,
        state.instance_type,
        ledger_path=run_dir / "ledger.jsonl",
        tracking_uri=tracking_uri,
        run_name=state.name,
    )
    reserved = guard.state().open_reservations.get(state.label)
    estimate = reserved[0] if reserved else None
    guard.record_actual(state.label, cost.cost_usd)
    state.cost_usd, state.status = cost.cost_usd, "cost-logged"
    state.save(run_dir)
    check = ""
    if estimate:
        over = cost.cost_usd > estimate * COST_TOLERANCE
        check = f"; estimate ${estimate:.2f}: {'OVER the estimate' if over else 'within it'}"
    step(
        f"cost: {cost.billable_hours:.4f} billable h ({cost.billing}) x ${state.rate_per_gpu_hour:.2f} x "
        f"{state.gpus} GPU = ${cost.cost_usd:.4f}{check}; ledger {run_dir / 'ledger.jsonl'}"
    )
    return cost


def _terminate(cloud: GpuCloud, instance_id: str, step: Callable[[str], None]) -> str:
    for attempt in range(1, TERMINATE_ATTEMPTS + 1):
        try:
            answered = cloud.terminate([instance_id])
            step(f"terminate {instance_id}: accepted at {answered} (provider's clock)")
            return answered
        except ProviderError as error:
            step(f"terminate {instance_id} failed (try {attempt} of {TERMINATE_ATTEMPTS}): {error}")
            if attempt == TERMINATE_ATTEMPTS:
                raise BurstFailed(
                    f"COULD NOT TERMINATE {instance_id}: it may still be billing. Run `spotbatch burst down` "
                    "or terminate it in the provider's console now"
                ) from error
            time.sleep(min(30.0, 2.0**attempt))
    raise AssertionError("unreachable")


def _confirm_gone(cloud: GpuCloud, instance_id: str, step: Callable[[str], None]) -> None:
    deadline = time.monotonic() + GONE_TIMEOUT_SECONDS
    while True:
        box = cloud.instance(instance_id)
        listed = [i for i in cloud.instances() if i.id == instance_id and i.status not in GONE]
        if (box is None or box.status in GONE) and not listed:
            step(
                f"re-listed: {instance_id} is {box.status if box else 'not found'} and not among the live "
                "boxes"
            )
            return
        if time.monotonic() > deadline:
            raise BurstFailed(
                f"{instance_id} still {box.status if box else 'listed'} {GONE_TIMEOUT_SECONDS:g} s after "
                "terminate"
            )
        time.sleep(1.0)


def burst_down(
    run_dir: Path, cloud: GpuCloud, guard: BudgetGuard, *, tracking_uri: str | None, out: TextIO | None = None
) -> BurstCost | None:
    """Teardown of a run whose process is gone, from its `instance.json`."""
    step = StepLog(run_dir / "burst.log", out)
    step(f"burst down: {run_dir / 'instance.json'}")
    return teardown(run_dir, cloud, guard, step, tracking_uri=tracking_uri)
