"""The job a burst runs on the rented box; copied into the payload as `burst_job.py`.

    python burst_job.py --smoke      # 3 batches of the dataset: proves model, data and device work there
    python burst_job.py              # the whole dataset

Runs the spotbatch worker (the payload carries the `inference` package, the model and the data) with local
storage under `outputs/<smoke|job>/`, then writes `outputs/<smoke|job>/predictions.csv` (id, prediction,
score; each row once, from the parts the checkpoint lists) and `metrics-<smoke|job>.json` (rows, seconds,
rows/s, device). The worker's log goes to `logs/<smoke|job>.log`. Only the standard library, pyarrow and
the payload's `inference` package are imported, so it runs wherever the parity check passed.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

SMOKE_BATCHES = 3
BATCH_SIZE = 64


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    import pyarrow.parquet as pq

    from inference.checkpoint import read_segment_output
    from inference.storage import LocalStore

    here = Path(__file__).resolve().parent
    kind = "smoke" if args.smoke else "job"
    data = here / "data" / "sentences.parquet"
    rows = pq.ParquetFile(data).metadata.num_rows
    stop = min(rows, SMOKE_BATCHES * BATCH_SIZE) if args.smoke else rows
    out = here / "outputs" / kind
    started = time.monotonic()
    code = _run_worker(here, kind, data, stop, out)
    seconds = time.monotonic() - started
    if code != 0:
        print(f"burst_job: the worker exited {code}; see logs/{kind}.log", file=sys.stderr)
        return code
    predictions = read_segment_output(LocalStore(out), kind)
    with open(out / "predictions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "prediction", "score"])
        writer.writerows(predictions)
    metrics = {
        "kind": kind,
        "rows": len(predictions),
        "seconds": round(seconds, 3),
        "rows_per_s": round(len(predictions) / seconds, 2) if seconds else 0.0,
        "device": _device(),
    }
    (here / f"metrics-{kind}.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(metrics))
    return 0


def _run_worker(here: Path, kind: str, data: Path, stop: int, out: Path) -> int:
    """The worker on rows [0, stop) of the payload's data, its log in logs/<kind>.log; its exit code."""
    (here / "logs").mkdir(exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "inference.worker",
        "--input",
        str(data),
        "--start",
        "0",
        "--stop",
        str(stop),
        "--segment-id",
        kind,
        "--output-prefix",
        str(out),
        "--model",
        str(here / "model"),
        "--batch-size",
        str(BATCH_SIZE),
        "--no-notice-poll",
    ]
    with open(here / "logs" / f"{kind}.log", "w", encoding="utf-8") as log:
        return subprocess.call(command, cwd=here, stdout=log, stderr=subprocess.STDOUT)


def _device() -> str:
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


if __name__ == "__main__":
    sys.exit(main())
