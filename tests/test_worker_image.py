"""The real worker image, built from a clean checkout with podman as `make image` builds it, then run."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from coordinator.build.container_engine import Engine
from coordinator.build.worker_image import verify_image
from coordinator.errors import InfraError
from inference.checkpoint import decode_part
from tests.host_load import scaled
from tests.image_fixtures import WorkerImage

pytestmark = pytest.mark.slow


def test_the_cpu_image_is_built_for_linux_amd64_with_its_pins_and_only_the_worker(
    worker_image: WorkerImage, podman_engine: Engine
) -> None:
    assert "linux/amd64" in worker_image.output and "pins import: " in worker_image.output
    assert "onnxruntime 1.32" in worker_image.output
    fields = podman_engine.call(
        "image", "inspect", "--format", "{{.Architecture}} {{.Os}} {{.User}}", worker_image.tag
    )
    assert fields.split() == ["amd64", "linux", "worker"]
    inside = podman_engine.call(
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        worker_image.tag,
        "-c",
        "ls /app /models/minilm-sentiment/onnx; ls /wheels /tmp/requirements 2>&1; "
        "python -c 'import coordinator' 2>&1; python -c 'import torch' 2>&1; id -u",
    )
    assert "inference" in inside and "model.onnx" in inside and "manifest.json" in inside
    assert "cannot access '/wheels'" in inside and "cannot access '/tmp/requirements'" in inside
    assert "No module named 'coordinator'" in inside and "No module named 'torch'" in inside
    assert inside.strip().splitlines()[-1] == "10001"


def test_the_image_runs_a_segment_from_its_entrypoint(
    worker_image: WorkerImage, podman_engine: Engine, sentences_parquet: Path, tmp_path: Path
) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    for folder, mode in ((data, 0o755), (out, 0o777)):  # the image's user is uid 10001
        folder.mkdir()
        folder.chmod(mode)
    shutil.copy(sentences_parquet, data / "sentences.parquet")
    (data / "sentences.parquet").chmod(0o644)
    result = subprocess.run(
        podman_engine.command(
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{data}:/data:ro",
            "-v",
            f"{out}:/out",
            "-e",
            "SPOTBATCH_SEGMENT_ID=seg-0000",
            worker_image.tag,
            "--input",
            "/data/sentences.parquet",
            "--start",
            "0",
            "--stop",
            "300",
            "--output-prefix",
            "/out",
            "--model",
            "/models/minilm-sentiment",
        ),
        env=podman_engine.environment(),
        capture_output=True,
        text=True,
        timeout=scaled(300),
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "on the onnx" in result.stdout + result.stderr  # ONNX Runtime: the CPU image has no torch
    checkpoint = json.loads((out / "checkpoints" / "seg-0000.json").read_text())
    assert checkpoint["done"] and checkpoint["rows_done"] == 300
    rows = [
        [i] for part in checkpoint["parts"] for i in decode_part((out / part).read_bytes())["id"].to_pylist()
    ]
    ids = pq.read_table(sentences_parquet).column("id").to_pylist()[:300]
    assert [int(r[0]) for r in rows] == ids  # every row of the segment once, in order


def test_an_image_for_another_platform_is_refused_before_any_push(
    podman_engine: Engine, tmp_path: Path
) -> None:
    """An arm64 laptop's native build: EC2's x86_64 workers would fail with "exec format error"."""
    (tmp_path / "Containerfile").write_text("FROM scratch\nCOPY Containerfile /\n")
    tag = f"localhost/spotbatch-arm64-probe:{uuid.uuid4().hex[:8]}"
    podman_engine.call("build", "--platform", "linux/arm64", "-q", "-t", tag, str(tmp_path))
    try:
        with pytest.raises(InfraError, match="built for linux/arm64; the instances run linux/amd64"):
            verify_image(podman_engine, tag, variant="cpu", root=Path(__file__).resolve().parents[1])
    finally:
        podman_engine.call("rmi", tag)


def test_an_image_whose_model_its_user_cannot_read_is_refused_before_any_push(
    worker_image: WorkerImage, podman_engine: Engine, tmp_path: Path
) -> None:
    """What COPY of a model saved 0600 gives: the build and the pins pass, every worker would crash."""
    (tmp_path / "Containerfile").write_text(
        f"FROM {worker_image.tag}\nUSER root\nRUN chmod 0600 /models/minilm-sentiment/onnx/model.onnx\n"
        "USER worker\n"
    )
    tag = f"localhost/spotbatch-private-model-probe:{uuid.uuid4().hex[:8]}"
    podman_engine.call("build", *podman_engine.build_options, "-q", "-t", tag, str(tmp_path))
    try:
        with pytest.raises(InfraError, match=r"cannot read /models/minilm-sentiment/onnx/model\.onnx$"):
            verify_image(podman_engine, tag, variant="cpu", root=worker_image.checkout)
    finally:
        podman_engine.call("rmi", tag)
