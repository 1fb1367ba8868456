"""Scale: the coordinator's CPU and requests per monitoring cycle with 200 to 1,000 instances.

    python -m bench.scale [--sizes 200,500,1000] [--cycles 5] [--beat-seconds 30] [--cycle-seconds 5]

The AWS stack is applied to a moto server (its own process), which holds the instances; a stub process
(its own process) rewrites each segment's heartbeat every `--beat-seconds`, spread evenly, as steady
workers would. The coordinator runs in this process, with the stack's events queue as `spotbatch run`
has it: one cycle launches every segment on spot (its wall reported: the launches go out `LAUNCHERS` at a
time), then two sets of monitoring cycles, `--cycle-seconds` apart, are measured on the same fleet:

- baseline: `--cycles` cycles that list every instance of the job each cycle (the monitor without an events
  queue, and every cycle before EC2's events were used);
- events: the cycles of one full-look period (`FULL_LOOK_SECONDS`): instances are described only where no
  fresh heartbeat vouches for them, and the whole job is listed once in the period (the mean includes it).
  A job of at most `SMALL_JOB` (100) instances is listed whole every cycle either way: smaller sizes show
  no difference.

Each: this process's CPU (`time.process_time()`: not moto's, not the stub's), wall, the AWS requests by
operation, and the wall spent inside those calls (the emulator's latency, botocore's own work included;
summed over the threads that fetch heartbeats). CPU per instance should stay flat across sizes, and the
heartbeat GETs should follow the heartbeats that changed (about cycle/beat of the segments), not the
segment count.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import logging
import math
import multiprocessing
import pstats
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.request_meter import RequestMeter
from coordinator.cost.budget import BudgetGuard
from coordinator.job.aws import EventQueue, Fleet, owners_by_tag
from coordinator.job.core import CloudClock, CoordinatorState, JobSpec, plan_segments, quotes_for
from coordinator.job.loop import FULL_LOOK_SECONDS, Controller
from coordinator.policies.registry import make_policy
from coordinator.sim.emulator_stack import Infrastructure, emulator_infrastructure
from coordinator.stack.target import AwsTarget
from inference.heartbeat import Heartbeat
from inference.layout import heartbeat_key, job_prefix
from inference.s3_store import S3Store


def heartbeat_stub(
    target: AwsTarget, bucket: str, job_id: str, segments: list[str], every: float, stop: Any
) -> None:
    """Every segment's heartbeat, `running`, for its first attempt, once every `every` seconds, spread."""
    s3 = target.client("s3")
    gap = every / max(1, len(segments))
    while not stop.is_set():
        for segment in segments:
            beat = Heartbeat(
                segment, "stub", "spot", f"{job_id}/{segment}/1", 1_000, rows_done=10, ts=time.time()
            )
            s3.put_object(
                Bucket=bucket,
                Key=f"{job_prefix(job_id)}/{heartbeat_key(segment)}",
                Body=json.dumps(asdict(beat)).encode(),
            )
            if stop.wait(gap):
                return


def controller_for(
    infra: Infrastructure, size: int, ec2: Any, s3: Any, tmp: Path, events: EventQueue | None = None
) -> tuple[Controller, CoordinatorState]:
    """A spot-only job of `size` segments on the stack, and its state (in `tmp`)."""
    stack, job = infra.stack, f"scale-{size}"
    spec = JobSpec(
        job_id=job,
        input_key="data/none.parquet",
        rows=size * 1_000,
        segments=size,
        policy="spot-only",
        heartbeat_timeout=3_600,
        boot_timeout=3_600,
        cycle_seconds=0,
    )
    state = CoordinatorState(tmp / f"{job}.db")
    segments = plan_segments(spec.rows, size, "s3://x")
    state.create_job(job, config={}, segments=[(s.segment_id, s.start, s.stop) for s in segments])
    controller = Controller(
        spec=spec,
        state=state,
        store=S3Store(stack.bucket, job_prefix(job), client=s3),
        policy=make_policy("spot-only"),
        fleet=Fleet(ec2, templates=stack.launch_template_ids, subnets=stack.subnet_ids),
        guard=BudgetGuard(1e9, tmp / f"{job}.spend.jsonl"),
        quotes=quotes_for(spec),
        clock=CloudClock(),
        events=events,
    )
    return controller, state


