"""What a burst sends and how it checks the box first: the payload folder, and the parity fingerprint.

`build_payload` makes an allow-listed folder: the worker's code (`inference/`), the model, a slice of the
dataset, `burst_job.py` and `requirements.lock` (the versions this machine runs). Nothing else is ever
sent: `preflight.allow_list.check_payload` with `BURST_ALLOW` must pass.

Parity: the same small Python program runs here and on the box and prints a fingerprint: Python, torch,
transformers, tokenizers, CUDA and driver, and a hash of the installed versions of the lock's packages.
`differences` lists the fields that must agree (CUDA and the driver are shown, not compared: the box has a
GPU and this machine may not; the smoke run proves the GPU path). Versions are compared without their
local build tag (`2.13.0+cpu` = `2.13.0+cu126`).

Usage::

    build_payload(Path("build/burst-payload"), model_dir=..., dataset=..., rows=2000)
    local = local_fingerprint(sys.executable, lock_names(payload))
    remote = json.loads(box.run(f"{python} - {' '.join(names)}", stdin=FINGERPRINT_SCRIPT).stdout)
    differences(local, remote)           # [] or ["torch: 2.13.0 here, 2.5.1 on the box", ...]
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import pyarrow.parquet as pq

import inference
from coordinator.errors import PayloadError
from coordinator.preflight.allow_list import DEFAULT_ALLOW
from inference.dataset import write_dataset

BURST_ALLOW = (*DEFAULT_ALLOW, "*.safetensors", "*.lock")
LOCKED_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "numpy", "pyarrow")
COMPARED = ("python", "torch", "transformers", "tokenizers", "lock_sha256")
LOCK_FILE = "requirements.lock"

FINGERPRINT_SCRIPT = r"""
import hashlib, json, platform, subprocess, sys
from importlib import metadata
def version(name):
    try:
        return metadata.version(name).split("+")[0]
    except metadata.PackageNotFoundError:
        return None
names = sorted(sys.argv[1:])
lock = "\n".join(f"{n}=={version(n)}" for n in names)
cuda = driver = None
try:
    import torch
    cuda = torch.version.cuda
except Exception:
    pass
try:
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True, timeout=20).stdout.strip() or None
except Exception:
    pass
print(json.dumps({"python": platform.python_version(), "torch": version("torch"),
                  "transformers": version("transformers"), "tokenizers": version("tokenizers"),
                  "cuda": cuda, "driver": driver, "lock_sha256": hashlib.sha256(lock.encode()).hexdigest(),
                  "lock": lock}))
"""


def lock_names(payload: Path) -> list[str]:
    path = payload / LOCK_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise PayloadError(f"{path}: cannot read the payload's lock file ({error})") from None
    names = [line.split("==")[0].strip() for line in lines if line.strip() and not line.startswith("#")]
    if not names:
        raise PayloadError(f"{path}: lists no packages")
    return names


def local_fingerprint(python: str, names: list[str]) -> dict[str, str | None]:
    done = subprocess.run(
        [python, "-", *names], input=FINGERPRINT_SCRIPT, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise PayloadError(f"fingerprint with {python} failed: {done.stderr.strip()[-300:]}")
    return dict(json.loads(done.stdout))


def differences(local: dict[str, str | None], remote: dict[str, str | None]) -> list[str]:
    return [
        f"{field}: {local.get(field)} here, {remote.get(field)} on the box"
        for field in COMPARED
        if local.get(field) != remote.get(field)
    ]


def build_payload(out: Path, *, model_dir: Path, dataset: Path, rows: int) -> Path:
    """A fresh payload folder (the old one is replaced)."""
    if not (model_dir / "config.json").is_file():
        raise PayloadError(f"{model_dir}: not a model folder (no config.json); `make model` builds one")
    table = pq.read_table(dataset)
    if rows <= 0 or rows > table.num_rows:
        raise PayloadError(f"{dataset}: asked for {rows} rows, it has {table.num_rows}")
    if out.exists():
        shutil.rmtree(out)
    (out / "data").mkdir(parents=True)
    write_dataset(table.slice(0, rows), out / "data" / "sentences.parquet")
    shutil.copytree(model_dir, out / "model")
    code = Path(inference.__file__).resolve().parent  # the worker package, as installed here
    shutil.copytree(code, out / "inference", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(Path(__file__).with_name("remote_job.py"), out / "burst_job.py")
    lock = [f"{name}=={metadata.version(name).split('+')[0]}" for name in LOCKED_PACKAGES]
    (out / LOCK_FILE).write_text(
        "# the versions the burst's parity check expects on the box\n" + "\n".join(lock) + "\n"
    )
    return out
