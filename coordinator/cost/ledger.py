"""The cost ledger: every instance attempt priced, every job summarized, as JSONL and as an MLflow run.

An attempt is billed from launch to end by its provider's rule (EC2 Linux: per second, 60 s minimum),
whatever it did in between. Work it did that was not checkpointed before it ended (`rows_wasted`) is done
again by a later attempt: those are the *rows redone*, and their cost is the time they took at the
attempt's rate.

The job's all-on-demand cost is what the same job would have cost with no interruptions, every attempt at
the on-demand rate: each finished attempt's billed time counts in full; an interrupted attempt counts only
the time of the rows it kept (its boot and its lost work would not have happened). Savings are
`(all_on_demand - actual) / all_on_demand * 100%`.

Files: `<run folder>/ledger.jsonl`, one `{"kind": "attempt", ...}` line per attempt and one
`{"kind": "job", ...}` line at the end. MLflow: one run per job in `$MLFLOW_TRACKING_URI`, by default a
SQLite store under the runs folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from coordinator.cost.billing import S3_PUT_USD, BillingRule, billed_seconds, cost_usd

INTERRUPTED: frozenset[str] = frozenset({"interrupted", "lost"})
ENDED_EARLY = INTERRUPTED | {
    "switched"
}  # "switched": a deadline policy moved the segment from on-demand to spot


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptRecord:
    job_id: str
    segment_id: str
    attempt_id: str
    instance_id: str
    provider: str
    region: str
    instance_type: str
    market: str
    gpus: int
    rate_usd_per_hour: float
    price_source: str
    billing: str
    launched_at: float  # epoch seconds (simulated seconds in the simulator)
    ended_at: float
    billed_seconds: int
    cost_usd: float
    end_reason: str
    rows_kept: int  # rows this attempt added to the checkpointed output
    rows_wasted: int  # rows it computed that were lost with it and are redone by a later attempt
    rows_per_s: float
    cpu_percent: float | None = None  # average, from the worker's CloudWatch metrics (None: none read)
    memory_mb: float | None = None  # the largest resident set the metrics saw
    heartbeat_puts: int = 0  # S3 PUTs of its heartbeats, as its worker counted them

    @property
    def useful_seconds(self) -> float:
        """Billed time that an uninterrupted run would also have spent."""
        if self.end_reason not in ENDED_EARLY:
            return float(self.billed_seconds)
        return (
            min(float(self.billed_seconds), self.rows_kept / self.rows_per_s) if self.rows_per_s > 0 else 0.0
        )

    @property
    def redone_cost_usd(self) -> float:
        if self.rows_wasted <= 0 or self.rows_per_s <= 0:
            return 0.0
        return cost_usd(self.rate_usd_per_hour, self.rows_wasted / self.rows_per_s)


def price_attempt(
    *,
    rule: BillingRule,
    rate_usd_per_hour: float,
    launched_at: float,
    ended_at: float,
    **fields: object,
) -> AttemptRecord:
    """An `AttemptRecord` with billed seconds and cost computed by the billing rule."""
    seconds = billed_seconds(rule, launched_at, ended_at)
    return AttemptRecord(
        rate_usd_per_hour=rate_usd_per_hour,
        billing=rule.name,
        launched_at=launched_at,
        ended_at=ended_at,
        billed_seconds=seconds,
        cost_usd=cost_usd(rate_usd_per_hour, seconds),
        **fields,  # type: ignore[arg-type]
    )


@dataclass(frozen=True, slots=True)
class JobSummary:
    job_id: str
    attempts: int
    interruptions: int
    spot_hours: float
    on_demand_hours: float
    spot_cost_usd: float
    on_demand_cost_usd: float
    total_cost_usd: float
    rows_redone: int
    redone_cost_usd: float
    all_on_demand_cost_usd: float
    savings_pct: float
    started_at: float
    ended_at: float
    cpu_percent: float | None = None  # attempts' CPU averages weighted by their billed time
    memory_mb: float | None = None  # the largest of any attempt
    on_demand_rate_usd_per_hour: float | None = None  # the quote `all_on_demand_cost_usd` used
    heartbeat_puts_per_instance_hour: float = 0.0  # the cost of watching: S3 requests, priced below
    heartbeat_put_usd: float = 0.0


def summarize_job(
    job_id: str, attempts: list[AttemptRecord], on_demand_rate_usd_per_hour: float
) -> JobSummary:
    if not attempts:
        raise ValueError(f"job {job_id} has no attempts to summarize")
    spot = [a for a in attempts if a.market == "spot"]
    on_demand = [a for a in attempts if a.market != "spot"]
    total = sum(a.cost_usd for a in attempts)
    all_on_demand = cost_usd(on_demand_rate_usd_per_hour, sum(a.useful_seconds for a in attempts))
    measured = [a for a in attempts if a.cpu_percent is not None and a.billed_seconds > 0]
    weight = sum(a.billed_seconds for a in measured)
    cpu = sum((a.cpu_percent or 0.0) * a.billed_seconds for a in measured) / weight if weight else None
    memory = max((a.memory_mb for a in attempts if a.memory_mb is not None), default=None)
    puts, hours = sum(a.heartbeat_puts for a in attempts), sum(a.billed_seconds for a in attempts) / 3_600
    return JobSummary(
        job_id=job_id,
        attempts=len(attempts),
        interruptions=sum(a.end_reason in INTERRUPTED for a in attempts),
        spot_hours=sum(a.billed_seconds for a in spot) / 3_600,
        on_demand_hours=sum(a.billed_seconds for a in on_demand) / 3_600,
        spot_cost_usd=sum(a.cost_usd for a in spot),
        on_demand_cost_usd=sum(a.cost_usd for a in on_demand),
        total_cost_usd=total,
        rows_redone=sum(a.rows_wasted for a in attempts),
        redone_cost_usd=sum(a.redone_cost_usd for a in attempts),
        all_on_demand_cost_usd=all_on_demand,
        savings_pct=(all_on_demand - total) / all_on_demand * 100 if all_on_demand > 0 else 0.0,
        started_at=min(a.launched_at for a in attempts),
        ended_at=max(a.ended_at for a in attempts),
        cpu_percent=round(cpu, 1) if cpu is not None else None,
        memory_mb=memory,
        on_demand_rate_usd_per_hour=on_demand_rate_usd_per_hour,
        heartbeat_puts_per_instance_hour=puts / hours if hours > 0 else 0.0,
        heartbeat_put_usd=puts * S3_PUT_USD,
    )


def write_ledger(run_dir: Path, attempts: list[AttemptRecord], summary: JobSummary) -> Path:
    """Write `ledger.jsonl` in one step (temp + rename): attempts, then the job line."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "ledger.jsonl"
    lines = [json.dumps({"kind": "attempt", **asdict(a)}) for a in attempts]
    lines.append(json.dumps({"kind": "job", **asdict(summary)}))
    tmp = path.with_name(".ledger.jsonl.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_ledger(path: Path) -> tuple[list[AttemptRecord], JobSummary | None]:
    """Parse a ledger; a line that does not parse is an error that names it."""
    attempts: list[AttemptRecord] = []
    summary = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            kind = record.pop("kind")
            if kind == "attempt":
                attempts.append(AttemptRecord(**record))
            elif kind == "job":
                summary = JobSummary(**record)
            else:
                raise ValueError(f"unknown kind {kind!r}")
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}:{number}: corrupt ledger line ({error})") from None
    return attempts, summary


TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"


def default_tracking_uri(runs_dir: Path) -> str:
    return os.environ.get(TRACKING_URI_ENV) or f"sqlite:///{(runs_dir / 'mlflow.db').resolve()}"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def log_to_mlflow(
    summary: JobSummary,
    attempts: list[AttemptRecord],
    *,
    tracking_uri: str,
    experiment: str = "spotbatch",
    params: dict[str, str] | None = None,
    ledger_path: Path | None = None,
) -> str:
    """One MLflow run per job; returns its run id."""
    with use_experiment(experiment, tracking_uri):
        return _log_run(summary, attempts, params or {}, ledger_path)


@contextmanager
def use_experiment(name: str, tracking_uri: str) -> Iterator[None]:
    """Point MLflow at the store and the experiment for the `with` block, creating the experiment if needed
    with its artifacts beside a SQLite store (`<db folder>/mlartifacts/<experiment>`: MLflow's default is
    `./mlruns` of whatever folder the process runs in). `mlflow.set_tracking_uri` also sets
    MLFLOW_TRACKING_URI, which child processes would inherit: it is put back as it was on the way out."""
    import mlflow

    previous = os.environ.get(TRACKING_URI_ENV)
    try:
        mlflow.set_tracking_uri(tracking_uri)
        if mlflow.get_experiment_by_name(name) is None:
            location = None
            if tracking_uri.startswith("sqlite:///"):
                store = Path(tracking_uri.removeprefix("sqlite:///"))
                location = (store.parent / "mlartifacts" / name).resolve().as_uri()
            mlflow.create_experiment(name, artifact_location=location)
        mlflow.set_experiment(name)
        yield
    finally:
        if previous is None:
            os.environ.pop(TRACKING_URI_ENV, None)
        else:
            os.environ[TRACKING_URI_ENV] = previous


