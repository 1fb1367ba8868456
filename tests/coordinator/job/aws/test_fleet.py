"""The fleet against moto (in process): launches from templates with tags, idempotent attempts, retries,
capacity errors tried in the next zone, permission and quota errors told apart, terminate-and-confirm."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from coordinator.errors import (
    CapacityError,
    LaunchError,
    PermissionDenied,
    QuotaExceeded,
    TeardownRefused,
    ThrottledError,
)
from coordinator.job.aws.capacity_pools import Placement
from coordinator.job.aws.fleet import Fleet
from coordinator.job.core.worker_contract import LaunchRequest
from tests.aws_errors import ERRORS, queue_error


@pytest.fixture
def ec2(aws_credentials: None) -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def templates(ec2: Any) -> dict[str, str]:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    made = {}
    for market in ("spot", "on-demand"):
        data: dict[str, Any] = {"ImageId": image, "InstanceType": "p3.2xlarge"}
        if market == "spot":
            data["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {"MaxPrice": "3.06"}}
        made[market] = ec2.create_launch_template(LaunchTemplateName=f"t-{market}", LaunchTemplateData=data)[
            "LaunchTemplate"
        ]["LaunchTemplateId"]
    return made


def dry_run_allowed(stub: Stubber) -> None:
    stub.add_client_error(
        "terminate_instances", "DryRunOperation", "Request would have succeeded, but DryRun flag is set.", 412
    )


def request(
    segment: str = "seg-0000", attempt: str = "job-1/seg-0000/1", market: str = "spot"
) -> LaunchRequest:
    return LaunchRequest(
        job_id="job-1",
        segment_id=segment,
        attempt_id=attempt,
        market=market,
        start=0,
        stop=100,
        input_key="data/x.parquet",
    )


def test_launch_tags_and_terminate_confirmed(ec2: Any) -> None:
    fleet = Fleet(ec2, templates=templates(ec2), sleep=lambda s: None)
    spot = fleet.launch(request())
    on_demand = fleet.launch(request("seg-0001", "job-1/seg-0001/1", "on-demand"))
    listed = fleet.job_instances("job-1")
    assert listed[spot].segment == "seg-0000" and listed[spot].market == "spot"
    assert listed[on_demand].attempt == "job-1/seg-0001/1"
    assert fleet.alive("job-1") == sorted([spot, on_demand])
    fleet.terminate_and_confirm([spot, on_demand])
    assert fleet.alive("job-1") == []


def test_same_attempt_launched_twice_is_one_instance(ec2: Any) -> None:
    fleet = Fleet(ec2, templates=templates(ec2), sleep=lambda s: None)
    first = fleet.launch(request())
    again = fleet.launch(request(), repeat=True)  # a coordinator restarted mid-launch repeats the call
    assert first == again
    assert fleet.alive("job-1") == [first]


def test_a_repeated_launch_finds_its_instance_even_gone_with_its_launch_time(ec2: Any) -> None:
    """A coordinator killed right after RunInstances returned: the instance may be gone by the restart (it
    crashed, was reclaimed or finished). It ran and billed: the repeat finds it, with EC2's LaunchTime, and
    launches nothing (a new launch left 15 instances EC2 ran out of the state and the ledger)."""
    fleet = Fleet(ec2, templates=templates(ec2), sleep=lambda s: None)
    first = fleet.launch(request())
    ec2.terminate_instances(InstanceIds=[first])
    again = fleet.launch_placed(request(), repeat=True)
    described = ec2.describe_instances(InstanceIds=[first])["Reservations"][0]["Instances"][0]
    assert again.instance_id == first and again.launch_time == described["LaunchTime"].timestamp()
    assert list(fleet.job_instances("job-1")) == [first]  # no second instance


def test_throttling_past_the_clients_retries_is_throttled_not_a_verdict(aws_credentials: None) -> None:
    """botocore's adaptive mode retries throttling and 5xx (tests/coordinator/sim/test_fault_proxy.py, through
    real HTTP); what is still throttled after its attempts is a ThrottledError: made again later."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, subnets={"us-east-1a": "subnet-1"}, sleep=lambda s: None)
    with Stubber(ec2) as stub:  # the stubbed client answers once per call: botocore's retries are behind it
        stub.add_client_error("run_instances", "RequestLimitExceeded", http_status_code=503)
        with pytest.raises(ThrottledError, match="RequestLimitExceeded after 1 call") as throttled:
            fleet.launch(request())
        stub.add_client_error("run_instances", "InternalError", http_status_code=500)
        with pytest.raises(ThrottledError, match="InternalError"):
            fleet.launch(request())
    assert not isinstance(throttled.value, CapacityError)


