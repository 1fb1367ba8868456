"""Which instances a cycle asks EC2 about: all of the job's without events; with them, only those a fresh
heartbeat does not vouch for, and everything at the first look, after an event and every full-look period."""

from __future__ import annotations

import pytest

from coordinator.job.aws.instances import InstanceInfo
from coordinator.job.core.tables import AttemptRow
from coordinator.job.loop.instance_watch import InstanceWatch
from tests.coordinator.job.rows import launched_attempt


class CountingFleet:
    """EC2 as a dict; records what each look asked for."""

    def __init__(self, states: dict[str, str]) -> None:
        self.states = states
        self.listed = 0
        self.described: list[list[str]] = []

    def job_instances(self, job_id: str) -> dict[str, InstanceInfo]:
        self.listed += 1
        return {i: InstanceInfo(i, state, {}) for i, state in self.states.items()}

    def instances(self, instance_ids: list[str]) -> dict[str, InstanceInfo]:
        self.described.append(instance_ids)
        return {i: InstanceInfo(i, self.states[i], {}) for i in instance_ids if i in self.states}


def attempt(n: int) -> AttemptRow:
    return launched_attempt(f"seg-{n}", instance_id=f"i-{n}", job_id="job")


ATTEMPTS = [attempt(n) for n in range(4)]
FRESH = {a.attempt_id: 100.0 for a in ATTEMPTS}  # every attempt beat at t=100


@pytest.fixture
def fleet() -> CountingFleet:
    return CountingFleet({f"i-{n}": "running" for n in range(len(ATTEMPTS))})


def test_without_events_every_look_lists_the_whole_job(fleet: CountingFleet) -> None:
    watch = InstanceWatch(fleet, "job", full_look_seconds=None, quiet_seconds=45)
    for now in (101.0, 106.0, 111.0):
        assert set(watch.look(ATTEMPTS, FRESH, now)) == {a.instance_id for a in ATTEMPTS}
    assert (fleet.listed, fleet.described) == (3, [])


def test_with_events_a_fresh_heartbeat_spares_its_instance_a_describe(fleet: CountingFleet) -> None:
    watch = InstanceWatch(fleet, "job", full_look_seconds=60, quiet_seconds=45, small_job=0)
    watch.look(ATTEMPTS, FRESH, 101.0)  # the first look lists everything
    beats = {**FRESH, ATTEMPTS[3].attempt_id: 50.0}  # quiet for 56 s at t=106
    del beats[ATTEMPTS[2].attempt_id]  # no heartbeat yet: booting
    fleet.states["i-3"] = "terminated"
    seen = watch.look(ATTEMPTS, beats, 106.0)
    assert fleet.listed == 1
    assert fleet.described == [["i-2", "i-3"]]  # only the two without a fresh heartbeat
    assert seen["i-3"].state == "terminated" and seen["i-0"].state == "running"


def test_an_instance_ec2_no_longer_lists_is_dropped(fleet: CountingFleet) -> None:
    watch = InstanceWatch(fleet, "job", full_look_seconds=60, quiet_seconds=45, small_job=0)
    watch.look(ATTEMPTS, FRESH, 101.0)
    del fleet.states["i-1"]
    assert "i-1" not in watch.look(ATTEMPTS, {**FRESH, ATTEMPTS[1].attempt_id: 10.0}, 106.0)


def test_an_attempt_launched_since_the_last_listing_is_described(fleet: CountingFleet) -> None:
    watch = InstanceWatch(fleet, "job", full_look_seconds=60, quiet_seconds=45, small_job=0)
    watch.look(ATTEMPTS[:2], FRESH, 101.0)
    fleet.states["i-9"] = "pending"
    new = attempt(9)
    seen = watch.look([*ATTEMPTS[:2], new], FRESH, 106.0)
    assert fleet.described == [["i-9"]] and seen["i-9"].state == "pending"


def test_an_event_or_the_period_brings_back_a_full_listing(fleet: CountingFleet) -> None:
    watch = InstanceWatch(fleet, "job", full_look_seconds=60, quiet_seconds=45, small_job=0)
    watch.look(ATTEMPTS, FRESH, 101.0)
    fleet.states["i-0"] = "terminated"  # its state-change event was lost: its heartbeat is still fresh
    assert watch.look(ATTEMPTS, FRESH, 106.0)["i-0"].state == "running"  # what EC2 said last
    assert watch.look(ATTEMPTS, FRESH, 161.0)["i-0"].state == "terminated"  # 60 s on: the safety net
    watch.look_again()  # an event of the job
    watch.look(ATTEMPTS, FRESH, 162.0)
    assert fleet.listed == 3


def test_an_event_naming_an_instance_describes_it_not_the_whole_job(fleet: CountingFleet) -> None:
    """A big job under interruptions has an event every few cycles: each listed the whole job again
    (2.6 ms of parsing per instance); now the instance it names is described."""
    watch = InstanceWatch(fleet, "job", full_look_seconds=300, quiet_seconds=45, small_job=0)
    watch.look(ATTEMPTS, FRESH, 101.0)
    fleet.states["i-0"] = "shutting-down"
    watch.look_again("i-0")  # its state-change event
    assert watch.look(ATTEMPTS, FRESH, 106.0)["i-0"].state == "shutting-down"
    assert (fleet.listed, fleet.described) == (1, [["i-0"]])
    watch.look(ATTEMPTS, FRESH, 111.0)  # asked once: not again
    assert fleet.described == [["i-0"]]


def test_a_small_job_is_listed_whole_every_cycle_even_with_events(fleet: CountingFleet) -> None:
    watch = InstanceWatch(fleet, "job", full_look_seconds=60, quiet_seconds=45, small_job=4)
    for now in (101.0, 106.0):
        watch.look(ATTEMPTS, FRESH, now)
    assert (fleet.listed, fleet.described) == (2, [])