def measure(infra: Infrastructure, size: int, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    stack, meter = infra.stack, RequestMeter()
    ec2, s3 = meter.attach(infra.target.client("ec2")), meter.attach(infra.target.client("s3"))
    job = f"scale-{size}"
    events = EventQueue(infra.target.client("sqs"), stack.events_queue_url, job, owners=owners_by_tag(ec2))
    controller, state = controller_for(infra, size, ec2, s3, tmp, events.start())
    launch_started = time.monotonic()
    controller.cycle()  # launches every segment
    launch_seconds = time.monotonic() - launch_started
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    ids = [row.segment_id for row in state.segments(job)]
    stub = context.Process(
        target=heartbeat_stub, args=(infra.target, stack.bucket, job, ids, args.beat_seconds, stop)
    )
    stub.start()
    time.sleep(args.beat_seconds + 2)  # every segment has beaten once
    controller.cycle()  # the first look fetches every heartbeat; the steady cycles follow
    meter.take()
    watch = controller.monitor.instances
    watch.full_look_seconds = None  # the baseline: the whole job listed every cycle
    baseline = cycles(controller, meter, args.cycles, args.cycle_seconds)
    watch.full_look_seconds = FULL_LOOK_SECONDS
    watch.look_again()  # the period starts with its full listing
    period = math.ceil(FULL_LOOK_SECONDS / args.cycle_seconds)
    profile = cProfile.Profile() if args.profile else None
    with_events = cycles(controller, meter, period, args.cycle_seconds, profile)
    if profile is not None:
        profile.dump_stats(f"{args.profile}.{size}")
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    stop.set()
    stub.join(30)
    running = sum(row.state == "RUNNING" for row in state.segments(job))
    controller.abandon("benchmark over")
    events.close()
    state.close()
    return {
        "size": size,
        "baseline": baseline,
        "events": with_events,
        "launch_s": launch_seconds,
        "running": running,
    }


def cycles(
    controller: Controller,
    meter: RequestMeter,
    count: int,
    gap: float,
    profile: cProfile.Profile | None = None,
) -> dict[str, float]:
    """`count` monitoring cycles `gap` seconds apart: medians, and the mean CPU and describes (`profile`:
    the cycles under it)."""
    cpu, wall, in_calls, gets, lists, describes = [], [], [], [], [], []
    for _ in range(count):
        time.sleep(gap)
        c0, w0 = time.process_time(), time.monotonic()
        if profile is not None:
            profile.enable()
        controller.cycle()
        if profile is not None:
            profile.disable()
        cpu.append(time.process_time() - c0)
        wall.append(time.monotonic() - w0)
        taken = meter.take()
        calls = taken.calls
        in_calls.append(taken.seconds)
        gets.append(calls["GetObject"])
        lists.append(calls["ListObjectsV2"])
        describes.append(calls["DescribeInstances"])
    return {
        "cpu_s": statistics.median(cpu),
        "cpu_mean_s": statistics.mean(cpu),
        "wall_s": statistics.median(wall),
        "in_calls_s": statistics.median(in_calls),
        "gets": statistics.median(gets),
        "lists": statistics.median(lists),
        "describes": statistics.median(describes),
        "describes_mean": statistics.mean(describes),
    }


def line(label: str, size: int, r: dict[str, float]) -> str:
    return (
        f"  {label:<8} CPU per cycle {r['cpu_s'] * 1000:7.1f} ms median, "
        f"{r['cpu_mean_s'] * 1000:7.1f} ms mean "
        f"({r['cpu_mean_s'] / size * 1000:5.2f} ms per instance); wall {r['wall_s']:.2f} s, in AWS calls "
        f"{r['in_calls_s']:.2f} s; per cycle {r['lists']:.0f} ListObjectsV2, {r['gets']:.0f} GetObject, "
        f"{r['describes']:.0f} DescribeInstances (mean {r['describes_mean']:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="200,500,1000")
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--beat-seconds", type=float, default=30.0, help="a steady worker's heartbeat period")
    parser.add_argument("--cycle-seconds", type=float, default=5.0, help="the coordinator's cycle")
    parser.add_argument("--profile", help="profile the events cycles into PATH.<size> and print the top")
    args = parser.parse_args()
    logging.getLogger("coordinator").setLevel(logging.ERROR)  # not a line per instance at teardown
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp, emulator_infrastructure(Path(tmp) / "stack") as infra:
        for size in sizes:
            r = measure(infra, size, args, Path(tmp))
            results.append(r)
            print(
                f"{size:>5} instances: launching all took {r['launch_s']:.1f} s; {r['running']} seen running",
                flush=True,
            )
            print(line("baseline", size, r["baseline"]), flush=True)
            print(line("events", size, r["events"]), flush=True)
            print(
                f"  events/baseline: CPU per cycle (mean) "
                f"{r['events']['cpu_mean_s'] / r['baseline']['cpu_mean_s']:.2f}x",
                flush=True,
            )
    base, top = results[0], results[-1]
    for mode in ("baseline", "events"):
        b, t = base[mode], top[mode]
        print(
            f"{mode} growth {base['size']} -> {top['size']} instances ({top['size'] / base['size']:.0f}x): "
            f"CPU per cycle {t['cpu_mean_s'] / b['cpu_mean_s']:.1f}x, CPU per instance "
            f"{t['cpu_mean_s'] / top['size'] / (b['cpu_mean_s'] / base['size']):.2f}x, GETs per cycle "
            f"{t['gets'] / max(b['gets'], 1):.1f}x (expected with changed heartbeats: "
            f"{args.cycle_seconds / args.beat_seconds * top['size']:.0f} at {top['size']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