def test_capacity_errors_go_to_the_policy_and_others_are_not_retried(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, sleep=lambda s: None)
    with Stubber(ec2) as stub:
        stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)
        with pytest.raises(CapacityError, match="InsufficientInstanceCapacity") as capacity:
            fleet.launch(request())
        assert capacity.value.history == ["default: run_instances: InsufficientInstanceCapacity"]
        stub.add_client_error("run_instances", "InvalidLaunchTemplateId.NotFound", http_status_code=400)
        with pytest.raises(LaunchError, match="after 1 call") as bad:
            fleet.launch(request())
        assert not isinstance(bad.value, CapacityError)
    with pytest.raises(LaunchError, match="no launch template for market 'on-demand'"):
        fleet.launch(request(market="on-demand"))


def test_a_terminate_that_lost_a_race_is_confirmed_by_the_re_listing(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, sleep=lambda s: None)
    gone = {"Reservations": [{"Instances": [{"InstanceId": "i-0abc", "State": {"Name": "shutting-down"}}]}]}
    with Stubber(ec2) as stub:  # moto's answer when another caller's terminate detached the volume first
        stub.add_client_error("terminate_instances", "InvalidAttachment.NotFound", http_status_code=400)
        stub.add_response("describe_instances", gone)
        fleet.terminate_and_confirm(["i-0abc"])
        stub.add_client_error("terminate_instances", "UnauthorizedOperation", http_status_code=403)
        with pytest.raises(PermissionDenied, match="may not call ec2:TerminateInstances"):
            fleet.terminate_and_confirm(["i-0abc"])


