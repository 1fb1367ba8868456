"""Pre-flight checks against moto (in process), the allow-list, overrides and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from coordinator.cli import main
from coordinator.cost.billing import EC2_LINUX
from coordinator.cost.budget import BudgetGuard
from coordinator.cost.pricing import PriceQuote, PriceTable
from coordinator.errors import PreflightFailed
from coordinator.preflight import checks as preflight
from coordinator.preflight.allow_list import check_payload
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE
from tests.aws_errors import queue_error

QUOTE = PriceQuote(0.918, "table 2026-12-02: test", EC2_LINUX, snapshot_date=date.today())


@pytest.fixture
def ec2(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from moto import mock_aws

    monkeypatch.delenv("LYNX_CLOUD_BUDGET_USD", raising=False)
    monkeypatch.delenv("BUDGET_GUARD_TEST_MODE", raising=False)
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-1")


def plan(**overrides: Any) -> preflight.LaunchPlan:
    fields: dict[str, Any] = dict(
        job_id="job-1",
        estimate_usd=1.0,
        price=QUOTE,
        shutdown_behavior="terminate",
        max_lifetime_seconds=3_600,
        sync_dir=None,
    )
    fields.update(overrides)
    return preflight.LaunchPlan(**fields)


def run_instance(ec2: Any, job: str) -> str:
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = [{"Key": "Project", "Value": "spotbatch"}, {"Key": "spotbatch:job", "Value": job}]
    instance = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="p3.2xlarge",
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"][0]
    return str(instance["InstanceId"])


def test_every_check_passes_on_a_clean_account(ec2: Any, tmp_path: Path) -> None:
    run_instance(ec2, "job-1")  # this job's own instance is not a stray
    results = preflight.run_preflight(plan(), ec2=ec2, guard=BudgetGuard(5.0, tmp_path / "log.jsonl"))
    # every check but the vCPU quota's, which needs Service Quotas (test_quotas.py)
    assert tuple(r.name for r in results) == tuple(n for n in preflight.CHECK_NAMES if n != "vcpu-quota")
    assert [r.status for r in results] == ["PASS"] * 6, preflight.format_results(results)
    preflight.require_preflight(results)


def test_each_failure_says_why(ec2: Any, tmp_path: Path) -> None:
    stray = run_instance(ec2, "yesterday")
    guard = BudgetGuard(5.0, tmp_path / "log.jsonl")
    guard.authorize("earlier", 4.0)
    bad = plan(
        estimate_usd=0.8,
        shutdown_behavior="stop",
        max_lifetime_seconds=None,
        price=replace(QUOTE, snapshot_date=date.today() - timedelta(days=45)),
    )
    results = {r.name: r for r in preflight.run_preflight(bad, ec2=ec2, guard=guard)}
    assert not results["no-stray-instances"].passed and stray in results["no-stray-instances"].reason
    assert results["budget-headroom"].reason == "remaining $1.00, estimate $0.80 + 50% = $1.20"
    assert not results["budget-headroom"].passed
    assert "shutdown behaviour is 'stop'" in results["auto-termination"].reason
    assert "no spotbatch:max-lifetime-seconds tag" in results["auto-termination"].reason
    assert not results["price-of-the-day"].passed and "45 days old" in results["price-of-the-day"].reason
    assert results["teardown-dry-run"].passed
    with pytest.raises(PreflightFailed, match="no-stray-instances"):
        preflight.require_preflight(list(results.values()))


def test_payload_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payload = tmp_path / "payload"
    (payload / "src").mkdir(parents=True)
    (payload / "src" / "job.py").write_text("print('hi')\n")
    (payload / "config.json").write_text("{}")
    assert check_payload(payload, home=tmp_path / "home") == []
    (payload / ".env").write_text("API_KEY=secret\n")
    (payload / "src" / "id_ed25519").write_text("-----BEGIN")
    (payload / "weights.bin").write_bytes(b"\0")
    problems = check_payload(payload, home=tmp_path / "home")
    assert problems == [
        ".env: looks like a secret (.env, key or credentials); remove it from the payload",
        "src/id_ed25519: looks like a secret (.env, key or credentials); remove it from the payload",
        "weights.bin: not on the allow-list (*.py, *.json, *.jsonl, *.yaml, *.yml, *.toml, *.txt, *.md, "
        "*.parquet, *.csv, *.sh)",
    ]
    monkeypatch.chdir(payload)
    assert any("current directory" in p for p in check_payload(Path("."), home=tmp_path / "home"))
    home = tmp_path / "home"
    home.mkdir()
    assert any("home directory" in p for p in check_payload(home, home=home))


def test_cli_refuses_then_proceeds_on_the_record(
    ec2: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stray = run_instance(ec2, "old-job")
    common = [
        "preflight",
        "--estimate",
        "1.0",
        "--job-id",
        "job-2",
        "--spend-log",
        str(tmp_path / "spend.jsonl"),
        "--preflight-log",
        str(tmp_path / "preflight.jsonl"),
        "--override",
        "price-of-the-day=table checked by hand for this test",
    ]
    assert main(common) == 4
    out, err = capsys.readouterr()
    assert f"FAIL       no-stray-instances  1 instance(s) of the project alive: {stray}" in out
    assert "refused: pre-flight failed: no-stray-instances" in err

    assert main([*common, "--override", "no-stray-instances=old-job is being torn down by hand"]) == 0
    out, _ = capsys.readouterr()
    assert "OVERRIDDEN no-stray-instances" in out and "[override: old-job is being torn down by hand]" in out
    records = [json.loads(line) for line in (tmp_path / "preflight.jsonl").read_text().splitlines()]
    overrides = [r["override"]["name"] for r in records if "override" in r]
    assert "no-stray-instances" in overrides
    verdicts = [r for r in records if "results" in r]
    spot = PriceTable.load().quote("aws", "us-east-1", DEFAULT_INSTANCE_TYPE, "spot")
    assert verdicts[-1]["rate_usd_per_hour"] == spot.rate_usd_per_hour
    assert verdicts[-1]["price_source"].startswith("table")
    assert verdicts[-1]["results"]["vcpu-quota"] == "PASS"  # moto has no EC2 quotas: passes with a note


def test_override_needs_a_reason_and_a_real_check_name(ec2: Any, tmp_path: Path) -> None:
    with pytest.raises(PreflightFailed, match="a reason is required"):
        preflight.parse_overrides(["budget-headroom="])
    results = [preflight.CheckResult("budget-headroom", False, "low")]
    with pytest.raises(PreflightFailed, match="unknown check"):
        preflight.apply_overrides(results, {"budget": "typo"}, tmp_path / "p.jsonl")


def test_the_teardown_probe_makes_no_call_about_an_instance_that_does_not_exist(
    aws_credentials: None, tmp_path: Path
) -> None:
    """EC2 answers a dry run about a made-up id with InvalidInstanceID.NotFound, and for the documented
    coordinator policy (terminate only instances tagged Project=spotbatch) with UnauthorizedOperation: either
    proves nothing. With no instance of the project to probe, the check passes with that note (the fleet
    dry-runs the job's first instance instead); the account is asked only for its list of instances."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stub:
        stub.add_response("describe_instances", {"Reservations": []})
        queue_error(stub, "terminate-dry-run-not-found")  # what AWS would answer, if it were asked
        results = {
            r.name: r
            for r in preflight.run_preflight(plan(), ec2=ec2, guard=BudgetGuard(5.0, tmp_path / "l"))
        }
    probe = results["teardown-dry-run"]
    assert probe.passed, probe.reason
    assert (
        "no instance of the project to dry-run against" in probe.reason and "first instance" in probe.reason
    )


def test_the_teardown_probe_dry_runs_an_instance_of_the_project_when_there_is_one(
    aws_credentials: None,
) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with Stubber(ec2) as stub:
        stub.add_client_error("terminate_instances", "DryRunOperation", "Request would have succeeded", 412)
        queue_error(stub, "terminate-unauthorized")
        allowed = preflight.check_teardown_dry_run(ec2, ["i-0aaa"])
        refused = preflight.check_teardown_dry_run(ec2, ["i-0bbb"])
    assert allowed.passed and "i-0aaa" in allowed.reason
    assert not refused.passed
    assert "ec2:TerminateInstances" in refused.reason and "i-0bbb" in refused.reason
    assert "Encoded authorization failure message" not in refused.reason  # one line, not AWS's blob


def test_the_preflight_names_what_it_checked_against(monkeypatch: pytest.MonkeyPatch) -> None:
    from coordinator.stack.target import AwsTarget

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://aws-gateway.example.com")
    results = [preflight.CheckResult("budget-headroom", True, "remaining $5.00")]
    text = preflight.format_results(results, AwsTarget.real().describe)
    assert text.splitlines()[0] == "pre-flight against endpoint https://aws-gateway.example.com (eu-west-1):"
