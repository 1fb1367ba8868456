"""A cycle's launches made together: the passes decide one segment after another (the budget guard asked
and the state written for each, in order), then the RunInstances calls go out at once, at most
`LAUNCHERS` in flight, as EC2 Fleet and Karpenter launch many instances per request, and their answers are
recorded one by one. A cycle that starts 1,000 segments waits for the slowest of its calls, not for their
sum; botocore's adaptive retry mode slows the client if EC2 throttles the burst.

Usage::

    with launching_together(book):        # book.launch(...) inside only plans the call
        launch_pass.run()
    # here every planned launch has been made and recorded (an AwsSetupError raised after all are)
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple, Protocol

from coordinator.errors import AwsSetupError, LaunchError
from coordinator.job.aws.capacity_pools import Placement
from coordinator.job.core.tables import SegmentRow
from coordinator.job.core.worker_contract import LaunchRequest

if TYPE_CHECKING:
    from coordinator.job.aws.fleet import Fleet

LAUNCHERS = 8  # RunInstances calls in flight at once
Outcome = Placement | LaunchError | AwsSetupError  # the instance and its pool, or why there is none


class PlannedLaunch(NamedTuple):
    """A launch the budget guard allowed and the state recorded, its fleet call still to make."""

    row: SegmentRow
    attempt_id: str
    market: str
    label: str


class Launcher(Protocol):
    fleet: Fleet

    def hold_launches(self) -> None: ...

    def release_launches(self) -> list[PlannedLaunch]: ...

    def request(self, planned: PlannedLaunch) -> LaunchRequest: ...

    def settle(self, planned: PlannedLaunch, outcome: Outcome) -> None: ...


@contextmanager
def launching_together(book: Launcher, launchers: int = LAUNCHERS) -> Iterator[None]:
    book.hold_launches()
    try:
        yield
    finally:
        planned = book.release_launches()
    make_all(book, planned, launchers)


def make_all(book: Launcher, planned: list[PlannedLaunch], launchers: int = LAUNCHERS) -> None:
    if not planned:
        return

    def call(one: PlannedLaunch) -> Outcome:
        try:
            return book.fleet.launch_placed(book.request(one))
        except (LaunchError, AwsSetupError) as error:
            return error

    if len(planned) == 1:
        outcomes = [call(planned[0])]
    else:
        with ThreadPoolExecutor(max_workers=min(launchers, len(planned))) as pool:
            outcomes = list(pool.map(call, planned))
    refused: AwsSetupError | None = None
    for one, outcome in zip(planned, outcomes, strict=True):
        try:
            book.settle(one, outcome)
        except AwsSetupError as error:  # every answer recorded first: instances that exist are tracked
            refused = refused or error
    if refused is not None:
        raise refused
