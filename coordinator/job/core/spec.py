"""What a job is: its input, its segments, its policy, and the timings the controller keeps.

Segments are contiguous row ranges of the dataset, one per worker instance, deterministic from the row
count and the segment count: a restarted coordinator (or a user) computes the same boundaries again.

Every interval and timeout is a named constant with the reason for its value, in wall or cloud seconds;
the simulator and the tests shrink them through the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.pricing import PriceTable
from coordinator.job.core.worker_contract import WorkerTuning
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE

CYCLE_SECONDS = 5.0  # wall, on AWS: notices give 120 s, so a 5 s look costs little; the simulator shrinks it
# wall: three missed 30-s steady beats. It catches a worker hung on a live instance; an instance that ends is
# seen at once (EC2's events, its state): S3 hiccups last seconds, not this long
HEARTBEAT_TIMEOUT_SECONDS = 90.0
BOOT_TIMEOUT_SECONDS = 900.0  # wall: an EC2 boot + image pull + model load is 2-5 minutes; 15 is broken
STATUS_EVERY_SECONDS = 30.0  # cloud: one status line per active instance
# wall: EC2 shows an instance shutting-down while its OS stops (Docker flushes the worker's last log lines
# with the job's role); the role is deleted once every instance is terminated, or after this long
SHUTDOWN_WAIT_SECONDS = 300.0
RELAUNCH_BACKOFF_SECONDS = 60.0  # cloud: after a failed launch, wait before asking the same market again
# cloud: boot + image + model load before a first row on EC2 (2-5 min), until the job measures it
CHANGEOVER_SECONDS = 300.0
# cloud: a reclaim's cost before its replacement is launched: the worker's 1-s notice poll, the batch in hand,
# its 2-s draining heartbeat, a 5-s cycle. Deadline policies keep this much slack on top of a changeover
RECLAIM_OVERHEAD_SECONDS = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class JobSpec:
    job_id: str
    input_key: str  # the dataset's key in the bucket, or a prefix ending in "/" (its .parquet objects)
    rows: int
    segments: int  # how many, for one file; over many files the segments are of about rows/segments rows
    segment_rows: int | None = None  # segments sized by work instead: about this many rows each
    max_instances: int | None = None  # instances of the job at once (None: one per segment); the rest wait
    fetch_results: bool = True  # the verified output joined to the input, local (False: it stays in S3)
    policy: str
    policy_options: dict[str, float] = field(default_factory=dict)
    provider: str = "aws"
    region: str = "us-east-1"
    instance_type: str = DEFAULT_INSTANCE_TYPE  # the stack's: its launch templates name it
    # the types the job may run on, each in every zone a capacity pool (`fleet.py`); () the stack's type only
    instance_types: tuple[str, ...] = ()
    planned_rows_per_s: float = 10.0  # cloud rows/s of one instance, for budget estimates before any beat
    cycle_seconds: float = CYCLE_SECONDS
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT_SECONDS
    boot_timeout: float = BOOT_TIMEOUT_SECONDS
    status_every: float = STATUS_EVERY_SECONDS
    relaunch_backoff: float = RELAUNCH_BACKOFF_SECONDS
    deadline_seconds: float | None = None  # cloud seconds from the job's start; deadline policies need one
    changeover_seconds: float = CHANGEOVER_SECONDS  # until the job has seen a first heartbeat
    reclaim_overhead_seconds: float = RECLAIM_OVERHEAD_SECONDS
    replace_on_rebalance: bool = False  # start the replacement on EC2's rebalance recommendation
    use_events: bool = True  # act on EC2's events from the stack's queue; False: heartbeats and listings only
    tuning: WorkerTuning = field(default_factory=WorkerTuning)  # batch size, checkpoints, beats (tags)

    @property
    def instances_at_once(self) -> int:
        """How many instances the job may run at once: its segments, or fewer when capped."""
        return min(self.segments, self.max_instances or self.segments)

    @property
    def pool_types(self) -> tuple[str, ...]:
        """The instance types the fleet may launch, the first one the job's (its prices as a whole)."""
        return self.instance_types or (self.instance_type,)


@dataclass(frozen=True, slots=True)
class Segment:
    segment_id: str
    start: int
    stop: int
    input_uri: str

    @property
    def rows(self) -> int:
        return self.stop - self.start

    @property
    def input_key(self) -> str:
        """Its file's key in the bucket (`input_uri` less `s3://bucket/`)."""
        return self.input_uri.split("/", 3)[3] if self.input_uri.startswith("s3://") else self.input_uri


def segment_name(index: int) -> str:
    return f"seg-{index:04d}"


def plan_segments(num_rows: int, count: int, input_uri: str) -> list[Segment]:
    """Split `[0, num_rows)` into `count` ranges whose sizes differ by at most one row."""
    if num_rows <= 0:
        raise ValueError(f"cannot split {num_rows} rows into segments")
    if not 1 <= count <= num_rows:
        raise ValueError(f"segment count must be between 1 and {num_rows} (the row count), got {count}")
    base, extra = divmod(num_rows, count)
    segments, start = [], 0
    for index in range(count):
        stop = start + base + (1 if index < extra else 0)
        segments.append(Segment(segment_name(index), start, stop, input_uri))
        start = stop
    return segments


def quotes_for(spec: JobSpec, table: PriceTable | None = None) -> JobQuotes:
    """The table's quote of each market for each of the job's instance types."""
    table = table or PriceTable.load()
    markets = ("spot", "on-demand")
    pools = {
        (m, kind): table.quote(spec.provider, spec.region, kind, m)
        for kind in spec.pool_types
        for m in markets
    }
    return JobQuotes(pools, spec.pool_types[0])
