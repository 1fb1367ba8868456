"""docs/budget/ stays true: the manifest validates, and the pages carry the numbers the code computes."""

from __future__ import annotations

import json

import jsonschema

from coordinator.cost.budget import DEFAULT_CEILING_USD
from coordinator.cost.pricing import ESTIMATE_MARGIN, PriceTable, recommend_two_gpu_vendor
from coordinator.preflight.checks import CHECK_NAMES
from tests.conftest import REPO

DOCS = REPO / "docs" / "budget"


def manifest() -> dict[str, object]:
    data: dict[str, object] = json.loads((DOCS / "manifest.json").read_text())
    return data


def test_manifest_matches_its_schema_and_the_code() -> None:
    data = manifest()
    jsonschema.validate(data, json.loads((DOCS / "manifest.schema.json").read_text()))
    assert data["ceiling_usd"] == DEFAULT_CEILING_USD
    per_lab = data["ceiling_per_lab"]
    assert isinstance(per_lab, dict) and sum(per_lab.values()) == data["ceiling_usd"]
    assert data["spend_log_path"] == "runs/budget/spend_log.jsonl"
    table = PriceTable.load()
    assert data["vendor"] == recommend_two_gpu_vendor(table).provider
    prices = data["vendor_snapshot_prices"]
    assert isinstance(prices, dict)
    for key, price in prices.items():
        provider, instance_type, market = key.split("/")
        row = next(
            r
            for r in table.rows
            if (r.provider, r.instance_type, r.market) == (provider, instance_type, market)
        )
        assert row.usd_per_hour == price
        assert row.snapshot_date is not None and row.snapshot_date.isoformat() == data["vendor_snapshot_date"]


def test_manifest_schema_rejects_a_wrong_currency() -> None:
    bad = {**manifest(), "currency": "EUR"}
    try:
        jsonschema.validate(bad, json.loads((DOCS / "manifest.schema.json").read_text()))
    except jsonschema.ValidationError as error:
        assert "'USD' was expected" in error.message
    else:
        raise AssertionError("a manifest in EUR validated")


def test_survey_and_budget_pages_carry_the_computed_numbers() -> None:
    table = PriceTable.load()
    pick = recommend_two_gpu_vendor(table)
    survey = (DOCS / "vendor-survey.md").read_text()
    assert f"{pick.provider} `{pick.instance_type}`, ${pick.usd_per_hour:.2f}/GPU-h" in survey
    assert f"(${pick.instance_usd_per_hour:.2f}/h for the pair)" in survey
    budget = (DOCS / "budget.md").read_text()
    lab = manifest()["ceiling_per_lab"]
    assert isinstance(lab, dict)
    hours = lab["lab02-tp-spinup"] / (pick.instance_usd_per_hour * (1 + ESTIMATE_MARGIN))
    assert f"**${pick.instance_usd_per_hour:.2f}/h**" in budget
    assert f"**{hours:.2f} h**" in budget
    fallback = table.lookup("runpod", "us", "2x_a100_sxm4_80gb", "on-demand")
    assert (
        f"**{lab['lab02-tp-spinup'] / (fallback.instance_usd_per_hour * (1 + ESTIMATE_MARGIN)):.2f} h**"
        in budget
    )


def test_checklist_names_every_machine_check() -> None:
    checklist = (DOCS / "pre-flight-checklist.md").read_text()
    for name in CHECK_NAMES:
        assert f"`{name}`" in checklist
