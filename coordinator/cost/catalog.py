"""The EC2 rows of the project's price table, generated from a public price catalog (kept in the repo so the
table can be made again from its source).

The input is an extract of SkyPilot's AWS catalog (`../shared/data/aws-prices/ec2-prices.csv`, described by
the `SOURCE.md` beside it): one row per instance type and availability zone ID, with the region's on-demand
price and the zone's spot price. The output keeps, per type and region, one on-demand row and one spot row
per zone, and leaves the table's other providers as they are. Left out, and said so on the terminal:
AWS Local Zones (other types and prices than the region's own zones; the stack launches in the region's
zones only), zones without a spot price, and Inferentia or Trainium types (the worker image has no Neuron
runtime). The catalog carries no date, so neither do its rows: pre-flight asks for `--live-prices` (or an
override) before a real launch priced from them.

Usage::

    python -m coordinator.cost.catalog ../shared/data/aws-prices/ec2-prices.csv     # rewrites prices.csv
    python -m coordinator.cost.catalog CATALOG --out /tmp/prices.csv --check        # differs: exit 1
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from coordinator.cost.pricing import COLUMNS
from coordinator.errors import PriceError

CATALOG_COLUMNS = (
    "instance_type",
    "arch",
    "vcpus",
    "memory_gib",
    "gpu_model",
    "gpu_count",
    "region",
    "availability_zone_id",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour",
)
# GPU memory per accelerator, from NVIDIA's data sheets (the catalog's GpuInfo column is not in the extract)
GPU_MEMORY_GB = {"T4": 16, "A10G": 24, "L4": 24, "L40S": 48, "V100": 16, "A100": 40, "H100": 80}
NEURON_FAMILIES = ("inf1", "inf2", "trn1", "trn1n", "trn2")
EC2_BILLING = "per-second-60s-min"
# a zone ID with a city code between the region prefix and the zone number is a Local Zone (use1-atl2-az1)
LOCAL_ZONE = re.compile(r"^[a-z0-9]+-[a-z]+[0-9]+-az[0-9]+$")
COMMIT = re.compile(r"commit \|\s*`([0-9a-f]{40})`")
SOURCE_PATH = re.compile(r"source path \|\s*`([^`]+)`")


@dataclass(frozen=True, slots=True)
class Generated:
    rows: list[dict[str, str]]
    skipped: dict[str, int]  # reason -> catalog rows left out
    provenance: str


def provenance_of(catalog: Path) -> str:
    """Where the catalog comes from, read from the SOURCE.md beside it, and the file's own hash."""
    digest = hashlib.sha256(catalog.read_bytes()).hexdigest()
    source = catalog.with_name("SOURCE.md")
    text = source.read_text(encoding="utf-8") if source.is_file() else ""
    commit, path = COMMIT.search(text), SOURCE_PATH.search(text)
    origin = (
        f"SkyPilot catalog {path.group(1)} at skypilot-org/skypilot-catalog@{commit.group(1)[:12]}"
        if commit and path
        else f"{catalog.name} (no SOURCE.md with its commit beside it)"
    )
    return f"{origin}; extract sha256 {digest[:16]}; snapshot date unknown"


