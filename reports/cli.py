"""The report's command line (`spotbatch report`, `python -m reports`): a runs folder in, the report out."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from coordinator.errors import ReportError
from coordinator.paths import project_home, runs_dir
from reports.runs import latest_runs_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=Path, help="a runs folder from `make simulate` (default: the newest)")
    parser.add_argument("--out", type=Path, help="where the report goes (default reports/out)")


def run(args: argparse.Namespace) -> int:
    from reports.build import build_report  # matplotlib: only when a report is asked for

    folder = args.runs or latest_runs_folder(runs_dir())
    paths = build_report(folder, args.out or project_home() / "reports" / "out")
    print(f"wrote {paths.markdown} and {paths.html} ({len(paths.charts)} charts) from {folder}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m reports`: a report error is one line and exit 2, as under `spotbatch report`."""
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except ReportError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
