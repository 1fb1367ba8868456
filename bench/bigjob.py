"""A big job's data and control planes: a dataset of millions of rows in the emulator's S3, workers that
stream it and commit by manifest, and a coordinator that proves exactly once reading no prediction row.

    python -m bench.bigjob [--rows 10000000] [--segments 1000] [--files 10] [--workers 2] [--seed 0]

A moto server (its own process) holds the bucket. A spawned process generates the dataset, `--files`
Parquet files of int64 ids and short synthetic texts, with row groups sized as `spotbatch data prepare`
sizes them (`inference/dataset.row_group_rows`), streamed to S3 without holding a file in memory.

Then this process is the coordinator, measured: it lists the input and reads its footers, cuts the segments,
computes each segment's id digest from the id column (`coordinator/job/data/input_dataset.py`), makes the
job's state (SQLite), and runs the job: every cycle (`--cycle-seconds`) it reads the heartbeats that changed
(`HeartbeatReader`, as the controller does), reaps attempts that ended and launches pending segments,
`--workers` at a time. An attempt is a forked process running the real worker (`inference.segment_run`) with a
declared cheap stand-in model (`bench/bigjob_worker.py`): this bench measures data and control, not inference,
and the workers run unpaced (a pace only stretches the wall). Interruptions at the task's rate: each spot
attempt is warned (SIGTERM, a drain) with the chance that the task's 30%-per-5-minutes gives an hour-long
segment (`--interruption-probability`, drawn from `--seed`) at a uniform point of its expected time; a drained
segment is relaunched and resumes from its checkpoint. At the end it verifies every segment's manifest against
its input digest and writes the job's manifest (`coordinator/job/data/verify.py`).

It prints the coordinator's peak RSS, its CPU per cycle, its S3 requests by kind and bytes read per phase
(plan, run, verify), the verify time, and the workers' peak RSS per attempt. Compare sizes by running it at
each (`--rows 1000000`, `--rows 10000000`); the control loop at 1,000 instances is `bench.scale`'s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.bigjob_scheduler import BUCKET, JOB, RunStats, Scheduler
from bench.request_meter import RequestMeter
from coordinator.job.core import CoordinatorState, Segment
from coordinator.job.data import cut_segments, input_digests, list_input, verify_outputs
from coordinator.sim.emulator import MotoServer
from inference.layout import job_prefix
from inference.s3_store import S3Store, make_s3_client

WORDS = ("a fine film", "dull and long", "the best this year", "not worth it", "quietly moving", "so-so")
log = logging.getLogger("bench.bigjob")


def _rows(start: int, stop: int) -> Any:
    """Rows `[start, stop)` of the synthetic dataset: id, and a short text ending in the id."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pa.array(np.arange(start, stop, dtype=np.int64))
    words = pa.array(WORDS).take(pa.array(np.arange(start, stop) % len(WORDS)))
    return pa.table({"id": ids, "text": pc.binary_join_element_wise(words, ids.cast(pa.string()), " ")})


