"""A job's local result files: whole, or the old ones and no temporary. Writes run in a child process whose
files may not grow past a limit (RLIMIT_FSIZE, SIGXFSZ ignored: a write fails with EFBIG, as on a full
disk), so a write or the close that flushes it fails part way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.host_load import scaled

WRITE_UNDER_A_LIMIT = """
import resource, signal, sys
from pathlib import Path
import pyarrow as pa
from coordinator.job.data.result_files import ResultFiles
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
out = Path(sys.argv[1])
table = pa.table({"id": list(range(20_000)), "label": [f"label-{n % 7}" for n in range(20_000)]})
try:
    with ResultFiles(out / "predictions.parquet", out / "predictions.csv") as files:
        for start in range(0, 20_000, 5_000):
            files.write(table.slice(start, 5_000))
except OSError as error:
    print(f"{type(error).__name__}|{error.filename}|{error.strerror}")
    sys.exit(3)
"""


def write_under_limit(out: Path, limit: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WRITE_UNDER_A_LIMIT, str(out), str(limit)],
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )


def test_a_write_that_fails_part_way_names_its_file_and_leaves_the_old_results_and_no_temporary(
    tmp_path: Path,
) -> None:
    old = pa.table({"id": [1], "label": ["old"]})
    pq.write_table(old, tmp_path / "predictions.parquet")
    (tmp_path / "predictions.csv").write_text('"id","label"\n1,"old"\n')
    for limit in (1_024, 40_000, 150_000):  # the first table, a later one, or the closing flush fails
        failed = write_under_limit(tmp_path, limit)
        assert failed.returncode == 3, (limit, failed.stdout, failed.stderr[-2000:])
        _, filename, message = failed.stdout.strip().split("|", 2)
        assert filename in (str(tmp_path / "predictions.parquet"), str(tmp_path / "predictions.csv")), (
            limit,
            failed.stdout,
        )
        assert "File too large" in message and not failed.stderr, (limit, failed.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["predictions.csv", "predictions.parquet"]
        assert pq.read_table(tmp_path / "predictions.parquet").equals(old)
    whole = write_under_limit(tmp_path, 10**9)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert pq.read_table(tmp_path / "predictions.parquet").num_rows == 20_000
    assert len((tmp_path / "predictions.csv").read_text().splitlines()) == 20_001
