"""Reading a runs folder: the matrix's settings, and per run its record, ledger, events and interruptions.

Only local files are read (what `spotbatch simulate` or a real run left behind), so the report is the same
after a simulated or a real run. A ledger line that does not parse is an error naming the file and line; a
run that the settings promise but the folder lacks, or that has no ledger, is listed as missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coordinator.cost.ledger import AttemptRecord, JobSummary, read_ledger
from coordinator.errors import ReportError
from coordinator.paths import SIMULATE_POOLS

CONFIGURATIONS = ("on-demand", "spot-only", "hybrid", "deadline")  # as coordinator.sim.matrix runs them


@dataclass(frozen=True, slots=True)
class Run:
    name: str
    configuration: str
    record: dict[str, Any]  # run.json
    attempts: list[AttemptRecord]
    summary: JobSummary
    events: list[dict[str, Any]]
    interruptions: list[dict[str, Any]]

    @property
    def rows(self) -> int:
        return int(self.record["spec"]["rows"])

    @property
    def rows_exactly_once(self) -> int:
        return int(self.record.get("rows_merged", 0))

    @property
    def cost_usd(self) -> float:
        return self.summary.total_cost_usd

    @property
    def deadline_met(self) -> bool | None:
        """None: the run had no deadline (only deadline policies get one)."""
        met = self.record.get("deadline_met")
        return None if met is None else bool(met)

    @property
    def cloud_seconds(self) -> float:
        """The job time, in cloud seconds: `run.json`'s, from the job's start to its end, the same figure its
        deadline is judged on (the ledger's first launch to last instance end can differ by a cycle)."""
        return float(self.record["cloud_seconds"])

    @property
    def distorted(self) -> bool:
        """Its workers fell behind their instance type's pace (the host could not keep up)."""
        return bool(self.record.get("pace", {}).get("distorted", False))


@dataclass(slots=True)
class RunsFolder:
    path: Path
    settings: dict[str, Any]
    runs: list[Run] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # "name: why"
    expected: dict[str, Any] = field(default_factory=dict)  # expected.json: the matrix model's predictions

    def of(self, configuration: str) -> list[Run]:
        return [r for r in self.runs if r.configuration == configuration]


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ReportError(f"{path}:{number}: corrupt line ({error.msg})") from None
    return rows


def pool_folders(path: Path) -> list[tuple[str, Path]]:
    """The matrices of a runs folder: itself when it is one (a single pool's `simulate`, a real run's
    folder), else each pool's folder inside it, planned first; [] when it holds none."""
    if (path / "simulation.json").is_file():
        return [("", path)]
    return [(pool, path / pool) for pool in SIMULATE_POOLS if (path / pool / "simulation.json").is_file()]


def latest_runs_folder(runs_dir: Path) -> Path:
    found = sorted(p for p in runs_dir.glob("simulate-*") if pool_folders(p))
    if not found:
        raise ReportError(f"no runs under {runs_dir}: run `make simulate` (or `make simulate QUICK=1`) first")
    return found[-1]


def load_runs(path: Path) -> RunsFolder:
    settings_path = path / "simulation.json"
    if not settings_path.is_file():
        raise ReportError(f"{path}: no simulation.json; is this a runs folder from `make simulate`?")
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    folder = RunsFolder(path, settings)
    if (path / "expected.json").is_file():
        folder.expected = json.loads((path / "expected.json").read_text(encoding="utf-8"))
    planned = settings.get("runs", {})
    for configuration in CONFIGURATIONS:
        for index in range(1, int(planned.get(configuration, 0)) + 1):
            name = f"{configuration}-{index:02d}"
            run_dir = path / name
            if not (run_dir / "run.json").is_file():
                folder.missing.append(f"{name}: no run.json (the run did not finish)")
                continue
            if not (run_dir / "ledger.jsonl").is_file():
                folder.missing.append(f"{name}: no ledger.jsonl (nothing was launched)")
                continue
            try:
                attempts, summary = read_ledger(run_dir / "ledger.jsonl")
            except ValueError as error:
                raise ReportError(str(error)) from None
            if summary is None:
                folder.missing.append(f"{name}: ledger.jsonl has no job line (the run was cut short)")
                continue
            folder.runs.append(
                Run(
                    name,
                    configuration,
                    json.loads((run_dir / "run.json").read_text(encoding="utf-8")),
                    attempts,
                    summary,
                    _json_lines(run_dir / "events.jsonl"),
                    _json_lines(run_dir / "interruptions.jsonl"),
                )
            )
    if not folder.runs:
        raise ReportError(
            f"{path}: no finished runs to report on ({len(folder.missing)} missing); run `make simulate`"
        )
    return folder
