"""Instances that end before their worker's first heartbeat are a boot that fails, not bad luck: a segment
gives up after `MAX_SILENT_BOOTS` of them, and a job none of whose workers ever started stops after
`MAX_SILENT_BOOTS_PER_JOB`, naming the boot log (on-demand relaunched such a boot forever: 14 attempts per
segment, $2.34 simulated, 0 rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordinator.errors import BootFailing
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.loop.attempt_book import AttemptBook
from coordinator.job.loop.monitor import AttemptView
from coordinator.job.loop.policy_pass import MAX_SILENT_BOOTS_PER_JOB, LaunchPass
from coordinator.policies.base import MAX_SILENT_BOOTS
from coordinator.policies.registry import driver_for, make_policy
from inference.heartbeat import Heartbeat
from tests.coordinator.job.loop.real_book import real_book


def _boot_fails(book: AttemptBook, segment: str, end_reason: str = "lost") -> None:
    """The segment's instance ended without a heartbeat: its boot timeout passed ("lost": the boot script
    never ran, as under a relative --out), or its machine powered off ("crashed": the script failed)."""
    book.state.set_lost("j", segment, reason="no heartbeat")
    book.end(segment, end_reason, None)
    book.state.set_interrupted("j", segment, reason=f"{end_reason}: relaunching")


def _worker_ran_and_was_reclaimed(book: AttemptBook, segment: str) -> None:
    """The segment's worker beat, then spot took its instance back."""
    tracked = book.active[segment].active
    beat = Heartbeat(
        segment, tracked.instance_id, tracked.market, tracked.attempt_id, 10, rows_done=4, beats=3
    )
    view = AttemptView(tracked, "lost", "reclaimed", "terminated", beat, "Server.SpotInstanceTermination")
    book.state.set_running("j", segment, reason="first heartbeat")
    book.state.set_lost("j", segment, reason="reclaimed")
    book.end(segment, "interrupted", view)
    book.state.set_interrupted("j", segment, reason="interrupted: resuming")


@pytest.mark.parametrize("policy", ["on-demand", "hybrid"])
def test_a_segment_gives_up_after_its_silent_boots_naming_the_boot_log(tmp_path: Path, policy: str) -> None:
    book = real_book(tmp_path, segments=1, policy=policy)
    launches = LaunchPass(book, driver_for(make_policy(policy)))
    for _ in range(MAX_SILENT_BOOTS):
        launches.run()
        assert book.state.segment("j", "seg-0000").state == SegmentState.LAUNCHING
        _boot_fails(book, "seg-0000")
    launches.run()
    row = book.state.segment("j", "seg-0000")
    assert row.state == SegmentState.FAILED and row.attempts == MAX_SILENT_BOOTS  # no fourth launch
    reason = book.state.events("j")[-1].reason
    assert "before their worker's first heartbeat" in reason and "/boot" in reason


def test_a_job_whose_workers_never_started_stops_before_launching_more(tmp_path: Path) -> None:
    book = real_book(tmp_path, segments=MAX_SILENT_BOOTS_PER_JOB, policy="on-demand")
    launches = LaunchPass(book, driver_for(make_policy("on-demand")))
    launches.run()
    for index in range(MAX_SILENT_BOOTS_PER_JOB):
        _boot_fails(book, f"seg-{index:04d}", "lost" if index % 2 else "crashed")
    launched = book.state.attempts("j")
    with pytest.raises(
        BootFailing, match=r"no worker of the job has ever started.*stream j/seg-0004/i-\d+/boot"
    ):
        launches.run()
    assert book.state.attempts("j") == launched  # not one more launch


def test_a_job_one_of_whose_workers_ran_goes_on_segment_by_segment(tmp_path: Path) -> None:
    segments = MAX_SILENT_BOOTS_PER_JOB + 1
    book = real_book(tmp_path, segments=segments, policy="on-demand")
    launches = LaunchPass(book, driver_for(make_policy("on-demand")))
    launches.run()
    _worker_ran_and_was_reclaimed(book, "seg-0000")  # the image boots: the others' failures are theirs
    for index in range(1, segments):
        _boot_fails(book, f"seg-{index:04d}")
    launches.run()  # no BootFailing: each failing segment is relaunched until its own cap
    assert len(book.state.attempts("j")) == 2 * segments
