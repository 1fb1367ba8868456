"""How fast each instance type runs the worker, measured, in rows per cloud second, and where from.

The planner prices a job per row with them (`throughput.py` adds scaled and published figures for the
types not measured), and a simulated instance is paced at its type's speed (`sim/pace.py`), so that its
billed time does not depend on how many other simulated instances share this host's cores. They live in
`instance_profiles.json` beside this file, written by the throughput bench
(`python -m bench.worker_throughput --write-profile c7i.xlarge`): the fastest worker path whose labels
agree with the pipeline's, measured on the machine named in the entry's source. A type without an entry
cannot be simulated: measure it on that type (or a machine of its cores) first.

Usage::

    profile = load_profile("c7i.xlarge")
    profile.rows_per_second, profile.source
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from coordinator.errors import SimulationError

PROFILES_PATH = Path(__file__).with_name("instance_profiles.json")


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceProfile:
    instance_type: str
    rows_per_second: float  # of the real workload (MiniLM sentences), on one instance of the type
    backend: str
    source: str


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise SimulationError(f"{path}: not readable as instance profiles: {error}") from None


def load_profiles(path: Path = PROFILES_PATH) -> dict[str, InstanceProfile]:
    """Every measured type's profile."""
    return {kind: load_profile(kind, path) for kind in _read(path)}


def load_profile(instance_type: str, path: Path = PROFILES_PATH) -> InstanceProfile:
    profiles = _read(path)
    entry = profiles.get(instance_type)
    if entry is None:
        known = ", ".join(sorted(profiles)) or "none"
        raise SimulationError(
            f"{path}: no speed profile for {instance_type} (profiled: {known}); measure one with "
            f"`python -m bench.worker_throughput --write-profile {instance_type}` on that type"
        )
    try:
        profile = InstanceProfile(
            instance_type=instance_type,
            rows_per_second=float(str(entry["rows_per_second"])),
            backend=str(entry["backend"]),
            source=str(entry["source"]),
        )
    except (KeyError, ValueError) as error:
        raise SimulationError(f"{path}: {instance_type}: field {error} missing or not a number") from None
    if not profile.rows_per_second > 0:
        raise SimulationError(
            f"{path}: {instance_type}: rows_per_second={profile.rows_per_second} is not > 0"
        )
    return profile


def save_profile(profile: InstanceProfile, path: Path = PROFILES_PATH) -> None:
    profiles = _read(path)
    profiles[profile.instance_type] = {k: v for k, v in asdict(profile).items() if k != "instance_type"}
    path.write_text(json.dumps(profiles, indent=2, sort_keys=True) + "\n", encoding="utf-8")
