"""The report's building blocks: one list of them renders to both Markdown and HTML (`build.py`).

Usage::

    Block("table", rows=(("configuration", "runs"), ("hybrid", "8")))
    money(0.0712)          # "$0.0712"
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Block:
    kind: str  # heading, paragraph, bullets, table, image, code
    text: str = ""
    items: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    level: int = 2


def money(value: float) -> str:
    """Dollars: four decimals below $10 (a small CPU instance's runs cost cents), two above."""
    return f"${value:,.4f}" if abs(value) < 10 else f"${value:,.2f}"
