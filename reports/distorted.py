"""The runs a host distorted: left out of the report's headline, and the same figures with them counted.

A run whose workers fell more than 3% behind their instance type's pace (`coordinator/sim/pace_record.py`)
billed this host's slowness, not the type's: its cost and time are not the configuration's. The headline
(`tables.config_rows`) leaves such runs out; this paragraph names them and gives the figures with them.
"""

from __future__ import annotations

from reports.blocks import Block, money
from reports.runs import RunsFolder
from reports.tables import ConfigRow, config_rows


def with_distorted(folder: RunsFolder, headline: list[ConfigRow]) -> list[Block]:
    """The headline (`headline`: `config_rows(folder)`) counts only runs whose workers kept their pace; the
    same figures with the others."""
    left_out = [r.name for r in folder.runs if r.distorted]
    if not left_out:
        return [Block("paragraph", "No run was distorted: every run counts in the figures above.")]
    rows = config_rows(folder, with_distorted=True)
    counted = "; ".join(
        f"{r.configuration} {money(r.cost_mean)}"
        + (
            f" ({r.savings_pct:.1f}% savings)"
            if r.savings_pct is not None and r.configuration != "on-demand"
            else ""
        )
        for r in rows
    )
    kept = [r.configuration for r in headline if r.distorted]
    note = f" ({', '.join(kept)} had no other runs: its distorted ones stay in)" if kept else ""
    return [
        Block(
            "paragraph",
            f"Left out of the figures above{note}: {len(left_out)} distorted run(s), whose workers fell "
            f"behind their instance type's pace (their bills measure this host): {', '.join(left_out)}. "
            f"With them counted: {counted}.",
        )
    ]