def _log_run(
    summary: JobSummary, attempts: list[AttemptRecord], params: dict[str, str], ledger_path: Path | None
) -> str:
    import mlflow

    types = sorted({a.instance_type for a in attempts})
    with mlflow.start_run(run_name=summary.job_id) as run:
        mlflow.log_params(
            {
                "job_id": summary.job_id,
                "provider": ",".join(sorted({a.provider for a in attempts})),
                "instance_type": ",".join(types),
                "spot_rate_usd_per_hour": _rate(attempts, "spot"),
                # the quoted rate, whether or not an attempt ran on on-demand (spot-only runs have none)
                "on_demand_rate_usd_per_hour": (
                    f"{summary.on_demand_rate_usd_per_hour:g}"
                    if summary.on_demand_rate_usd_per_hour is not None
                    else _rate(attempts, "on-demand")
                ),
                "gpu_count": max(a.gpus for a in attempts),
                "price_source": "; ".join(sorted({a.price_source for a in attempts}))[:500],
                # the cloud clock: a simulated run's runs `time_scale` x ahead of the wall clock
                "first_launch_cloud_clock_utc": _iso(summary.started_at),
                "last_end_cloud_clock_utc": _iso(summary.ended_at),
                **params,
            }
        )
        mlflow.log_metrics(
            {
                "billable_hours": summary.spot_hours + summary.on_demand_hours,
                "spot_hours": summary.spot_hours,
                "on_demand_hours": summary.on_demand_hours,
                "cost_usd": summary.total_cost_usd,
                "all_on_demand_cost_usd": summary.all_on_demand_cost_usd,
                # this run against its own work at the on-demand price; the report's savings compare with
                # the on-demand runs' mean cost (`savings_vs_on_demand_runs_pct`, logged after the matrix)
                "savings_vs_own_work_on_demand_pct": summary.savings_pct,
                "interruptions": summary.interruptions,
                "rows_redone": summary.rows_redone,
                "redone_cost_usd": summary.redone_cost_usd,
                "heartbeat_puts_per_instance_hour": summary.heartbeat_puts_per_instance_hour,
                "heartbeat_put_usd": summary.heartbeat_put_usd,
                **({"cpu_percent": summary.cpu_percent} if summary.cpu_percent is not None else {}),
                **({"memory_mb": summary.memory_mb} if summary.memory_mb is not None else {}),
            }
        )
        if ledger_path is not None:
            mlflow.log_artifact(str(ledger_path))
        return str(run.info.run_id)


def _rate(attempts: list[AttemptRecord], market: str) -> str:
    rates = sorted({a.rate_usd_per_hour for a in attempts if a.market == market})
    return ",".join(f"{r:g}" for r in rates) or "none"
