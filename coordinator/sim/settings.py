"""What a simulated matrix runs: its settings, and the wall-clock timings of a simulated run.

Usage::

    settings = SimulationSettings(out_dir=Path("runs/simulate-1"), model=model_dir, dataset=parquet)
    settings.policy_options("hybrid")          # {"spot_share": 0.9, "max_spot_retries": 0}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.errors import SimulationError
from coordinator.job.aws import EC2_MAX_ATTEMPTS
from coordinator.job.loop import RunResult
from coordinator.plan.profiles import InstanceProfile, load_profile
from coordinator.plan.throughput import Throughputs
from coordinator.policies.deadline import DEFAULT_RESERVE_HOURS
from coordinator.sim.fault_proxy import FaultRule
from coordinator.sim.injector import RandomInterruptions
from coordinator.sim.paced_worker import PACE_ENV, STALL_ENV
from coordinator.sim.worker_boot import BootMode
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE
from coordinator.stack.target import EMULATOR_REGION
from coordinator.whatif.boot_model import DEFAULT_BOOT_MODEL, BootModel
from inference.layout import DATA_PREFIX, dataset_key

CONFIGURATIONS = ("on-demand", "spot-only", "hybrid", "deadline")
DATASET_KEY = dataset_key("sentences.parquet")
# Wall-clock settings of a simulated run, chosen for 10 workers sharing 2 cores (see README, "make simulate")
# Every poll is a request to moto or the metadata server, and those share the 2 cores with the workers:
# polling 2-3x faster than this cost about a third of the CPU in a trial (53 s instead of ~30 s per run).
CYCLE_SECONDS = 0.5  # the coordinator looks twice a wall second: every 7.5 cloud seconds at scale 15
HEARTBEAT_EVERY = 1.0  # wall: a beat every 15 cloud seconds at scale 15
NOTICE_POLL_EVERY = 0.5  # wall: a notice is seen within 15 cloud seconds of its 120
HEARTBEAT_TIMEOUT = 8.0  # wall: 8 missed beats (2 cloud minutes at scale 15)
BOOT_TIMEOUT = 60.0  # wall: a forked worker heartbeats within 1-5 s even on a loaded machine
# the share of its planned time a run's workers may fall behind their pace before the run is marked distorted
DISTORTION_SHARE = 0.03
# the share of its finished attempts' bills that may lie beyond the model's (`pace_record.py`) before the
# run is marked distorted: on a quiet host 0.1-3.2% (`make test`'s quick matrix; the worker's last writes
# and the coordinator's look take about a wall second, billed at 15x); 10-14% in the CI run it missed
UNMODELLED_SHARE = 0.06
# wall: what a reclaim costs before the replacement is launched: the notice poll, the batch in hand, the
# draining heartbeat, a coordinator cycle
RECLAIM_OVERHEAD = NOTICE_POLL_EVERY + 1.0 + HEARTBEAT_EVERY + CYCLE_SECONDS


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationSettings:
    out_dir: Path
    model: Path
    dataset: Path
    runs: dict[str, int] = field(
        default_factory=lambda: {"on-demand": 3, "spot-only": 8, "hybrid": 8, "deadline": 8}
    )
    segment_rows: int | None = None  # segments of about this many rows instead of `segments` (JobSpec's)
    instance_type: str = DEFAULT_INSTANCE_TYPE  # the stack's; priced from the table in the emulator's region
    region: str = EMULATOR_REGION  # where the emulator runs the stack (moto serves every region)
    # the jobs' capacity pools' types (`spotbatch run --instance-types`); () the stack's. Each simulated
    # instance works at its own type's speed (`plan/throughput.py`); the coordinator plans with the stack's
    instance_types: tuple[str, ...] = ()
    rows: int = 6_000
    segments: int = 10
    # a 2-minute notice is 8 wall seconds, the modelled launch (117 s on average) 7.8: the emulated
    # machine's own boot (user-data, stand-ins, pull, fork, segment read, model load) takes 4-9 wall s
    # when ten boot at once on 2 cores, and must fit inside it
    time_scale: float = 15.0
    interruption_probability: float = 0.3
    interruption_interval: float = 300.0  # cloud seconds
    trace: Path | None = None  # replay this availability trace instead of the random model
    trace_one_means: str = "available"
    seed: int = 0
    boot: BootMode = "fork"
    # a batch in hand is finished before a drain: at 32 rows (12 cloud s at c7i.xlarge's profile) it fits
    # well inside the notice
    batch_size: int = 32
    checkpoint_every: int = 20  # batches: 640 rows
    # each simulated row stands for this many rows of the job: the 6,000 sample rows are inferred for real,
    # and the job they stand for is 2,100,000 sentences: 3.7 cloud minutes per segment at c7i.xlarge's profile
    row_weight: int = 350
    boot_model: BootModel = DEFAULT_BOOT_MODEL
    # False (tests of other behaviour): workers run as fast as the host lets them and start at once, and the
    # run's cost measures this host; every `spotbatch simulate` run is paced
    paced: bool = True
    spot_share: float = 0.9
    spot_only_max_retries: int = 10
    hybrid_max_spot_retries: int = 0
    budget_usd: float = 2_000.0  # simulated dollars: the matrix's own ceiling, in its own spend log
    # default <out_dir>/spend_log.jsonl: simulated dollars stay out of the real log
    spend_log: Path | None = None
    mlflow: bool = True
    faults: tuple[FaultRule, ...] = ()  # extra proxy rules (tests): throttling, 500s, capacity
    forced_interruptions: dict[str, list[float]] = field(default_factory=dict)
    # run name -> cloud seconds after the start at which to interrupt one running spot instance (tests)
    forced_hard: bool = False  # forced interruptions are hard kills (SIGKILL + terminate), not notices
    forced_crash: bool = False  # forced "interruptions" are worker crashes (SIGKILL; the machine powers off)
    forced_rebalance: bool = False  # forced "interruptions" are rebalance recommendations (no reclaim)
    replace_on_rebalance: bool = False  # the jobs start a replacement on a rebalance recommendation
    use_events: bool = True  # the jobs act on EC2's events (the stack's queue); False: polling only
    ec2_max_attempts: int = EC2_MAX_ATTEMPTS  # the coordinator's EC2 client's (tests shorten the backoff)
    cycle_seconds: float = CYCLE_SECONDS  # the coordinator's look interval (wall)
    # the deadline configuration's deadline: this many times the mean on-demand job time of the same matrix
    # (measured first, so it follows the machine's speed), or a fixed number of cloud seconds
    # 2.5, not less: the deadline must not sit on the policy's first decision (a whole segment, the worst
    # boot twice and a reclaim's margin only just fitting), or a second of the host's start-up decides
    # whether a run's segments go on-demand, and the matrix measures the host (`bench/simulate_load` checks
    # that a loaded host gives the quiet figures; the commits that raised it from 1.5 and 2 say by how much)
    deadline_factor: float = 2.5
    # `bench.ceiling`: a host slower than the profile the coordinator plans with (each worker paced at the
    # profile's speed divided by this), and a share of attempts that stall (beat, no rows) for
    # `stall_seconds` (cloud) a third into their segment
    slowdown: float = 1.0
    stall_share: float = 0.0
    stall_seconds: float = 0.0
    deadline_seconds: float | None = None
    deadline_reserve_hours: float = DEFAULT_RESERVE_HOURS
    # the job ids' prefix (the runs folder's name when empty): `simulate` runs one matrix per pool, each in a
    # folder of the pool's name under one runs folder, and their jobs must not share ids
    job_prefix: str = ""
    mlflow_dir: Path | None = None  # where mlflow.db is (default: the runs folder's parent)

    @property
    def id_prefix(self) -> str:
        """What a job id starts with; a seeded draw leaves it out, so one seed draws alike in every folder."""
        return self.job_prefix or self.out_dir.name

    @property
    def tracking_dir(self) -> Path:
        return self.mlflow_dir or self.out_dir.parent

    @property
    def forced_kind(self) -> str:
        """What a forced interruption is: a notice, a hard kill, a crash of the worker, or a rebalance
        recommendation."""
        if self.forced_rebalance:
            return "rebalance"
        return "crash" if self.forced_crash else "hard-kill" if self.forced_hard else "notice"

    @property
    def input_key(self) -> str:
        """Where the dataset is in the bucket: the sample's key, or a folder's prefix (its .parquet files)."""
        return f"{DATA_PREFIX}{self.dataset.name}/" if self.dataset.is_dir() else DATASET_KEY

    def policy_options(self, config: str) -> dict[str, float]:
        if config == "spot-only":
            return {"max_spot_retries": self.spot_only_max_retries}
        if config == "hybrid":
            return {"spot_share": self.spot_share, "max_spot_retries": self.hybrid_max_spot_retries}
        if config == "deadline":
            return {"reserve_hours": self.deadline_reserve_hours}
        return {}

    def machine_env(self) -> dict[str, str]:
        """What a simulated machine's environment tells its worker's host hook (`paced_worker.py`)."""
        if not self.paced:
            return {}
        env = {PACE_ENV: f"{self.workload().wall_rows_per_second / self.slowdown:.4f}"}
        if self.stall_share > 0:
            after = max(1, self.rows // self.segments // 3)
            wall = self.stall_seconds / self.time_scale
            env[STALL_ENV] = f"{self.stall_share} {wall:.3f} {after} {self.seed}"
        return env

    def pace_by_type(self) -> dict[str, str]:
        """Each of the jobs' types at its own speed, in this host's rows per wall second: measured,
        scaled or published (`plan/throughput.py`); a type with no figure cannot be simulated."""
        if not self.paced:
            return {}
        figures, paces = Throughputs.load(), {}
        for kind in self.instance_types or (self.instance_type,):
            figure = figures.of(kind)
            if figure is None:
                raise SimulationError(f"{kind}: no speed to simulate it at: {figures.why_not(kind)}")
            paces[kind] = f"{self.time_scale * figure.rows_per_second / self.row_weight / self.slowdown:.4f}"
        return paces

    def workload(self) -> SimulatedWorkload:
        """The stack type's speed: measured, else scaled or published (`plan/throughput.py`)."""
        figure = Throughputs.load().of(self.instance_type)
        if figure is None or figure.basis == "measured":  # its profile as measured (or the error naming it)
            return SimulatedWorkload(load_profile(self.instance_type), self.row_weight, self.time_scale)
        profile = InstanceProfile(
            instance_type=self.instance_type,
            rows_per_second=figure.rows_per_second,
            backend=figure.basis,
            source=figure.source,
        )
        return SimulatedWorkload(profile, self.row_weight, self.time_scale)

    def describe_interruptions(self) -> str:
        if self.trace:
            return f"trace replay {self.trace.name} (1 = {self.trace_one_means}), random offset per run"
        return RandomInterruptions(self.interruption_probability, self.interruption_interval).describe()


