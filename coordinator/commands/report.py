"""`spotbatch report`: the comparison report (markdown + charts + HTML) from a runs folder."""

from __future__ import annotations

from coordinator.commands.options import Subcommands
from reports import cli as report_cli


def add_parser(commands: Subcommands) -> None:
    report = commands.add_parser(
        "report", help="the comparison report (markdown + charts + HTML) from a runs folder"
    )
    report_cli.add_arguments(report)
    report.set_defaults(handler=report_cli.run)
