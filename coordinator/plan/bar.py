"""The task's bar, said in one line per configuration: at least 60% cheaper than the fair baseline with at
least 99% of the rows done, and where it is not met, which input stops it.

The fair baseline is the cheapest on-demand way to run the job over the regions the plan considered
(`planner.py`); a matrix measures on-demand only in its own pool, so its on-demand runs are re-priced at
the baseline's cost per row (the same boots and overheads, the baseline's price and speed). The savings
carry the 95% interval of the configuration's mean cost; the bar counts as met when the whole interval
clears 60%. What stops it, in order: the price ceiling (the pool's spot price per row against the
baseline's: no boot or reclaim can beat it), the boots (the closed form without reclaims), else the
interruptions.

Usage::

    fair = Fair("us-east-1 c6i.xlarge", 5.0e-8, on_demand_per_row=5.3e-8, spot_per_row=2.1e-8,
                boots_only_savings=0.78)
    bar_lines(fair, {"on-demand": [...], "spot-only": [...]}, {"spot-only": 100.0})
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import NamedTuple

from coordinator.plan.intervals import ci95

SAVINGS_TARGET = 0.60
RELIABILITY_TARGET_PCT = 99.0
FAIR_FILE = "fair.json"  # beside a matrix's runs: the baseline its bar is drawn against


class Savings(NamedTuple):
    mean: float  # share of the baseline's cost saved, at the configuration's mean cost
    worst: float  # ... at the top of the mean cost's 95% interval
    best: float  # ... at its bottom


@dataclass(frozen=True, slots=True)
class Fair:
    baseline: str  # "us-east-1 c6i.xlarge on-demand"
    baseline_per_row: float  # USD
    on_demand_per_row: float  # the matrix pool's on-demand, USD
    spot_per_row: float  # the matrix pool's spot, USD
    boots_only_savings: float  # spot-only in closed form with no reclaim: what the boots leave

    @property
    def price_ceiling(self) -> float:
        return 1 - self.spot_per_row / self.baseline_per_row

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"
        (folder / FAIR_FILE).write_text(text, encoding="utf-8")

    @classmethod
    def read(cls, folder: Path) -> Fair | None:
        """The folder's fair baseline; None when it has none (a matrix from before the planner). One that
        is not a fair baseline is a ValueError naming the file and the field."""
        path = folder / FAIR_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ValueError(f"{path}: not a fair baseline ({error})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a fair baseline (a JSON object was expected)")
        values: dict[str, str | float] = {}
        for f in fields(cls):
            value = data.get(f.name)
            if f.name == "baseline" and isinstance(value, str):
                values[f.name] = value
            elif f.name != "baseline" and isinstance(value, int | float) and not isinstance(value, bool):
                if not math.isfinite(value):
                    raise ValueError(f"{path}: field {f.name!r} is {value!r}")
                values[f.name] = float(value)
            else:
                raise ValueError(f"{path}: field {f.name!r} is {value!r}")
        return cls(**values)  # type: ignore[arg-type]


def fair_savings(fair: Fair, costs: dict[str, list[float]]) -> tuple[float, dict[str, Savings]] | None:
    """The baseline's cost of a run (the on-demand runs re-priced at its cost per row), and each other
    configuration's savings against it; None without on-demand runs to re-price."""
    on_demand = costs.get("on-demand")
    if not on_demand:
        return None
    baseline = statistics.mean(on_demand) * fair.baseline_per_row / fair.on_demand_per_row
    judged = {}
    for config, values in costs.items():
        if config == "on-demand" or not values:
            continue
        low, high = ci95(values)
        judged[config] = Savings(*(1 - c / baseline for c in (statistics.mean(values), high, low)))
    return baseline, judged


def bar_lines(fair: Fair, costs: dict[str, list[float]], reliability_pct: dict[str, float]) -> list[str]:
    """`costs`: each configuration's run costs (on-demand's among them); `reliability_pct`: rows exactly
    once over rows asked for."""
    judged = fair_savings(fair, costs)
    if judged is None:
        return ["the bar: no on-demand runs to re-price at the fair baseline"]
    baseline, savings = judged
    lines = [
        f"the bar (>= {SAVINGS_TARGET:.0%} below the fair baseline, >= {RELIABILITY_TARGET_PCT:g}% of rows): "
        f"baseline {fair.baseline}, ${baseline:.4f} a run (the on-demand runs re-priced at its cost per "
        f"row); price ceiling {fair.price_ceiling:.1%}"
    ]
    for config, (mean, worst, best) in savings.items():
        done = reliability_pct.get(config, 0.0)
        reliable = done >= RELIABILITY_TARGET_PCT
        met = worst >= SAVINGS_TARGET and reliable
        verdict = "MET" if met else f"not met: {_stopped_by(fair, worst, reliable, config)}"
        lines.append(
            f"  {config}: {mean:.1%} (95%: {worst:.1%} to {best:.1%}), {done:.2f}% of rows: {verdict}"
        )
    return lines


def _stopped_by(fair: Fair, worst: float, reliable: bool, config: str) -> str:
    if not reliable:
        return f"reliability below {RELIABILITY_TARGET_PCT:g}%"
    if worst >= SAVINGS_TARGET:
        return "nothing"
    if fair.price_ceiling < SAVINGS_TARGET:
        return f"the price ceiling ({fair.price_ceiling:.1%}: the pool's spot price against the baseline)"
    if fair.boots_only_savings < SAVINGS_TARGET:
        return f"the boots (without a reclaim: {fair.boots_only_savings:.1%})"
    if config == "hybrid":  # its design: a reclaimed segment finishes on-demand
        return "the interruptions: each sends its segment to on-demand for the rest of its work"
    return "the interruptions (the price and the boots leave room for the bar)"
