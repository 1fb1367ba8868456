"""Fixtures for the worker image: podman, a clean checkout, and the real CPU image built from it.

`make test` installs podman, runc and debootstrap (`make container-tools`); without them these fixtures
skip and say why. The image is built once per test process through the command a user runs (`spotbatch
image build --base-image debian`, in a clean checkout: the tracked files and nothing else), with the tiny
test model and its ONNX exports where `make model` would put the real one. Builds are serialized on the
machine (its image store is shared), so a second test process rebuilds from the engine's layer cache.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from coordinator.build.container_engine import Engine, podman
from tests.conftest import REPO, synthetic_sentences

TEST_IMAGE = "localhost/spotbatch-worker-test:cpu"
BUILD_TIMEOUT_SECONDS = 1_800  # the Debian base (about a minute) and the wheels on a first run


@dataclass(frozen=True, slots=True)
class WorkerImage:
    tag: str
    checkout: Path  # the clean checkout it was built from
    output: str  # what `spotbatch image build` printed


def checkout_files(repo: Path = REPO) -> list[str]:
    """What a fresh clone of this working tree holds: tracked files and new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and (repo / name).is_file())


def make_clean_checkout(destination: Path, repo: Path = REPO) -> Path:
    for name in checkout_files(repo):
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, target)
    return destination


@pytest.fixture(scope="session")
def podman_engine() -> Engine:
    engine = podman()
    if engine is None or shutil.which("runc") is None:
        pytest.skip("podman and runc are not installed: `make container-tools` installs them")
    return engine


@pytest.fixture(scope="session")
def clean_checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clean_checkout(tmp_path_factory.mktemp("checkout"))


@pytest.fixture(scope="session")
def onnx_tiny_model(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with its checked ONNX exports: the CPU image runs ONNX Runtime, not torch."""
    from coordinator.build.onnx_export import export_onnx

    model = tmp_path_factory.mktemp("onnx-model") / "tiny-bert"
    shutil.copytree(tiny_model_dir, model)
    export_onnx(model, synthetic_sentences(200, seed=3), threads=1)
    return model


@pytest.fixture(scope="session")
def worker_image(podman_engine: Engine, clean_checkout: Path, onnx_tiny_model: Path) -> Iterator[WorkerImage]:
    model_dir = clean_checkout / "build" / "models" / "minilm-sentiment"
    if not model_dir.exists():
        shutil.copytree(onnx_tiny_model, model_dir)
        for path in [model_dir, *model_dir.rglob("*")]:  # private, as safetensors saves weights (0600)
            path.chmod(0o700 if path.is_dir() else 0o600)
    env = {
        **os.environ,
        "SPOTBATCH_CONTAINER_ENGINE": "podman",
        "SPOTBATCH_HOME": str(clean_checkout),
        "PYTHONDONTWRITEBYTECODE": "1",  # the checkout stays as a clone would be
    }
    command = [
        sys.executable,
        "-m",
        "coordinator",
        "image",
        "build",
        "--base-image",
        "debian",
        "--tag",
        TEST_IMAGE,
    ]
    with open(Path(tempfile.gettempdir()) / "spotbatch-test-image.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = subprocess.run(
            command,
            cwd=clean_checkout,  # `python -m coordinator` imports the checkout's own packages
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_SECONDS,
            check=False,
        )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    yield WorkerImage(TEST_IMAGE, clean_checkout, built.stdout)
