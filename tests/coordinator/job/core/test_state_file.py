"""Coordinator state: guarded transitions with events, attempts, and survival of a kill -9 mid-write."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from coordinator.errors import InvalidTransition
from coordinator.job.core.segment_states import SegmentState
from coordinator.job.core.state_file import CoordinatorState


@pytest.fixture
def state(tmp_path: Path) -> CoordinatorState:
    s = CoordinatorState(tmp_path / "state.db")
    assert s.create_job(
        "job-1", config={"policy": "hybrid"}, segments=[("seg-0000", 0, 500), ("seg-0001", 500, 1000)]
    )
    return s


def test_job_is_created_once(state: CoordinatorState) -> None:
    assert not state.create_job("job-1", config={"policy": "other"}, segments=[("seg-9", 0, 1)])
    assert state.job_config("job-1") == {"policy": "hybrid"}
    assert [s.state for s in state.segments("job-1")] == [SegmentState.PENDING, SegmentState.PENDING]


def test_spot_interrupted_then_on_demand_to_done(state: CoordinatorState) -> None:
    state.set_launching("job-1", "seg-0000", market="spot", reason="initial launch")
    state.set_running("job-1", "seg-0000", reason="first heartbeat")
    state.set_draining("job-1", "seg-0000", reason="heartbeat says draining")
    state.set_interrupted("job-1", "seg-0000", reason="instance terminated")
    state.set_launching("job-1", "seg-0000", market="on-demand", reason="hybrid: fall back to on-demand")
    state.set_running("job-1", "seg-0000", reason="first heartbeat")
    state.set_done("job-1", "seg-0000", reason="checkpoint done")
    segment = state.segment("job-1", "seg-0000")
    assert (segment.state, segment.market, segment.attempts) == (SegmentState.DONE, "on-demand", 2)
    moves = [
        (e.from_state, e.to_state, e.reason) for e in state.events("job-1") if e.segment_id == "seg-0000"
    ]
    assert moves[3] == ("DRAINING", "INTERRUPTED", "instance terminated")
    assert moves[-1] == ("RUNNING", "DONE", "checkpoint done")
    assert type(segment.state) is SegmentState and segment.state.is_terminal
    assert SegmentState.terminal() == {SegmentState.DONE, SegmentState.FAILED}


def test_attempts_come_back_as_typed_rows(state: CoordinatorState) -> None:
    state.set_launching("job-1", "seg-0000", market="spot", reason="initial launch")
    state.add_attempt("job-1/seg-0000/1", "job-1", "seg-0000", market="spot", instance_type="c7i.xlarge")
    state.attempt_launched(
        "job-1/seg-0000/1", instance_id="i-1", launched_at=10.0, instance_type="c7i.xlarge"
    )
    [row] = state.attempts("job-1", "seg-0000")
    assert (row.attempt_id, row.market, row.instance_id, row.launched_at) == (
        "job-1/seg-0000/1",
        "spot",
        "i-1",
        10.0,
    )
    assert row.ended_at is None and row.rows_kept == 0 and state.open_attempts("job-1") == [row]


def test_lost_and_failed_launch_paths(state: CoordinatorState) -> None:
    state.set_launching("job-1", "seg-0001", market="spot", reason="initial launch")
    state.set_failed_launch("job-1", "seg-0001", reason="InsufficientInstanceCapacity")
    state.set_launching("job-1", "seg-0001", market="on-demand", reason="capacity: on-demand")
    state.set_running("job-1", "seg-0001", reason="first heartbeat")
    state.set_lost("job-1", "seg-0001", reason="heartbeat 30 s old")
    state.set_interrupted("job-1", "seg-0001", reason="lost")
    state.set_failed("job-1", "seg-0001", reason="max retries")
    assert state.segment("job-1", "seg-0001").state == "FAILED"


@pytest.mark.parametrize(
    ("steps", "bad"),
    [
        ([], "set_running"),  # PENDING -> RUNNING skips the launch
        (["set_launching", "set_running", "set_done"], "set_launching"),  # DONE is final
        (["set_launching"], "set_interrupted"),  # LAUNCHING -> INTERRUPTED must go through LOST
    ],
)
def test_invalid_transitions_raise_and_change_nothing(
    state: CoordinatorState, steps: list[str], bad: str
) -> None:
    for step in steps:
        kwargs = {"market": "spot"} if step == "set_launching" else {}
        getattr(state, step)("job-1", "seg-0000", reason=step, **kwargs)
    before, events = state.segment("job-1", "seg-0000"), len(state.events("job-1"))
    kwargs = {"market": "spot"} if bad == "set_launching" else {}
    with pytest.raises(InvalidTransition, match=f"{before.state} -> "):
        getattr(state, bad)("job-1", "seg-0000", reason="bad", **kwargs)
    assert state.segment("job-1", "seg-0000") == before
    assert len(state.events("job-1")) == events


def test_attempts_open_until_ended_once(state: CoordinatorState) -> None:
    state.add_attempt("job-1/seg-0000/1", "job-1", "seg-0000", market="spot", instance_type="p3.2xlarge")
    state.attempt_launched(
        "job-1/seg-0000/1", instance_id="i-1", launched_at=100.0, instance_type="m7i.xlarge"
    )
    assert [a.instance_id for a in state.open_attempts("job-1")] == ["i-1"]
    assert state.attempts("job-1")[0].instance_type == "m7i.xlarge"  # the pool EC2 placed it in
    state.attempt_ended("job-1/seg-0000/1", ended_at=160.0, end_reason="done", rows_kept=500, rows_wasted=0)
    assert state.open_attempts("job-1") == []
    with pytest.raises(InvalidTransition, match="already ended"):
        state.attempt_ended("job-1/seg-0000/1", ended_at=170.0, end_reason="done", rows_kept=0, rows_wasted=0)


CHURN = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from coordinator.job.core.state_file import CoordinatorState
    state = CoordinatorState(Path(sys.argv[1]))
    state.create_job("job-k", config={}, segments=[(f"seg-{i:04d}", i, i + 1) for i in range(400)])
    print("ready", flush=True)
    while True:
        for i in range(400):
            seg = f"seg-{i:04d}"
            state.set_launching("job-k", seg, market="spot", reason="go")
            state.set_running("job-k", seg, reason="beat")
            state.set_lost("job-k", seg, reason="gone")
            state.set_interrupted("job-k", seg, reason="lost")
    """
)