@dataclass(frozen=True, slots=True)
class SimulatedWorkload:
    """How fast a simulated instance works: its type's profile, in sample rows per cloud and wall second."""

    profile: InstanceProfile
    row_weight: int
    time_scale: float

    @property
    def cloud_seconds_per_row(self) -> float:
        return self.row_weight / self.profile.rows_per_second

    @property
    def wall_rows_per_second(self) -> float:
        """The pace of a simulated worker on this host."""
        return self.time_scale / self.cloud_seconds_per_row

    def describe(self, rows: int) -> str:
        p, job = self.profile, rows * self.row_weight
        return (
            f"{rows:,} sample rows, each standing for {self.row_weight} sentences: a {job:,}-sentence job "
            f"at {p.instance_type}'s {p.rows_per_second:g} rows/s ({p.backend}; {p.source}); "
            f"workers paced at {self.wall_rows_per_second:.1f} rows per wall second"
        )


@dataclass(frozen=True, slots=True)
class SimulatedRun:
    name: str
    configuration: str
    result: RunResult
    interruptions: int
    pace: dict[str, Any] = field(default_factory=dict)  # pace_record.pace_summary: lag, distorted
    mlflow_run_id: str = ""

    @property
    def cost_usd(self) -> float:
        return sum(a.cost_usd for a in self.result.outcome.attempts)

    @property
    def job_seconds(self) -> float:
        """The job time every figure uses (`run.json`'s `cloud_seconds`): the job's start to its end."""
        record = json.loads((self.result.run_dir / "run.json").read_text(encoding="utf-8"))
        return float(record["cloud_seconds"])
