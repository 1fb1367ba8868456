"""The worker image's wheels, fetched on this machine for the image's platform before the build.

`pip download` runs here, with this machine's pip configuration (its index, proxy and certificates), for
CPython 3.11 on manylinux x86_64, into `build/wheelhouse/`; the Dockerfile mounts that folder for its one
`pip install --no-index` step. So the build needs no network and no certificates, builds the same under
Docker and podman, and an arm64 laptop fetches amd64 wheels without emulating pip. Chosen over mounting
the host's CA bundle into the build, which only works where the build's engine may mount host folders and
the bundle lies where the Dockerfile expects it.

torch (CUDA variant only) comes from PyTorch's CUDA 12.8 index, the rest from the usual index.

Usage::

    wheels = fill_wheelhouse("cpu", repo_root / "build" / "wheelhouse")     # the .whl files
    resolved = resolve_pins("cuda")     # {name: version} of everything but torch, nothing downloaded
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from coordinator.errors import ConfigError, InfraError
from coordinator.paths import REPO_ROOT

TORCH_INDEX = "https://download.pytorch.org/whl/cu128"  # torch 2.13.0 built for CUDA 12.8 (sm_75 and newer)
VARIANTS = ("cpu", "cuda")
PYTHON_VERSION = "3.11"  # the base image's (python:3.11-slim, or Debian bookworm's)
PLATFORM_TAGS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
PIP_TIMEOUT_SECONDS = 1_800.0  # the CUDA variant's wheels are several GB


def requirement_files(variant: str, root: Path = REPO_ROOT) -> tuple[Path, Path]:
    if variant not in VARIANTS:
        raise ConfigError(f"image variant {variant!r}: use one of {', '.join(VARIANTS)}")
    docker = root / "docker"
    return docker / "worker-requirements.txt", docker / f"worker-requirements-{variant}.txt"


def requirements(variant: str, root: Path = REPO_ROOT) -> list[str]:
    """The variant's requirement lines (the common file, then the variant's), comments dropped."""
    lines: list[str] = []
    for path in requirement_files(variant, root):
        lines += [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def name_of(requirement: str) -> str:
    return re.split(r"[~=<>!\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _target_options() -> list[str]:
    platforms = [arg for tag in PLATFORM_TAGS for arg in ("--platform", tag)]
    return ["--only-binary=:all:", *platforms, "--python-version", PYTHON_VERSION, "--implementation", "cp"]


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", *args]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise InfraError(f"pip {args[0]} took over {PIP_TIMEOUT_SECONDS:.0f} s") from None
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")] or [
            *result.stderr.strip().splitlines()[-5:]
        ]
        raise InfraError(f"pip {args[0]} of the worker's wheels failed: " + " / ".join(errors[-3:]))


def fill_wheelhouse(variant: str, wheelhouse: Path, root: Path = REPO_ROOT) -> list[Path]:
    """Empty `wheelhouse`, then download every wheel the variant installs (linux/amd64, CPython 3.11)."""
    wanted = requirements(variant, root)
    wheelhouse.mkdir(parents=True, exist_ok=True)
    for old in wheelhouse.glob("*.whl"):
        old.unlink()
    torch = [line for line in wanted if name_of(line) == "torch"]
    rest = [line for line in wanted if name_of(line) != "torch"]
    if torch:  # PyTorch's own index, for its CUDA build and the nvidia-* wheels it needs
        _pip(
            "download",
            "--quiet",
            *_target_options(),
            "--index-url",
            TORCH_INDEX,
            "-d",
            str(wheelhouse),
            *torch,
        )
    _pip("download", "--quiet", *_target_options(), "-d", str(wheelhouse), *rest)
    return sorted(wheelhouse.glob("*.whl"))


def resolve_pins(variant: str, root: Path = REPO_ROOT) -> dict[str, str]:
    """What pip would install for the variant (torch aside: PyTorch's index is another host), resolved
    from package metadata only (`pip install --dry-run --report`): name -> version."""
    rest = [line for line in requirements(variant, root) if name_of(line) != "torch"]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        _pip(
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--report",
            str(report),
            *_target_options(),
            "--target",
            str(Path(tmp) / "target"),
            *rest,
        )
        installed = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {name_of(item["metadata"]["name"]): str(item["metadata"]["version"]) for item in installed}