def generate(rows: int, files: int, prefix: str) -> None:
    """The dataset, file by file, one row group in memory at a time (runs in a spawned process)."""
    import pyarrow.parquet as pq

    from inference.dataset import row_group_rows

    s3 = make_s3_client()
    group = row_group_rows(_rows(0, 10_000))  # as `spotbatch data prepare` would size them
    bounds = [rows * f // files for f in range(files + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        for number, (first, stop) in enumerate(itertools.pairwise(bounds)):
            path = Path(tmp) / f"part-{number:04d}.parquet"
            with pq.ParquetWriter(path, _rows(0, 1).schema) as writer:
                for start in range(first, stop, group):
                    writer.write_table(_rows(start, min(stop, start + group)), row_group_size=group)
            s3.upload_file(str(path), BUCKET, f"{prefix}{path.name}")
            path.unlink()


@dataclass
class Phase:
    """What the coordinator spent in one phase: wall, its own CPU, S3 requests by kind, bytes read."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    requests: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0

    def line(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.requests.items()))
        return (
            f"wall {self.wall_s:.1f} s, CPU {self.cpu_s:.2f} s, read {self.bytes_read / 1e6:.2f} MB; {kinds}"
        )


class Measured:
    def __init__(self, meter: RequestMeter, phase: Phase) -> None:
        self.meter, self.phase = meter, phase

    def __enter__(self) -> Phase:
        self.meter.take()
        self.wall, self.cpu = time.monotonic(), time.process_time()
        return self.phase

    def __exit__(self, *exc: object) -> None:
        self.phase.wall_s += time.monotonic() - self.wall
        self.phase.cpu_s += time.process_time() - self.cpu
        taken = self.meter.take()
        self.phase.requests.update(taken.calls)
        self.phase.bytes_read += taken.bytes_read


def plan(store: S3Store, prefix: str, segments: int, state: CoordinatorState) -> list[Segment]:
    """The coordinator's start: footers, segments, each segment's input digest, the job's state."""
    files = list_input(store, prefix)
    cut = cut_segments(files, count=segments, segment_rows=None, bucket=BUCKET)
    digests = input_digests(store, cut, id_column="id")
    rows = [(s.segment_id, s.start, s.stop, s.input_key, digests[s.segment_id]) for s in cut]
    state.create_job(JOB, config={"bench": "bigjob"}, segments=rows)
    return cut


def _workers_line(stats: RunStats) -> str:
    reports = stats.reports
    peaks = sorted(r.get("peak_rss_mb", 0.0) for r in reports)
    growth = sorted(r.get("peak_rss_mb", 0.0) - r.get("forked_rss_mb", 0.0) for r in reports)
    requests: Counter[str] = Counter()
    for report in reports:
        requests.update(report.get("requests", {}))
    states = Counter(r["state"] for r in reports)
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(requests.items()))
    read = sum(r.get("bytes_read", 0) for r in reports)
    return (
        f"workers: {len(reports)} attempts ({dict(states)}), {stats.warned} warned; peak RSS per attempt "
        "median "
        f"{statistics.median(peaks):.0f} MB, max {peaks[-1]:.0f} MB (over the forked process's own: median "
        f"{statistics.median(growth):.0f} MB, max {growth[-1]:.0f} MB); read {read / 1e6:.0f} MB; rows/s per "
        f"worker median {statistics.median(stats.rows_per_s or [0.0]):,.0f}; requests: {kinds}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--segments", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2, help="attempts at once (this host's cores)")
    # 30% per 5 minutes over a segment's hour: 1 - 0.7**12 = 0.986; over its first 10 minutes, 0.51
    parser.add_argument("--interruption-probability", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--checkpoint-every", type=int, default=16, help="batches per chunk and part")
    parser.add_argument("--cycle-seconds", type=float, default=0.2)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder, MotoServer() as aws:
        tmp, target = Path(folder), aws.target()
        os.environ.update(
            AWS_ENDPOINT_URL=aws.endpoint,
            AWS_ACCESS_KEY_ID=target.credentials[0],
            AWS_SECRET_ACCESS_KEY=target.credentials[1],
            AWS_DEFAULT_REGION=target.region,
        )
        make_s3_client().create_bucket(Bucket=BUCKET)
        prefix = f"data/rows-{args.rows}/"
        started = time.monotonic()
        generator = multiprocessing.get_context("spawn").Process(
            target=generate, args=(args.rows, args.files, prefix)
        )
        generator.start()
        generator.join()
        took = time.monotonic() - started
        print(
            f"dataset: {args.rows:,} rows in {args.files} files, made in {took:.0f} s (not measured)",
            flush=True,
        )
        return report(args, tmp, prefix)


def _bytes_under(store: S3Store, prefix: str) -> int:
    pages = store.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sum(item["Size"] for page in pages for item in page.get("Contents", []))


def report(args: argparse.Namespace, tmp: Path, prefix: str) -> int:
    meter = RequestMeter().install()
    state = CoordinatorState(tmp / "state.db")
    phases = {name: Phase() for name in ("plan", "run", "verify")}
    bucket = S3Store(BUCKET, "")
    with Measured(meter, phases["plan"]):
        segments = plan(bucket, prefix, args.segments, state)
    print(f"coordinator plan: {len(segments)} segments; {phases['plan'].line()}", flush=True)
    with Measured(meter, phases["run"]):
        stats = Scheduler(args, segments, tmp).run()
    with Measured(meter, phases["verify"]):
        manifest = verify_outputs(S3Store(BUCKET, job_prefix(JOB)), state.segments(JOB), job_id=JOB)
    cycles = sorted(stats.cycles)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mean, p95, top = statistics.mean(cycles), cycles[int(len(cycles) * 0.95)], cycles[-1]
    print(
        f"coordinator run: {len(cycles)} cycles, CPU per cycle mean {mean * 1000:.1f} ms, p95 "
        f"{p95 * 1000:.1f} ms, max {top * 1000:.1f} ms; {phases['run'].line()}"
    )
    print(f"coordinator verify (from manifests, no prediction row read): {phases['verify'].line()}")
    print(f"coordinator peak RSS {peak:.0f} MB")
    data, output = _bytes_under(bucket, prefix), _bytes_under(bucket, f"{job_prefix(JOB)}/parts/")
    read = sum(phase.bytes_read for phase in phases.values())
    print(
        f"coordinator read {read / 1e6:.1f} MB in all: {read / data:.3f}x the input ({data / 1e6:.0f} MB) "
        "and "
        f"none of the output ({output / 1e6:.0f} MB in parts); a merge on this machine would read both whole"
    )
    print(_workers_line(stats))
    print(
        f"exactly once: {manifest.rows:,} rows in {len(manifest.parts)} parts, digest {manifest.digest} "
        "(the input's)"
    )
    if args.json:
        figures = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "peak_rss_mb": peak,
            "segments": len(segments),
            "phases": {k: {**asdict(v), "requests": dict(v.requests)} for k, v in phases.items()},
            "cycles_cpu_s": cycles,
            "warned": stats.warned,
            "worker_reports": stats.reports,
            "rows": manifest.rows,
        }
        args.json.write_text(json.dumps(figures))
    state.close()
    return 0 if manifest.rows == args.rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
