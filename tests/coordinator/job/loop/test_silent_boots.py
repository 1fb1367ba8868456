"""Instances that end before their worker's first heartbeat are a boot that fails, not bad luck: a segment
gives up after `MAX_SILENT_BOOTS` of them, and a job none of whose workers ever started stops after
`MAX_SILENT_BOOTS_PER_JOB`, naming the boot log (on-demand relaunched such a boot forever: 14 attempts per
segment, $2.34 simulated, 0 rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.errors import BootFailing
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.monitor import INSTANCE_SHUTDOWN, SPOT_TERMINATION, AttemptView
from coordinator.job.loop.policy_pass import MAX_SILENT_BOOTS_PER_JOB
from coordinator.policies.base import MAX_SILENT_BOOTS
from inference.heartbeat import Heartbeat
from tests.coordinator.job.loop.live_loop import LiveLoop, live_loop


def _boot_fails(loop: LiveLoop, segment: str, end_reason: str = "lost") -> None:
    """The segment's instance ended without a heartbeat: its boot timeout passed ("lost": the boot script
    never ran, as under a relative --out), or its machine powered off ("crashed": the script failed)."""
    why = INSTANCE_SHUTDOWN if end_reason == "crashed" else ""
    attempt = loop.attempt(segment)
    loop.table.lose(AttemptView(attempt, "lost", "no heartbeat", "terminated", None, why))


def _worker_ran_and_was_reclaimed(loop: LiveLoop, segment: str) -> None:
    """The segment's worker beat, then spot took its instance back."""
    attempt = loop.attempt(segment)
    assert attempt.instance_id is not None
    beat = Heartbeat(
        segment, attempt.instance_id, attempt.market, attempt.attempt_id, 10, rows_done=4, beats=3
    )
    loop.table.first_beat(AttemptView(attempt, "running", "heartbeat fresh", "running", beat))
    loop.table.lose(AttemptView(attempt, "lost", "reclaimed", "terminated", beat, SPOT_TERMINATION))


@pytest.mark.parametrize("policy", ["on-demand", "hybrid"])
def test_a_segment_gives_up_after_its_silent_boots_naming_the_boot_log(tmp_path: Path, policy: str) -> None:
    loop = live_loop(tmp_path, segments=1, policy=policy)
    for _ in range(MAX_SILENT_BOOTS):
        loop.launch()
        assert loop.table.segment("seg-0000").state == SegmentState.LAUNCHING
        _boot_fails(loop, "seg-0000")
    loop.launch()
    row = loop.table.segment("seg-0000")
    assert row.state == SegmentState.FAILED and row.attempts == MAX_SILENT_BOOTS  # no fourth launch
    assert "before their worker's first heartbeat" in row.failure and "/boot" in row.failure


def test_a_job_whose_workers_never_started_stops_before_launching_more(tmp_path: Path) -> None:
    loop = live_loop(tmp_path, segments=MAX_SILENT_BOOTS_PER_JOB, policy="on-demand")
    loop.launch()
    for index in range(MAX_SILENT_BOOTS_PER_JOB):
        _boot_fails(loop, f"seg-{index:04d}", "lost" if index % 2 else "crashed")
    launched = loop.table.attempts()
    with pytest.raises(
        BootFailing, match=r"no worker of the job has ever started.*stream j/seg-0004/i-\d+/boot"
    ):
        loop.launch()
    assert loop.table.attempts() == launched  # not one more launch


def test_a_job_one_of_whose_workers_ran_goes_on_segment_by_segment(tmp_path: Path) -> None:
    segments = MAX_SILENT_BOOTS_PER_JOB + 1
    loop = live_loop(tmp_path, segments=segments, policy="on-demand")
    loop.launch()
    _worker_ran_and_was_reclaimed(loop, "seg-0000")  # the image boots: the others' failures are theirs
    for index in range(1, segments):
        _boot_fails(loop, f"seg-{index:04d}")
    loop.launch()  # no BootFailing: each failing segment is relaunched until its own cap
    assert len(loop.table.attempts()) == 2 * segments
