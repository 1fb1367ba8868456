"""How fast the worker runs on each instance type, and where each figure comes from.

Every figure is marked with its basis, which a plan prints beside it:

- **measured**: `instance_profiles.json` (`python -m bench.worker_throughput --write-profile TYPE`), the
  worker's fastest checked path, measured on the machine its source names;
- **scaled**: a measured type's figure times a factor, for a type of the same processor family
  (`throughput.json` says why, and whether that is an upper or a lower bound);
- **published**: a published figure for the model's architecture on the type's accelerator, named and
  linked in `throughput.json` (and in the README), with how it relates to this model.

A type with none of these (`"basis": "none"`, or absent) cannot be priced per row: a plan leaves it out
and says why. `--throughput TYPE=ROWS_PER_S` gives a figure of your own (basis "given").

Usage::

    figures = Throughputs.load()
    figures.of("c7i.xlarge").rows_per_second          # 937.9
    figures.of("g5.xlarge")                           # None: figures.why_not("g5.xlarge") says why
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from coordinator.errors import ConfigError
from coordinator.plan.profiles import PROFILES_PATH, load_profiles

THROUGHPUT_PATH = Path(__file__).with_name("throughput.json")
Basis = Literal["measured", "scaled", "published", "given"]


@dataclass(frozen=True, slots=True)
class Throughput:
    instance_type: str
    rows_per_second: float  # of the real workload, on one instance of the type
    basis: Basis
    source: str

    def describe(self) -> str:
        return f"{self.rows_per_second:,.0f} rows/s, {self.basis}: {self.source}"


class Throughputs:
    def __init__(self, figures: dict[str, Throughput], missing: dict[str, str]) -> None:
        self.figures, self.missing = figures, missing

    @classmethod
    def load(
        cls,
        profiles: Path = PROFILES_PATH,
        table: Path = THROUGHPUT_PATH,
        given: dict[str, float] | None = None,
    ) -> Throughputs:
        figures = {
            kind: Throughput(kind, p.rows_per_second, "measured", f"{p.backend}; {p.source}")
            for kind, p in load_profiles(profiles).items()
        }
        missing: dict[str, str] = {}
        for kind, entry in _entries(table).items():
            if kind in figures:
                continue  # a measurement wins over any derived figure
            basis = entry.get("basis")
            why = str(entry.get("why", ""))
            if basis == "published":
                figures[kind] = Throughput(
                    kind, _number(table, kind, entry, "rows_per_second"), "published", why
                )
            elif basis == "scaled":
                base = figures.get(str(entry.get("from")))
                if base is None or base.basis != "measured":
                    missing[kind] = f"scaled from {entry.get('from')!r}, which has no measured figure"
                    continue
                factor = _number(table, kind, entry, "factor")
                figures[kind] = Throughput(
                    kind, base.rows_per_second * factor, "scaled", f"{factor:g} x {base.instance_type}: {why}"
                )
            else:
                missing[kind] = why or "no figure"
        for kind, rows_per_second in (given or {}).items():
            figures[kind] = Throughput(kind, rows_per_second, "given", "--throughput on the command line")
            missing.pop(kind, None)
        return cls(figures, missing)

    def of(self, instance_type: str) -> Throughput | None:
        return self.figures.get(instance_type)

    def why_not(self, instance_type: str) -> str:
        return self.missing.get(instance_type, "no measured, scaled or published figure for it")


def _entries(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: not readable as throughput figures: {error}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"{path}: expected an object of instance type -> figure")
    return data


def _number(path: Path, kind: str, entry: dict[str, object], field: str) -> float:
    value = entry.get(field)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ConfigError(f"{path}: {kind}: {field} {value!r} is not a positive number")
    return float(value)