def test_a_thousand_instances_are_terminated_and_confirmed_a_hundred_at_a_time(aws_credentials: None) -> None:
    """One TerminateInstances of 1,000 ids timed the emulator out (the scale bench's teardown)."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, sleep=lambda s: None)
    ids = [f"i-{n:017x}" for n in range(250)]
    batches = [ids[:100], ids[100:200], ids[200:]]
    with Stubber(ec2) as stub:
        for batch in batches:
            stub.add_response("terminate_instances", {}, {"InstanceIds": batch})
        for batch in batches:
            ended = [{"InstanceId": i, "State": {"Name": "terminated"}} for i in batch]
            stub.add_response(
                "describe_instances", {"Reservations": [{"Instances": ended}]}, {"InstanceIds": batch}
            )
        fleet.terminate_and_confirm(ids)
        stub.assert_no_pending_responses()


def test_a_zone_without_capacity_sends_the_launch_to_the_next_zone(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    subnets = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b", "us-east-1c": "subnet-c"}
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, subnets=subnets, sleep=lambda s: None)
    asked: list[str] = []
    ec2.meta.events.register(
        "provide-client-params.ec2.RunInstances", lambda params, **_: asked.append(params["SubnetId"])
    )
    order = [subnet for _, subnet in fleet.pools.zones_for("seg-0000")]
    assert sorted(order) == sorted(subnets.values())
    assert fleet.pools.zones_for("seg-0000") == fleet.pools.zones_for("seg-0000")  # stable per segment
    with Stubber(ec2) as stub:
        stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)
        stub.add_response("run_instances", {"Instances": [{"InstanceId": "i-0abc"}]})
        dry_run_allowed(stub)  # the job's first instance proves the teardown
        assert fleet.launch(request()) == "i-0abc"
        assert asked == order[:2]  # the first zone refused, the second launched
        for _ in subnets:
            stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)
        with pytest.raises(CapacityError, match="no capacity for spot in any pool") as none:
            fleet.launch(request())
        assert len(none.value.history) == 3


def test_a_zone_that_refused_capacity_is_tried_last_until_the_refusal_is_forgotten(
    aws_credentials: None,
) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    subnets = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b", "us-east-1c": "subnet-c"}
    now = [1000.0]
    fleet = Fleet(
        ec2, templates={"spot": "lt-1"}, subnets=subnets, sleep=lambda s: None, clock=lambda: now[0]
    )
    asked: list[str] = []
    ec2.meta.events.register(
        "provide-client-params.ec2.RunInstances", lambda params, **_: asked.append(params["SubnetId"])
    )
    order = [subnet for _, subnet in fleet.pools.zones_for("seg-0000", "spot")]
    with Stubber(ec2) as stub:
        stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)
        stub.add_response("run_instances", {"Instances": [{"InstanceId": "i-0abc"}]})
        dry_run_allowed(stub)  # the job's first instance proves the teardown
        fleet.launch(request())
        assert asked == order[:2]
        asked.clear()  # the same segment again: the zone that refused a moment ago is not asked first
        stub.add_response("run_instances", {"Instances": [{"InstanceId": "i-0def"}]})
        fleet.launch(request(attempt="job-1/seg-0000/2"))
        assert asked == [order[1]]
        assert [s for _, s in fleet.pools.zones_for("seg-0000", "spot")] == [*order[1:], order[0]]
        assert [s for _, s in fleet.pools.zones_for("seg-0000", "on-demand")] == order  # per market
        now[0] += 181.0  # Karpenter's three minutes, and a second
        assert [s for _, s in fleet.pools.zones_for("seg-0000", "spot")] == order


@pytest.mark.parametrize(
    ("code", "message", "error", "named"),
    [
        (
            "UnauthorizedOperation",
            "You are not authorized to perform this operation. User: arn:aws:iam::1:user/u is not authorized "
            "to perform: iam:PassRole on resource: arn:aws:iam::1:role/spotbatch/s/r",
            PermissionDenied,
            "iam:PassRole is denied",
        ),
        (
            "UnauthorizedOperation",
            "You are not authorized to perform this operation. Encoded authorization failure message: xyz",
            PermissionDenied,
            "may not call ec2:RunInstances",
        ),
        ("VcpuLimitExceeded", "You have requested more vCPU capacity than allowed", QuotaExceeded, "quota"),
    ],
)
def test_permissions_and_quotas_stop_at_once_and_say_what_to_fix(
    aws_credentials: None, code: str, message: str, error: type[Exception], named: str
) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, subnets={"us-east-1a": "s-1", "us-east-1b": "s-2"})
    with Stubber(ec2) as stub:  # one answer: no retry, no other zone
        stub.add_client_error("run_instances", code, message, http_status_code=400)
        with pytest.raises(error, match=named):
            fleet.launch(request())
        stub.assert_no_pending_responses()


def test_a_new_instance_profile_is_waited_for(aws_credentials: None) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    waits: list[float] = []
    fleet = Fleet(
        ec2, templates={"spot": "lt-1"}, instance_profile_arn="arn:aws:iam::1:x", sleep=waits.append
    )
    propagating = (
        "Value (arn:aws:iam::1:x) for parameter iamInstanceProfile.arn is invalid. Invalid IAM Instance "
        "Profile ARN"
    )
    with Stubber(ec2) as stub:
        stub.add_client_error("run_instances", "InvalidParameterValue", propagating, http_status_code=400)
        stub.add_response("run_instances", {"Instances": [{"InstanceId": "i-0abc"}]})
        dry_run_allowed(stub)  # the job's first instance proves the teardown
        assert fleet.launch(request()) == "i-0abc"
    assert waits == [3.0]


def test_a_pool_without_capacity_sends_the_launch_to_the_next_pool_then_the_next_type(
    aws_credentials: None,
) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    subnets = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}
    prices = {"m7i.xlarge": 0.05, "c7i.xlarge": 0.07}
    fleet = Fleet(
        ec2,
        templates={"spot": "lt-1"},
        subnets=subnets,
        instance_types=["c7i.xlarge", "m7i.xlarge"],
        price=lambda market, kind: prices[kind],
        sleep=lambda s: None,
    )
    asked: list[tuple[str, str]] = []
    ec2.meta.events.register(
        "provide-client-params.ec2.RunInstances",
        lambda params, **_: asked.append((params["InstanceType"], params["SubnetId"])),
    )
    zones = [zone for zone, _ in fleet.pools.zones_for("seg-0000")]
    with Stubber(ec2) as stub:
        for _ in subnets:  # the cheaper type has no spot capacity in either zone
            stub.add_client_error("run_instances", "InsufficientInstanceCapacity", http_status_code=500)
        stub.add_response("run_instances", {"Instances": [{"InstanceId": "i-0abc"}]})
        dry_run_allowed(stub)  # the job's first instance proves the teardown
        placed = fleet.launch_placed(request())
    assert placed == Placement("i-0abc", "c7i.xlarge", zones[0])
    assert asked == [("m7i.xlarge", subnets[z]) for z in zones] + [("c7i.xlarge", subnets[zones[0]])]
    later = [p.instance_type for p in fleet.pools.order("seg-0000", "spot")]
    assert later == ["c7i.xlarge", "c7i.xlarge", "m7i.xlarge", "m7i.xlarge"]  # the refused pools last


def test_a_launch_names_the_template_version_the_stack_applied_last(ec2: Any) -> None:
    """A second `make apply-real` (a new image) makes version 2; EC2 launches the default version unless
    told, so the fleet names the version the stack's outputs give (the one the pre-flight checked)."""
    made = templates(ec2)
    ec2.create_launch_template_version(
        LaunchTemplateId=made["spot"], SourceVersion="1", LaunchTemplateData={"UserData": "c2Vjb25k"}
    )
    unnamed = Fleet(ec2, templates=made, sleep=lambda s: None).launch(request())
    named = Fleet(ec2, templates=made, versions={"spot": "2"}, sleep=lambda s: None).launch(
        request(attempt="job-1/seg-0000/2")
    )

    def user_data(instance: str) -> str:
        return str(
            ec2.describe_instance_attribute(InstanceId=instance, Attribute="userData")["UserData"].get(
                "Value", ""
            )
        )

    assert user_data(unnamed) == "" and user_data(named) == "c2Vjb25k"