def read_catalog(catalog: Path) -> list[dict[str, str]]:
    try:
        with open(catalog, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if tuple(reader.fieldnames or ()) != CATALOG_COLUMNS:
                raise PriceError(f"{catalog}: columns {reader.fieldnames} are not {list(CATALOG_COLUMNS)}")
            return list(reader)
    except OSError as error:
        raise PriceError(f"{catalog}: cannot read the catalog ({error.strerror})") from None


def _count(value: str) -> int:
    return int(float(value)) if value.strip() else 0


def _left_out_because(raw: dict[str, str]) -> str:
    """Why a catalog row is not a table row ("" if it is one)."""
    if raw["instance_type"].split(".")[0] in NEURON_FAMILIES:
        return "Inferentia/Trainium type (no Neuron runtime in the image)"
    if LOCAL_ZONE.match(raw["availability_zone_id"]):
        return "Local Zone"
    return ""


def _type_columns(raw: dict[str, str], number: int) -> dict[str, str]:
    """The columns every table row of this catalog row shares (provider, type, its vCPUs and GPUs)."""
    gpu_model = raw["gpu_model"].strip()
    if gpu_model and gpu_model not in GPU_MEMORY_GB:
        raise PriceError(f"catalog row {number}: gpu_model {gpu_model!r} has no known memory size")
    return {
        "provider": "aws",
        "region": raw["region"],
        "instance_type": raw["instance_type"],
        "vcpus": str(_count(raw["vcpus"])),
        "gpus": str(_count(raw["gpu_count"])),
        "gpu_model": gpu_model,
        "gpu_memory_gb": str(GPU_MEMORY_GB.get(gpu_model, 0)),
        "nvlink_pair": "n/a",
        "billing": EC2_BILLING,
        "snapshot_date": "",
    }


def table_rows(catalog_rows: Iterable[dict[str, str]], provenance: str) -> Generated:
    on_demand: dict[tuple[str, str], dict[str, str]] = {}
    spot: list[dict[str, str]] = []
    skipped: dict[str, int] = {}
    for number, raw in enumerate(catalog_rows, start=2):
        reason = _left_out_because(raw)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        common = _type_columns(raw, number)
        key = (raw["region"], raw["instance_type"])
        price = raw["on_demand_usd_per_hour"]
        seen = on_demand.get(key)
        if seen is not None and seen["usd_per_hour"] != price:
            raise PriceError(
                f"catalog row {number}: on-demand {price} for {key[1]} in {key[0]}, "
                f"but {seen['usd_per_hour']} in another zone"
            )
        on_demand[key] = {
            **common,
            "availability_zone_id": "",
            "market": "on-demand",
            "usd_per_hour": price,
            "source": f"on-demand, Linux, {provenance}",
        }
        if not raw["spot_usd_per_hour"].strip():
            skipped["zone without a spot price"] = skipped.get("zone without a spot price", 0) + 1
            continue
        spot.append(
            {
                **common,
                "availability_zone_id": raw["availability_zone_id"],
                "market": "spot",
                "usd_per_hour": raw["spot_usd_per_hour"],
                "source": f"spot in {raw['availability_zone_id']}, one observation, {provenance}",
            }
        )
    rows = sorted(
        [*on_demand.values(), *spot],
        key=lambda r: (r["region"], r["instance_type"], r["market"], r["availability_zone_id"]),
    )
    return Generated(rows, skipped, provenance)


def render(generated: Generated, other_rows: list[dict[str, str]], catalog: Path) -> str:
    out = io.StringIO()
    out.write(
        f"# EC2 rows generated by `python -m coordinator.cost.catalog {catalog.name}` from "
        f"{generated.provenance}. Other providers' rows are kept as they were.\n"
    )
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in [*generated.rows, *other_rows]:
        writer.writerow(row)
    return out.getvalue()


def non_aws_rows(table: Path) -> list[dict[str, str]]:
    lines = [line for line in table.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    reader = csv.DictReader(lines)
    return [{k: row.get(k) or "" for k in COLUMNS} for row in reader if row["provider"] != "aws"]


def main(argv: list[str] | None = None) -> int:
    shipped = Path(str(resources.files("coordinator.cost") / "prices.csv"))
    parser = argparse.ArgumentParser(prog="python -m coordinator.cost.catalog", description=__doc__)
    parser.add_argument("catalog", type=Path, help="the catalog extract (ec2-prices.csv)")
    parser.add_argument("--out", type=Path, default=shipped, help=f"default {shipped}")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out differs")
    args = parser.parse_args(argv)
    try:
        generated = table_rows(read_catalog(args.catalog), provenance_of(args.catalog))
        text = render(generated, non_aws_rows(shipped), args.catalog)
    except PriceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for reason, count in sorted(generated.skipped.items()):
        print(f"left out {count} catalog row(s): {reason}")
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out}: {'matches' if same else 'differs from'} the catalog")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    stamp = datetime.now(UTC).date().isoformat()
    print(f"{args.out}: {len(generated.rows)} EC2 rows written ({stamp})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