@pytest.mark.slow
def test_kill_9_mid_transitions_leaves_a_consistent_state(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    child = subprocess.Popen([sys.executable, "-c", CHURN, str(db)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    state = CoordinatorState(db)
    last_move: dict[str, str] = {}
    for event in state.events("job-k"):
        if event.segment_id is not None and event.to_state is not None:
            last_move[event.segment_id] = event.to_state
    assert len(last_move) > 0  # it really churned before the kill
    for segment in state.segments("job-k"):
        assert segment.state == last_move.get(segment.segment_id, "PENDING")  # no transition half-written
    # and the restarted coordinator carries on from it
    resumable = next(s for s in state.segments("job-k") if s.state in ("PENDING", "INTERRUPTED"))
    state.set_launching("job-k", resumable.segment_id, market="on-demand", reason="restarted coordinator")
    assert state.segment("job-k", resumable.segment_id).state == "LAUNCHING"


def test_a_state_file_from_before_a_column_opens_and_gains_it(tmp_path: Path) -> None:
    """A coordinator upgraded between two runs of a job opens the old file: the new column is added, the
    old rows keep their values."""
    import sqlite3

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE attempts (attempt_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, segment_id TEXT NOT NULL,"
        " market TEXT NOT NULL, instance_type TEXT NOT NULL, instance_id TEXT, launched_at REAL,"
        " ended_at REAL, end_reason TEXT, rows_kept INTEGER NOT NULL DEFAULT 0,"
        " rows_wasted INTEGER NOT NULL DEFAULT 0, rows_per_s REAL NOT NULL DEFAULT 0,"
        " billed_seconds INTEGER, cost_usd REAL);"
        "INSERT INTO attempts (attempt_id, job_id, segment_id, market, instance_type, rows_kept)"
        " VALUES ('j/s/1', 'j', 's', 'spot', 'c7i.xlarge', 7);"
    )
    db.commit()
    db.close()
    state = CoordinatorState(path)
    [old] = state.attempts("j")
    assert old.rows_kept == 7 and old.heartbeat_puts == 0
    state.attempt_ended(
        "j/s/1", ended_at=1.0, end_reason="done", rows_kept=7, rows_wasted=0, heartbeat_puts=42
    )
    assert state.attempts("j")[0].heartbeat_puts == 42
    state.close()
    assert CoordinatorState(path).attempts("j")[0].heartbeat_puts == 42  # opened again: no second ALTER