class Recorded:
    """The EC2 client, its launch and terminate calls recorded in order; `refuse`: the dry-run terminate
    answers as AWS does for credentials without ec2:TerminateInstances on the instance."""

    def __init__(self, ec2: Any, *, refuse: bool = False) -> None:
        self._ec2, self.refuse = ec2, refuse
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._ec2, name)
        if name not in ("run_instances", "terminate_instances"):
            return attribute

        def call(**params: Any) -> Any:
            dry = params.get("DryRun", False)
            self.calls.append(f"{name}{' (dry run)' if dry else ''}")
            if dry and self.refuse:
                record = ERRORS["terminate-unauthorized"]
                answer = {"Error": {"Code": record["code"], "Message": record["message"]}}
                raise ClientError(answer, "TerminateInstances")  # type: ignore[arg-type]
            return attribute(**params)

        return call


def test_the_jobs_first_instance_is_launched_alone_and_dry_run_terminated(ec2: Any) -> None:
    recorded = Recorded(ec2)
    fleet = Fleet(recorded, templates=templates(ec2), sleep=lambda s: None)
    with ThreadPoolExecutor(3) as pool:  # a cycle's launches go out together (launch_batch.py)
        list(pool.map(fleet.launch, [request(f"seg-{i}", f"job-1/seg-{i}/1") for i in range(3)]))
    assert recorded.calls[:2] == ["run_instances", "terminate_instances (dry run)"]
    assert recorded.calls[2:] == ["run_instances", "run_instances"] and fleet.teardown_proven
    assert len(fleet.alive("job-1")) == 3  # the dry run terminated nothing


