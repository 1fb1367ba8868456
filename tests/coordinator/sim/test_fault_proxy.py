"""The simulator's and the coordinator's small parts: monitor rules, interruption models, traces, the
fault proxy (real HTTP, parsed by botocore), merge verification, the cloud clock."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.config import Config

from coordinator.errors import CapacityError, LaunchError, MergeError, TraceError
from coordinator.job.clock import CloudClock
from coordinator.job.fleet import Fleet
from coordinator.job.merge import merge_results
from coordinator.job.monitor import ActiveAttempt, judge
from coordinator.sim.fault_proxy import FaultProxy, FaultRule
from coordinator.sim.injector import RandomInterruptions, TraceReplay
from coordinator.whatif.traces import AvailabilityTrace
from inference.checkpoint import Checkpoint, encode_part, save_checkpoint
from inference.heartbeat import Heartbeat
from inference.storage import LocalStore

ATTEMPT = ActiveAttempt("seg-0000", "job/seg-0000/1", "i-1", "spot", launched_wall=1_000.0)


def beat(state: str, ts: float, attempt: str = "job/seg-0000/1") -> Heartbeat:
    return Heartbeat("seg-0000", "i-1", "spot", attempt, 100, state=state, ts=ts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("heartbeat", "instance", "now", "expected"),
    [
        (beat("done", 1_010), "terminated", 1_011, "done"),  # done wins even once the instance is gone
        (beat("failed", 1_010), "running", 1_011, "failed"),
        (beat("draining", 1_010), "shutting-down", 1_011, "draining"),
        (beat("running", 1_010), "terminated", 1_011, "lost"),
        (beat("running", 1_010), None, 1_011, "lost"),  # not listed at all
        (beat("running", 1_010), "running", 1_031, "lost"),  # 21 s without a beat, timeout 20
        (beat("running", 1_010), "running", 1_029, "running"),
        (None, "pending", 1_050, "booting"),
        (None, "running", 1_101, "lost"),  # boot timeout 100 s
    ],
)
def test_monitor_rules(heartbeat: Heartbeat | None, instance: str | None, now: float, expected: str) -> None:
    verdict, reason = judge(ATTEMPT, heartbeat, instance, now=now, heartbeat_timeout=20, boot_timeout=100)
    assert verdict == expected, reason
    assert reason


def test_random_interruptions_are_seeded_and_match_the_rate() -> None:
    model = RandomInterruptions(0.3, 300.0)
    draws = [model.time_to_interruption(random.Random(f"7/attempt-{i}")) for i in range(20_000)]
    again = [model.time_to_interruption(random.Random(f"7/attempt-{i}")) for i in range(20_000)]
    assert draws == again
    within_interval = sum(d <= 300.0 for d in draws) / len(draws)
    assert within_interval == pytest.approx(0.3, abs=0.015)
    assert RandomInterruptions(0.0).time_to_interruption(random.Random(1)) == math.inf
    with pytest.raises(ValueError, match="probability"):
        RandomInterruptions(1.5)


def test_trace_replay_orientation_offset_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "zone.json"
    path.write_text(json.dumps({"metadata": {"gap_seconds": 60}, "data": [1, 1, 0, 1]}))
    trace = AvailabilityTrace.load(path)
    replay = TraceReplay(trace, offset=1)
    assert [replay.available_at(t) for t in (0, 59, 60, 120, 180)] == [True, True, False, True, True]
    flipped = AvailabilityTrace.load(path, one_means="preempted")
    assert flipped.available == (False, False, True, False)
    for content, message in (
        ("not json", "not a trace"),
        (json.dumps({"data": [1]}), "not a trace"),
        (json.dumps({"metadata": {"gap_seconds": 0}, "data": [1]}), "gap_seconds must be positive"),
        (json.dumps({"metadata": {"gap_seconds": 5}, "data": [1, 2]}), "found 2"),
    ):
        path.write_text(content)
        with pytest.raises(TraceError, match=message) as error:
            AvailabilityTrace.load(path)
        assert str(path) in str(error.value)


def test_fault_proxy_answers_with_aws_errors_that_the_fleet_sorts(moto_endpoint: str) -> None:
    with FaultProxy(moto_endpoint) as proxy:
        ec2: Any = boto3.client(
            "ec2",
            endpoint_url=proxy.endpoint,
            region_name="us-east-1",
            config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
        )
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]  # forwarded to moto
        template = ec2.create_launch_template(LaunchTemplateName="t", LaunchTemplateData={"ImageId": image})[
            "LaunchTemplate"
        ]["LaunchTemplateId"]
        fleet = Fleet(ec2, templates={"spot": template}, subnet_id=None, base_delay=0.01)
        request = dict(job_id="j", segment_id="seg-0000", market="spot", start=0, stop=10, input_key="k")
        from coordinator.job.launch_contract import LaunchRequest

        proxy.add(FaultRule("RunInstances", "RequestLimitExceeded", times=1))
        proxy.add(FaultRule("RunInstances", "InternalError", times=1))
        proxy.add(
            FaultRule("RunInstances", "HTML page", times=1, html=True)
        )  # moto's own 500s look like this
        assert fleet.launch(LaunchRequest(attempt_id="j/seg-0000/1", **request)).startswith("i-")  # type: ignore[arg-type]
        assert fleet.api_retries == 3
        proxy.add(FaultRule("RunInstances", "InsufficientInstanceCapacity", times=1, template_id=template))
        with pytest.raises(CapacityError, match="InsufficientInstanceCapacity"):
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/2", **request))  # type: ignore[arg-type]
        proxy.add(FaultRule("RunInstances", "UnauthorizedOperation", times=1))
        with pytest.raises(LaunchError, match="UnauthorizedOperation") as error:
            fleet.launch(LaunchRequest(attempt_id="j/seg-0000/3", **request))  # type: ignore[arg-type]
        assert not isinstance(error.value, CapacityError) and len(error.value.history) == 1
        assert proxy.injected == [
            "RunInstances: RequestLimitExceeded",
            "RunInstances: InternalError",
            "RunInstances: HTML page",
            "RunInstances: InsufficientInstanceCapacity",
            "RunInstances: UnauthorizedOperation",
        ]


def _segment_output(store: LocalStore, segment: str, rows: list[tuple[Any, str, float]], start: int) -> None:
    key = f"parts/{segment}/{start:08d}-{start + len(rows):08d}.csv"
    store.put(key, encode_part(rows))
    save_checkpoint(
        store,
        Checkpoint(
            segment,
            start,
            start + len(rows),
            64,
            50,
            next_batch=1,
            rows_done=len(rows),
            parts=[key],
            done=True,
        ),
    )


def test_merge_writes_every_row_once_or_names_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    pq.write_table(
        pa.table({"id": [5, 6, 7, 8], "text": list("abcd"), "label": ["x"] * 4}),
        tmp_path / "data" / "in.parquet",
    )
    data = LocalStore(tmp_path / "data")
    job = LocalStore(tmp_path / "job")
    _segment_output(job, "seg-0000", [(5, "positive", 0.9), (6, "negative", 0.8)], 0)
    _segment_output(job, "seg-0001", [(7, "positive", 0.7), (8, "positive", 0.6)], 2)
    report = merge_results(job, data, "in.parquet", ["seg-0000", "seg-0001"], tmp_path / "out")
    table = pq.read_table(report.parquet_path).to_pylist()
    assert [r["id"] for r in table] == [5, 6, 7, 8] and table[2]["prediction"] == "positive"
    assert report.csv_path.read_text().splitlines()[0] == '"id","text","label","prediction","score"'
    # a duplicated id and a missing one: refused, named, nothing written
    _segment_output(job, "seg-0001", [(6, "positive", 0.7), (8, "positive", 0.6)], 2)
    with pytest.raises(MergeError, match=r"1 missing \['7'\], 1 duplicated \['6'\]"):
        merge_results(job, data, "in.parquet", ["seg-0000", "seg-0001"], tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_cloud_clock_scales_durations() -> None:
    clock = CloudClock(scale=30.0, origin=1_000.0)
    assert clock.at(1_002.0) == 1_060.0
    assert clock.wall(120.0) == 4.0 and clock.cloud(4.0) == 120.0
    with pytest.raises(ValueError, match="positive"):
        CloudClock(scale=0)
