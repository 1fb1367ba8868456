"""`spotbatch data prepare` on CSV and JSONL `--factor` x apart in size; its peak memory must not follow.

    python -m bench.prepare [--rows 1000000] [--factor 5] [--keep DIR]

For each format, a synthetic file of `--rows` rows (string ids, review-like texts of 40-400 characters, a
label) is prepared by the real command in a process of its own, then one of `--factor` x the rows. Printed:
each run's file size, wall time, rows/s and peak RSS (the process's own, from `wait4`), and the ratio of the
big run's peak RSS to the small run's (the baseline, measured in the same run): near 1 when memory is bounded
by a chunk and a row group, near `--factor` when it follows the file. Wall time carries the host's load;
the memory does not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Run:
    kind: str
    rows: int
    file_mb: float
    wall_seconds: float
    peak_rss_mb: float


def write_file(path: Path, rows: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        if path.suffix == ".csv":
            handle.write("id,text,label\n")
        for row in range(rows):
            text = " ".join(_word(rng) for _ in range(rng.randint(8, 80)))
            label = "positive" if row % 2 else "negative"
            if path.suffix == ".csv":
                handle.write(f"r{row:09d},{text},{label}\n")
            else:
                handle.write(json.dumps({"id": f"r{row:09d}", "text": text, "label": label}) + "\n")


def _word(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(1, 8)))


def prepare(source: Path, output: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of `spotbatch data prepare` on `source`, in a process of its own."""
    command = [sys.executable, "-m", "coordinator", "data", "prepare", "--input", str(source)]
    started = time.perf_counter()
    process = subprocess.Popen([*command, "--output", str(output)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"prepare failed on {source} (exit {process.returncode})")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--factor", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the files here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-prepare-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        runs = []
        for kind in (".csv", ".jsonl"):
            for rows in (args.rows, args.rows * args.factor):
                source = folder / f"input-{rows}{kind}"
                write_file(source, rows)
                wall, rss = prepare(source, folder / f"prepared-{rows}{kind}.parquet")
                runs.append(Run(kind, rows, source.stat().st_size / 1e6, wall, rss))
                print(
                    f"{kind[1:]:>5} {rows:>11,} rows  {runs[-1].file_mb:8.1f} MB  {wall:7.1f} s  "
                    f"{rows / wall:9,.0f} rows/s  peak RSS {rss:6.0f} MB",
                    flush=True,
                )
    for kind in (".csv", ".jsonl"):
        small, big = (r for r in runs if r.kind == kind)
        print(
            f"{kind[1:]}: {args.factor}x the rows ({big.file_mb / small.file_mb:.1f}x the bytes): peak RSS "
            f"{big.peak_rss_mb / small.peak_rss_mb:.2f}x the baseline's ({small.peak_rss_mb:.0f} MB)"
        )


if __name__ == "__main__":
    main()