def test_a_refused_teardown_stops_the_job_naming_the_instance_it_cannot_end(ec2: Any) -> None:
    fleet = Fleet(Recorded(ec2, refuse=True), templates=templates(ec2), sleep=lambda s: None)
    with pytest.raises(TeardownRefused, match="ec2:TerminateInstances is refused") as refused:
        fleet.launch(request())
    assert fleet.alive("job-1") == [refused.value.instance_id]
    assert refused.value.action == "ec2:TerminateInstances" and "powers itself off" in str(refused.value)


@pytest.mark.parametrize(
    ("recorded", "reaction", "named"),
    [
        ("insufficient-capacity", CapacityError, "no capacity for spot in any pool"),  # each zone asked
        ("spot-max-price-too-low", CapacityError, "SpotMaxPriceTooLow"),
        ("vcpu-limit-exceeded", QuotaExceeded, "--max-instances"),
        # a fresh account, least privilege: every spot segment failed as "not about capacity", exit 1
        (
            "spot-service-linked-role-missing",
            PermissionDenied,
            "create-service-linked-role --aws-service-name spot",
        ),
        ("request-limit-exceeded", ThrottledError, "RequestLimitExceeded"),
        ("run-unauthorized-encoded", PermissionDenied, "may not call ec2:RunInstances"),
    ],
)
def test_the_fleets_reaction_to_each_answer_moto_never_gives(
    aws_credentials: None, recorded: str, reaction: type[Exception], named: str
) -> None:
    """AWS's recorded answers (tests/fixtures/aws-errors): capacity and price try every pool, then the
    policy decides; a quota or a permission stops the job; throttling is made again later."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    subnets = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}
    fleet = Fleet(ec2, templates={"spot": "lt-1"}, subnets=subnets, sleep=lambda s: None)
    pools = len(subnets) if reaction is CapacityError else 1
    with Stubber(ec2) as stub:
        for _ in range(pools):
            queue_error(stub, recorded)
        with pytest.raises(reaction, match=named):
            fleet.launch(request())
        stub.assert_no_pending_responses()  # no other pool after a quota, a permission or throttling


def test_a_refusal_for_an_instance_ec2_does_not_list_yet_is_asked_again(aws_credentials: None) -> None:
    """Under the documented tag condition EC2 answers UnauthorizedOperation for an instance it does not see
    yet (the dry run follows RunInstances at once): a correct policy stopped the job (TeardownRefused)."""
    from coordinator.job.aws.capacity_pools import Placement
    from coordinator.job.aws.teardown_probe import prove_teardown

    ec2 = boto3.client("ec2", region_name="us-east-1")
    placed = Placement("i-0new", "c7i.xlarge", "us-east-1a")
    with Stubber(ec2) as stub:
        queue_error(stub, "terminate-unauthorized")
        stub.add_client_error("describe_instances", "InvalidInstanceID.NotFound", "unknown yet", 400)
        dry_run_allowed(stub)
        assert prove_teardown(ec2, placed, lambda s: None)
        stub.assert_no_pending_responses()
    with Stubber(ec2) as stub:  # listed, and still refused: the policy's
        queue_error(stub, "terminate-unauthorized")
        stub.add_response("describe_instances", {"Reservations": [{"Instances": [{"InstanceId": "i-0new"}]}]})
        with pytest.raises(TeardownRefused, match="ec2:TerminateInstances is refused"):
            prove_teardown(ec2, placed, lambda s: None)
