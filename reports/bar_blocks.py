"""The report's headline: the task's bar, for each pool the matrix ran in.

`spotbatch simulate` runs its matrix in the plan's cheapest pool and in the pinned us-east-1 default, and
keeps beside each matrix the fair baseline it is judged against (`fair.json`: the cheapest on-demand way to
run the job over the regions the plan considered). Per pool, this gives the bar line
(`coordinator/plan/bar.py`: savings against that baseline with the 95% interval of the mean, the rows
done, and what stops the bar where it is not met) and the job time beside it, from the runs that kept
their pace (as the rest of the report); a matrix without `fair.json` has no bar, and says so; one whose
`fair.json` is not one stops the report with a line naming the file and field.

Usage::

    blocks = bar_blocks([("planned", load_runs(path / "planned")), ("pinned", load_runs(path / "pinned"))])
"""

from __future__ import annotations

from coordinator.errors import ReportError
from coordinator.plan.bar import RELIABILITY_TARGET_PCT, SAVINGS_TARGET, Fair, bar_lines
from reports.blocks import Block
from reports.runs import CONFIGURATIONS, RunsFolder
from reports.tables import config_rows, trusted


def pool_label(name: str, folder: RunsFolder) -> str:
    where = f"{folder.settings.get('region', '?')} {folder.settings.get('instance_type', '?')}"
    return f"{name} pool ({where})" if name else where


def bar_blocks(pools: list[tuple[str, RunsFolder]]) -> list[Block]:
    out = [
        Block(
            "heading",
            f"The bar: at least {SAVINGS_TARGET:.0%} below the fair baseline, at least "
            f"{RELIABILITY_TARGET_PCT:g}% of rows",
        )
    ]
    for name, folder in pools:
        out += _one_pool(pool_label(name, folder), folder)
    out.append(
        Block(
            "paragraph",
            "Each pool's on-demand runs are re-priced at the baseline's cost per row (the same boots, the "
            "baseline's price and speed). MET when the whole 95% interval clears the bar; where it is not "
            "met, the first input that stops it: the price ceiling (the pool's spot price per row against "
            "the baseline's), the boots (spot-only without a single reclaim), else the interruptions.",
        )
    )
    return out


def _one_pool(label: str, folder: RunsFolder) -> list[Block]:
    try:
        fair = Fair.read(folder.path)
    except ValueError as error:
        raise ReportError(str(error)) from None
    if fair is None:
        return [Block("paragraph", f"**{label}**: no fair baseline recorded (`fair.json`), so no bar.")]
    costs = {c: [r.cost_usd for r in trusted(folder.of(c))] for c in CONFIGURATIONS if folder.of(c)}
    rows = {r.configuration: r for r in config_rows(folder, with_distorted=True)}
    reliability = {c: r.reliability_pct for c, r in rows.items()}
    head, *lines = bar_lines(fair, costs, reliability)
    minutes = {r.configuration: r.minutes_mean for r in config_rows(folder)}
    judged = [c for c, values in costs.items() if c != "on-demand" and values] if lines else []
    items = tuple(
        f"{line.strip()}; job time {minutes[c]:.1f} cloud min" for c, line in zip(judged, lines, strict=True)
    )
    return [Block("paragraph", f"**{label}**: {head}"), Block("bullets", items=items)]
