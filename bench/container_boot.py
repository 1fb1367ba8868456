"""Boot: from `docker run` to the worker's first checkpointed rows, the real image (podman) against the
simulator's fork-server and exec boots, in the same run.

    python -m bench.container_boot [--boots 5] [--rows 256]

Each boot runs the worker on the same local segment (`--rows` sentences of the default dataset, its own
output folder) with the default model (`make model`), single-threaded, and is timed to the worker's
exit (a segment this short is read, inferred and checkpointed in well under a second, so the figure is the
start-up): `fork` forks a worker from a server that has imported torch and transformers (how `make simulate`
boots its machines), `exec` starts `python -m inference.worker` (a cold interpreter), `container` runs the
worker image (`spotbatch-worker:cpu`, built here with `--base-image debian` if missing) with podman and
runc, as the simulator's container mode does. Printed: median and spread of each, and each mode's median
over fork's. Not in it: what the boot script does before `docker run` (metadata reads, the ECR login and
pull, measured by the README walk's machines) and a real instance's OS boot (the boot model's).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coordinator.build.container_engine import Engine, podman
from coordinator.build.worker_image import IMAGE_MODEL_DIR, local_tag
from coordinator.paths import REPO_ROOT, default_dataset_path, default_model_dir
from coordinator.sim.worker_boot import WorkerLauncher

MODES = ("fork", "exec", "container")


def worker_args(data: str, out: str, model: str, rows: int, segment: str) -> list[str]:
    options = {
        "--input": data,
        "--start": "0",
        "--stop": str(rows),
        "--segment-id": segment,
        "--output-prefix": out,
        "--model": model,
        "--threads": "1",
    }
    return [*(part for pair in options.items() for part in pair), "--no-notice-poll"]


def boot_fork(launcher: WorkerLauncher, args: list[str], log: Path) -> float:
    env = {"PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1", "HOME": str(log.parent)}
    started = time.perf_counter()
    worker = launcher.start(env, log, tuple(args))
    code = worker.wait(300.0)
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"fork boot failed ({code}): {log.read_text()[-500:]}")
    return elapsed


def boot_command(command: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} boot failed ({done.returncode}): {done.stderr[-500:]}")
    return elapsed


def ensure_image() -> Engine:
    """podman, with the CPU image built (`--base-image debian`) if it is not yet."""
    engine = podman()
    if engine is None:
        raise SystemExit("podman is not installed: `make container-tools`")
    if not engine.has_image(local_tag("cpu")):
        build = [sys.executable, "-m", "coordinator", "image", "build", "--base-image", "debian"]
        subprocess.run(build, check=True, cwd=REPO_ROOT)
    return engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--rows", type=int, default=256)
    args = parser.parse_args(argv)
    engine = ensure_image()
    launcher = WorkerLauncher("fork")
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir(mode=0o755)
        shutil.copy(default_dataset_path(), data / "input.parquet")
        os.chmod(data / "input.parquet", 0o644)
        os.chmod(tmp, 0o755)
        # round 0 is untimed: it warms the file cache (model, data, image layers) for all three modes, which
        # would otherwise be charged to whichever mode boots first
        for boot in range(args.boots + 1):  # the modes take turns, so a busy moment is shared between them
            for mode in MODES:
                out = Path(tmp) / f"{mode}-{boot}"
                out.mkdir(mode=0o777)
                out.chmod(0o777)  # the image's user is uid 10001
                here = worker_args(
                    str(data / "input.parquet"), str(out), str(default_model_dir()), args.rows, "s"
                )
                if mode == "fork":
                    elapsed = boot_fork(launcher, here, out / "worker.log")
                elif mode == "exec":
                    elapsed = boot_command([sys.executable, "-m", "inference.worker", *here])
                else:
                    inside = worker_args("/data/input.parquet", "/out", IMAGE_MODEL_DIR, args.rows, "s")
                    volumes = ["-v", f"{data}:/data:ro", "-v", f"{out}:/out"]
                    podman_run = engine.command(
                        "run", "--rm", "--network", "none", *volumes, local_tag("cpu"), *inside
                    )
                    elapsed = boot_command(podman_run, engine.environment())
                if boot:
                    times[mode].append(elapsed)
    fork = statistics.median(times["fork"])
    print(
        f"{args.boots} boots each, {args.rows} rows, one thread; seconds from docker run to the worker's exit"
    )
    print("| mode | median s | min-max s | median / fork |")
    print("|---|---|---|---|")
    for mode in MODES:
        median, low, high = statistics.median(times[mode]), min(times[mode]), max(times[mode])
        print(f"| {mode} | {median:.2f} | {low:.2f}-{high:.2f} | {median / fork:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
