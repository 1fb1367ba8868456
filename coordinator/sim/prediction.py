"""Simulator only: the matrix model set up exactly as a live run of the matrix is, and its predictions.

The same job spec as the live run (`one_run.job_spec`: prices from the same table, the same checkpoint
interval, cycle and reclaim overhead), the same workload (the instance profile's speed), the same boot model
and the same random interruption model; the delays of the emulator's machinery (the runtime's poll, the
notice poll, the coordinator's cycle) in cloud seconds.

Usage::

    predictions = predict_matrix(settings, region="us-east-1", deadline=2_400.0)
    predictions["spot-only"].mean_cost_usd
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import statistics
from collections.abc import Callable

from coordinator.cost.billing import EC2_LINUX
from coordinator.job.core import JobSpec, plan_segments, quotes_for
from coordinator.sim.injector import RandomInterruptions
from coordinator.sim.instance_runtime import POLL_SECONDS
from coordinator.sim.settings import CONFIGURATIONS, NOTICE_POLL_EVERY, SimulatedRun, SimulationSettings
from coordinator.whatif.matrix_model import LiveSetup, Prediction, predict

SpecFor = Callable[[str, float | None], JobSpec]  # (configuration, deadline) -> the live run's job spec
SAMPLES = 2_000  # runs per configuration: the mean's own error is well under 1% at this count


# first launch after the start, gap between launches, end, a warning to its replacement's launch
Overheads = tuple[float, float, float, float]
OVERHEAD_NAMES = ("first_launch_seconds", "launch_gap_seconds", "end_seconds", "reaction_seconds")
NO_OVERHEADS: Overheads = (0.0, 0.0, 0.0, 0.0)


def live_setup(settings: SimulationSettings, spec: JobSpec, overheads: Overheads = NO_OVERHEADS) -> LiveSetup:
    if settings.trace is not None:
        raise ValueError("the matrix model follows the random interruption model, not a replayed trace")
    quotes = quotes_for(spec)
    model = RandomInterruptions(settings.interruption_probability, settings.interruption_interval)
    scale = settings.time_scale
    return LiveSetup(
        segment_rows=tuple(s.stop - s.start for s in plan_segments(spec.rows, spec.segments, "s3://b/k")),
        cloud_seconds_per_row=settings.workload().cloud_seconds_per_row,
        batch_size=settings.batch_size,
        boot=settings.boot_model,
        time_to_interruption=model.time_to_interruption,
        spot_usd_per_hour=quotes["spot"].rate_usd_per_hour,
        on_demand_usd_per_hour=quotes["on-demand"].rate_usd_per_hour,
        billing=EC2_LINUX,
        cycle_seconds=settings.cycle_seconds * scale,
        notice_poll_seconds=NOTICE_POLL_EVERY * scale,
        discover_seconds=POLL_SECONDS * scale,
        reclaim_overhead_seconds=spec.reclaim_overhead_seconds,
        deadline_seconds=spec.deadline_seconds,
        start_seconds=overheads[0],
        launch_gap_seconds=overheads[1],
        end_seconds=overheads[2],
        reaction_seconds=overheads[3],
    )


def predict_matrix(
    settings: SimulationSettings,
    spec_for: SpecFor,
    deadline: float | None,
    *,
    samples: int = SAMPLES,
    overheads: Overheads = NO_OVERHEADS,
) -> dict[str, Prediction]:
    """Each configuration of the matrix; `spec_for(config, deadline)` builds the live run's job spec;
    `overheads`: the coordinator's own (`measured_overheads`)."""
    predictions = {}
    for config in CONFIGURATIONS:
        if settings.runs.get(config, 0) <= 0:
            continue
        spec = spec_for(config, deadline if config == "deadline" else None)
        setup = live_setup(settings, spec, overheads)
        predictions[config] = predict(
            setup, config, settings.policy_options(config), samples=samples, seed=settings.seed
        )
    return predictions


def measured_overheads(runs: list[SimulatedRun]) -> Overheads:
    """What the coordinator itself takes on this host, in cloud seconds (the model cannot know it
    beforehand): medians over the runs from the job's start to its first launch, between the launches of
    the first attempts, and from the last instance's end to the job's end (terminate, confirm, re-list);
    the mean over every warning from the notice to its segment's next launch (a mean: its long tail, a
    warning for a booting machine, is what lengthens a job)."""
    offsets, gaps, ends, reactions = [], [], [], []
    for run in runs:
        reactions += _reactions(run)
        attempts = run.result.outcome.attempts
        if not attempts:
            continue
        origin = run.result.outcome.ended_cloud - run.job_seconds
        first = sorted(
            min(a.launched_at for a in attempts if a.segment_id == segment)
            for segment in {a.segment_id for a in attempts}
        )
        offsets.append(first[0] - origin)
        gaps += [b - a for a, b in itertools.pairwise(first)]
        ends.append(run.result.outcome.ended_cloud - max(a.ended_at for a in attempts))
    return (
        statistics.median(offsets) if offsets else 0.0,
        statistics.median(gaps) if gaps else 0.0,
        statistics.median(ends) if ends else 0.0,
        statistics.fmean(reactions) if reactions else 0.0,
    )


def _reactions(run: SimulatedRun) -> list[float]:
    """Cloud seconds from each notice the injector served to the next launch of its segment."""
    path = run.result.run_dir / "interruptions.jsonl"
    if not path.is_file():
        return []
    launches: dict[str, list[float]] = {}
    for attempt in run.result.outcome.attempts:
        launches.setdefault(attempt.segment_id, []).append(attempt.launched_at)
    reactions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        served = json.loads(line)
        if served.get("kind") != "notice":
            continue
        later = [t for t in launches.get(served["segment_id"], []) if t >= served["notice_cloud"]]
        if later:
            reactions.append(min(later) - served["notice_cloud"])
    return reactions


def model_deadline(settings: SimulationSettings, spec_for: SpecFor) -> float:
    """The deadline configuration's deadline: `deadline_factor` x the modelled mean on-demand job time
    (the same for every round: it does not follow the live runs), or the fixed one. On-demand is never
    interrupted, so a replayed trace does not change it."""
    if settings.deadline_seconds is not None:
        return settings.deadline_seconds
    setup = live_setup(dataclasses.replace(settings, trace=None), spec_for("on-demand", None))
    on_demand = predict(setup, "on-demand", {}, samples=SAMPLES, seed=settings.seed)
    return math.ceil(settings.deadline_factor * on_demand.mean_job_seconds)
