"""Scale: the coordinator's CPU per monitoring cycle with 50 to 500 instances.

    python -m bench.scale [--sizes 50,100,200,500] [--cycles 5]

The AWS stack is applied to a moto server (its own process), which holds the instances; a stub process
(its own process) rewrites each segment's heartbeat every 2 s, as workers would. The coordinator runs in
this process: one cycle launches every segment on spot (not measured), then `--cycles` monitoring cycles
are measured with `time.process_time()` (this process's CPU only, not moto's or the stub's) and wall time.
The baseline is the smallest size, measured in the same run; the growth per instance should stay flat.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coordinator.cost.budget import BudgetGuard
from coordinator.job.clock import CloudClock
from coordinator.job.controller import Controller
from coordinator.job.fleet import Fleet
from coordinator.job.runner import quotes_for
from coordinator.job.segments import plan_segments
from coordinator.job.spec import JobSpec
from coordinator.job.state import CoordinatorState
from coordinator.policies.registry import make_policy
from coordinator.sim.emulator_stack import Infrastructure, emulator_infrastructure
from coordinator.stack.target import AwsTarget
from inference.heartbeat import Heartbeat
from inference.layout import heartbeat_key, job_prefix
from inference.storage import S3Store

STUB_EVERY = 2.0  # seconds between a stub's heartbeats, the worker's default


def heartbeat_stub(target: AwsTarget, bucket: str, job_id: str, segments: list[str], stop: Any) -> None:
    """Every segment's heartbeat, `running`, for its first attempt, rewritten every STUB_EVERY seconds."""
    s3 = target.client("s3")
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
        stop.wait(STUB_EVERY)


def measure(infra: Infrastructure, size: int, cycles: int, tmp: Path) -> dict[str, float]:
    stack = infra.stack
    ec2, s3 = infra.target.client("ec2"), infra.target.client("s3")
    job = f"scale-{size}"
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
    )
    launch_started = time.monotonic()
    controller.cycle()  # launches every segment
    launch_seconds = time.monotonic() - launch_started
    stop = multiprocessing.get_context("spawn").Event()
    stub = multiprocessing.get_context("spawn").Process(
        target=heartbeat_stub, args=(infra.target, stack.bucket, job, [s.segment_id for s in segments], stop)
    )
    stub.start()
    time.sleep(STUB_EVERY + size * 0.01)  # the first round of beats is in
    cpu, wall = [], []
    for _ in range(cycles):
        c0, w0 = time.process_time(), time.monotonic()
        controller.cycle()
        cpu.append(time.process_time() - c0)
        wall.append(time.monotonic() - w0)
    stop.set()
    stub.join(30)
    running = sum(row.state == "RUNNING" for row in state.segments(job))
    controller.abandon("benchmark over")
    state.close()
    return {
        "size": size,
        "cpu_s": statistics.median(cpu),
        "wall_s": statistics.median(wall),
        "launch_s": launch_seconds,
        "running": running,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="50,100,200,500")
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("coordinator").setLevel(
        logging.ERROR
    )  # not a line per instance when each size is torn down
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp, emulator_infrastructure(Path(tmp) / "stack") as infra:
        for size in sizes:
            result = measure(infra, size, args.cycles, Path(tmp))
            results.append(result)
            print(
                f"{size:>4} instances: coordinator CPU per cycle {result['cpu_s'] * 1000:7.1f} ms "
                f"({result['cpu_s'] / size * 1000:5.2f} ms per instance), wall per cycle "
                f"{result['wall_s']:.2f} s, "
                f"{result['running']} segments seen running, launching all took {result['launch_s']:.1f} s",
                flush=True,
            )
    base, top = results[0], results[-1]
    print(
        f"growth {base['size']} -> {top['size']} instances ({top['size'] / base['size']:.0f}x): CPU per "
        "cycle "
        f"{top['cpu_s'] / base['cpu_s']:.1f}x, CPU per instance "
        f"{top['cpu_s'] / top['size'] / (base['cpu_s'] / base['size']):.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
