"""The bar line against a case worked by hand: on-demand runs re-priced at the fair baseline, savings with
their 95% interval, and the input that stops a configuration short of 60%."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from coordinator.plan.bar import FAIR_FILE, Fair, bar_lines

# the pool's on-demand costs twice the baseline per row: its $2.00 runs are $1.00 at the baseline
FAIR = Fair(
    "us-east-1 c6i.xlarge on-demand", 1e-6, on_demand_per_row=2e-6, spot_per_row=3e-7, boots_only_savings=0.65
)


def test_savings_against_the_re_priced_on_demand_runs_and_what_stops_each() -> None:
    costs = {"on-demand": [2.0, 2.0], "spot-only": [0.3, 0.3], "hybrid": [0.5, 0.6]}
    head, spot, hybrid = bar_lines(FAIR, costs, {"spot-only": 100.0, "hybrid": 100.0})
    assert "$1.0000 a run" in head and "price ceiling 70.0%" in head
    assert spot == "  spot-only: 70.0% (95%: 70.0% to 70.0%), 100.00% of rows: MET"
    # 0.55 on average; Student's t with 1 degree of freedom makes the interval wide: 45.0% from -18.5%
    assert hybrid.startswith("  hybrid: 45.0% (95%: ") and hybrid.endswith(
        "not met: the interruptions: each sends its segment to on-demand for the rest of its work"
    )
    (_, deadline) = bar_lines(FAIR, {"on-demand": [2.0], "deadline": [0.5]}, {"deadline": 100.0})
    assert deadline.endswith("not met: the interruptions (the price and the boots leave room for the bar)")


def test_the_price_ceiling_the_boots_and_reliability_are_named() -> None:
    dear = replace(FAIR, spot_per_row=5e-7)  # spot at half the baseline's cost per row: 50% at best
    assert (
        "not met: the price ceiling (50.0%"
        in bar_lines(dear, {"on-demand": [2.0], "spot-only": [0.5]}, {"spot-only": 100.0})[1]
    )
    slow = replace(FAIR, boots_only_savings=0.55)
    assert (
        "not met: the boots (without a reclaim: 55.0%)"
        in bar_lines(slow, {"on-demand": [2.0], "spot-only": [0.5]}, {"spot-only": 100.0})[1]
    )
    assert (
        "not met: reliability below 99%"
        in bar_lines(FAIR, {"on-demand": [2.0], "spot-only": [0.3]}, {"spot-only": 98.0})[1]
    )
    assert bar_lines(FAIR, {"spot-only": [0.3]}, {}) == [
        "the bar: no on-demand runs to re-price at the fair baseline"
    ]


def test_a_fair_baseline_is_kept_beside_its_matrix_and_read_back_checked(tmp_path: Path) -> None:
    FAIR.write(tmp_path)
    assert Fair.read(tmp_path) == FAIR
    assert Fair.read(tmp_path / "elsewhere") is None  # a matrix from before the planner: no bar
    path = tmp_path / FAIR_FILE
    for text, why in (
        ("[1]", "not a fair baseline (a JSON object was expected)"),
        (path.read_text().replace('"baseline_per_row": ', '"baseline_per_row": "'), "not a fair baseline"),
        (
            path.read_text().replace('"spot_per_row": ', '"spot_per_row": true, "x": '),
            "field 'spot_per_row' is True",
        ),
        (
            path.read_text().replace('"boots_only_savings": 0.65', '"boots_only_savings": NaN'),
            "field 'boots_only_savings' is nan",
        ),
    ):
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(f"{path}: {why}")):
            Fair.read(tmp_path)
