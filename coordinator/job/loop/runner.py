"""One job from start to files: state, fleet, controller, merge, ledger, MLflow: the same on moto and on AWS.

`run_job` is what `spotbatch simulate` calls once per run and what a real run calls once: it creates (or,
with the same job id, resumes) the job's state under its run folder, drives the controller to the end,
merges the outputs when every segment is done, and writes the run's files:

    <run_dir>/state.db            coordinator state (SQLite: segments, attempts, events)
    <run_dir>/events.jsonl        the event log, one transition per line with its reason
    <run_dir>/ledger.jsonl        every attempt priced, with its CPU and memory, and the job's summary
    <run_dir>/usage.jsonl         each attempt's CPU and memory, read from CloudWatch when it ended
    <run_dir>/predictions.csv     id, text, label, prediction, score: every input row exactly once
    <run_dir>/predictions.parquet
    <run_dir>/run.json            the job's settings and outcome
    <run_dir>/coordinator.log     decisions and a status line per instance every 30 cloud seconds

The job's workers get a role of their own (`roles.py`), made before the first launch and deleted once the
job's last instance shows terminated (not merely shutting down: its OS still ships logs with the role).

Usage::

    cloud = CloudTarget.connect(AwsTarget.real(), StackOutputs.read(Path("runs/infra/aws/outputs.json")))
    outcome = run_job(spec, cloud=cloud, guard=guard, clock=clock, run_dir=Path("runs/job-1"))
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from coordinator.cost.budget import BudgetGuard
from coordinator.cost.job_quotes import JobQuotes
from coordinator.cost.ledger import summarize_job, write_ledger
from coordinator.cost.pricing import PriceTable
from coordinator.cost.zone_prices import ZonePrices
from coordinator.errors import JobInterrupted
from coordinator.job.aws import (
    CloudTarget,
    EventQueue,
    Fleet,
    JobRoles,
    UsageRecorder,
    WorkerLogTail,
    owners_by_tag,
)
from coordinator.job.core import CloudClock, CoordinatorState, JobSpec, quotes_for
from coordinator.job.data import JobManifest, MergeReport, merge_results, open_job, verify_outputs
from coordinator.job.loop.controller import INTERRUPTED, Controller, JobOutcome
from coordinator.job.loop.lease import JobLease, lease_key
from coordinator.job.loop.progress import SegmentStatus, run_log
from coordinator.policies.registry import make_policy
from inference.layout import job_prefix
from inference.s3_store import S3Store


@dataclass(frozen=True, slots=True)
class RunResult:
    outcome: JobOutcome
    merge: MergeReport | None
    ledger_path: Path | None
    run_dir: Path
    manifest: JobManifest | None = None  # the verified output in S3 (None: the job did not finish)


def _deadline_record(spec: JobSpec, outcome: JobOutcome, clock: CloudClock) -> dict[str, Any]:
    if spec.deadline_seconds is None:
        return {}
    finished = outcome.ended_cloud - clock.origin
    return {
        "deadline_seconds": spec.deadline_seconds,
        "deadline_met": outcome.succeeded and finished <= spec.deadline_seconds,
    }


def run_job(
    spec: JobSpec,
    *,
    cloud: CloudTarget,
    guard: BudgetGuard,
    clock: CloudClock,
    run_dir: Path,
    extra: dict[str, Any] | None = None,
    on_cycle: Callable[[list[SegmentStatus]], None] | None = None,
    quotes: JobQuotes | None = None,
) -> RunResult:
    """`quotes`: every market's quote for each of the job's types (the price table's when None)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    state = CoordinatorState(run_dir / "state.db")
    roles = JobRoles(cloud.iam, cloud.stack, account=cloud.account, shape=cloud.worker_policy)
    try:
        bucket_store = S3Store(cloud.bucket, "", client=cloud.s3)
        clock = open_job(state, spec, bucket_store, clock)
        job_store = S3Store(cloud.bucket, job_prefix(spec.job_id), client=cloud.s3)
        quotes = quotes or quotes_for(spec)
        usage = UsageRecorder(
            cloud.cloudwatch, cloud.stack.metrics_namespace, run_dir / "usage.jsonl", clock=clock
        )
        with _lease(cloud, spec, run_dir) as lease, run_log(run_dir):  # JobLeaseHeld: another coordinator
            controller = Controller(
                spec=spec,
                state=state,
                fleet=_fleet(cloud, roles.ensure(spec.job_id).instance_profile_arn, clock, spec, quotes),
                store=job_store,
                policy=make_policy(spec.policy, **spec.policy_options),
                guard=guard,
                quotes=quotes,
                clock=clock,
                on_cycle=on_cycle,
                events=_event_queue(cloud, spec.job_id) if spec.use_events else None,
                lease=lease,
            )
            outcome = _drive(controller, cloud, spec, roles, usage)
        manifest, merge = (
            _verify(state, spec, job_store, bucket_store, run_dir)
            if outcome.succeeded and not outcome.stopped
            else (None, None)
        )
        ledger_path = _ledger(run_dir, spec, outcome, usage, quotes)
        verified = {"rows_verified": manifest.rows, "output_digest": manifest.digest} if manifest else {}
        _write_records(run_dir, state, spec, clock, outcome, merge, {**verified, **(extra or {})})
        if outcome.stopped == INTERRUPTED:
            raise JobInterrupted(outcome)
        return RunResult(outcome, merge, ledger_path, run_dir, manifest)
    finally:
        state.close()


def _drive(
    controller: Controller, cloud: CloudTarget, spec: JobSpec, roles: JobRoles, usage: UsageRecorder
) -> JobOutcome:
    """The controller run to its end (a clean stop's outcome kept), each ended attempt's usage read and a
    failed one's log tail shown, and the job's role deleted once its instances are gone."""
    tail = WorkerLogTail(cloud.logs, cloud.stack.log_group, job_id=spec.job_id)
    controller.on_attempt_end(usage.attempt_ended)
    controller.on_attempt_end(tail.attempt_ended)
    try:
        outcome = controller.run()
    except JobInterrupted as cut:  # stopped cleanly: the cut job's records are written, then it ends
        outcome = cut.outcome  # type: ignore[assignment]
    finally:  # the job's instances are confirmed gone (or a kill left them to their lifetime)
        _delete_role(roles, spec, cloud.ec2)
    return _with_log_reasons(outcome, tail)


def _verify(
    state: CoordinatorState, spec: JobSpec, job_store: S3Store, bucket: S3Store, run_dir: Path
) -> tuple[JobManifest, MergeReport | None]:
    """Exactly once from the manifests (`MergeError` if not), then the small job's files when it fetches."""
    segments = state.segments(spec.job_id)
    manifest = verify_outputs(job_store, segments, job_id=spec.job_id)
    if not spec.fetch_results:
        return manifest, None
    return manifest, merge_results(job_store, bucket, segments, run_dir, default_input_key=spec.input_key)


def _ledger(
    run_dir: Path, spec: JobSpec, outcome: JobOutcome, usage: UsageRecorder, quotes: JobQuotes
) -> Path | None:
    """`ledger.jsonl`: every attempt priced, with its CPU and memory, and the job's summary (None: none)."""
    if not outcome.attempts:
        return None
    records = usage.fill(outcome.attempts)
    return write_ledger(
        run_dir, records, summarize_job(spec.job_id, records, quotes["on-demand"].rate_usd_per_hour)
    )


def _lease(cloud: CloudTarget, spec: JobSpec, run_dir: Path) -> JobLease:
    """The job's lease in its S3 prefix: one coordinator per job, across machines."""
    return JobLease(cloud.s3, cloud.bucket, lease_key(spec.job_id), run_dir=run_dir)


def _with_log_reasons(outcome: JobOutcome, tail: WorkerLogTail) -> JobOutcome:
    """Each failure with the last words of its worker's (or boot's) log, where CloudWatch has them."""
    failures = {
        s: f"{why}; its log ends: {tail.reasons[s]}" if s in tail.reasons else why
        for s, why in outcome.failures.items()
    }
    return replace(outcome, failures=failures)


def _fleet(
    cloud: CloudTarget, instance_profile_arn: str, clock: CloudClock, spec: JobSpec, quotes: JobQuotes
) -> Fleet:
    """The job's fleet: its pools are the stack's zones times the job's types (the template's type, not
    overridden, when the job names none), each zone priced by its zone ID."""
    subnets = cloud.stack.subnet_ids
    zones = ZonePrices.for_zones(PriceTable.load(), cloud.ec2, region=spec.region, zones=list(subnets))
    return Fleet(
        cloud.ec2,
        templates=cloud.stack.launch_template_ids,
        versions={market: cloud.stack.template_version(market) for market in cloud.stack.launch_template_ids},
        subnets=subnets,
        instance_profile_arn=instance_profile_arn,
        instance_types=list(spec.instance_types) or None,
        price=lambda market, kind: quotes.of(market, kind).rate_usd_per_hour,
        zone_price=lambda market, kind, zone: zones.of(market, kind or spec.instance_type, zone),
        clock=clock.now,  # a zone's capacity refusal is remembered in the job's (cloud) seconds
    )


def _event_queue(cloud: CloudTarget, job_id: str) -> EventQueue | None:
    """EC2's events for the job from the stack's queue (a stack applied before it had one: none)."""
    if not cloud.stack.events_queue_url:
        logging.getLogger("coordinator").warning(
            "the stack has no events queue: apply it again to act on EC2's interruption warnings"
        )
        return None
    return EventQueue(
        cloud.target.client("sqs"), cloud.stack.events_queue_url, job_id, owners=owners_by_tag(cloud.ec2)
    )


def _delete_role(roles: JobRoles, spec: JobSpec, ec2: Any) -> None:
    try:
        roles.delete_after_shutdown(spec.job_id, ec2.describe_instances, every=spec.cycle_seconds)
    except Exception as error:  # never hide the job's own outcome; destroy-real removes leftovers
        logging.getLogger("coordinator").warning("job %s: role not deleted: %s", spec.job_id, error)


def _write_records(
    run_dir: Path,
    state: CoordinatorState,
    spec: JobSpec,
    clock: CloudClock,
    outcome: JobOutcome,
    merge: MergeReport | None,
    extra: dict[str, Any],
) -> None:
    """`events.jsonl` (every transition) and `run.json` (the job's settings and outcome, and `extra`)."""
    events = [asdict(e) for e in state.events(spec.job_id)]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    record = {
        "spec": asdict(spec),
        "time_scale": clock.scale,
        "clock_origin": clock.origin,
        "segments_done": outcome.segments_done,
        "segments_total": outcome.segments_total,
        "failures": outcome.failures,
        "rows_merged": merge.rows if merge else 0,
        "wall_seconds": round(outcome.wall_seconds, 3),
        # the job time: from the job's start (its clock's origin, kept across a resume) to its end; the
        # deadline is judged on the same figure
        "cloud_seconds": round(outcome.ended_cloud - clock.origin, 3),
        "api_retries": outcome.api_retries,
        "stopped": outcome.stopped,
        **_deadline_record(spec, outcome, clock),
        **extra,
    }
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    (run_dir / "run.json").write_text(text, encoding="utf-8")
