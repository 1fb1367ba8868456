"""Shared fixtures: a tiny model, a synthetic dataset, fake AWS credentials, a moto server."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.build.model import build_tiny_model

if TYPE_CHECKING:
    from coordinator.sim.emulator_stack import Infrastructure

# the real worker image; tests by speed; timeouts that follow the host's load
pytest_plugins = ["tests.image_fixtures", "tests.speed", "tests.host_load"]

# every process a test starts prints its Python threads' stacks if it dies of a signal (an abort in a native
# library at exit was seen once in CI with nothing but "terminate called without an active exception")
os.environ.setdefault("PYTHONFAULTHANDLER", "1")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"

WORDS = [
    "the",
    "a",
    "film",
    "movie",
    "plot",
    "actors",
    "story",
    "great",
    "awful",
    "boring",
    "brilliant",
    "slow",
    "funny",
    "sad",
    "long",
    "short",
    "charming",
    "dull",
    "moving",
    "clever",
    "predictable",
    "fresh",
    "tired",
    "script",
    "direction",
    "score",
    "visual",
    "ending",
    "beginning",
    "middle",
    "surprisingly",
    "utterly",
    "somewhat",
    "never",
    "always",
    "again",
    "really",
    "truly",
    "hardly",
    "performance",
    "cast",
    "camera",
]


def synthetic_sentences(count: int, seed: int = 7) -> list[str]:
    """Sentences of 3 to 60 words, so that length-sorted batching has something to sort."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, 60))) + "." for _ in range(count)]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("models") / "tiny-bert"
    build_tiny_model(directory)
    return directory


@pytest.fixture(scope="session")
def busy_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 4-layer, width-256 model: slow enough (~4x the tiny one) that a 375-row segment runs for a
    few seconds on a shared core, so that a test can interrupt it mid-work."""
    directory = tmp_path_factory.mktemp("models") / "busy-bert"
    build_tiny_model(directory, layers=4, width=256)
    return directory


@pytest.fixture(scope="session")
def sentences_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,500 synthetic labelled rows, ids not row numbers (10_000 + 3 * row), in 97-row groups."""
    texts = synthetic_sentences(1_500)
    table = pa.table(
        {
            "id": pa.array([10_000 + 3 * i for i in range(len(texts))], type=pa.int64()),
            "text": texts,
            "label": ["positive" if i % 2 else "negative" for i in range(len(texts))],
        }
    )
    path = tmp_path_factory.mktemp("data") / "sentences.parquet"
    pq.write_table(table, path, row_group_size=97)  # small, odd groups: chunks and segments straddle them
    return path


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials so that no test can reach a real account."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def moto_endpoint(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto server on a free loopback port, reachable from subprocesses through AWS_ENDPOINT_URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers (in process or not) use one torch thread and never reach for a hub."""
    monkeypatch.setenv("SPOTBATCH_TORCH_THREADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def terraform_ready() -> None:
    """Terraform tests need the binary and, offline, a provider mirror; without them they skip and say why."""
    import shutil

    from coordinator.stack.terraform import find_mirror

    if shutil.which("terraform") is None:
        pytest.skip("terraform is not on PATH")
    if find_mirror() is None:
        pytest.skip(
            "no hashicorp/aws provider mirror found (set SPOTBATCH_TF_PLUGIN_MIRROR); the registry is "
            "unreachable offline"
        )


@pytest.fixture(scope="session")
def deployed_stack(
    tmp_path_factory: pytest.TempPathFactory, terraform_ready: None
) -> Iterator[Infrastructure]:
    """The AWS stack (terraform/stacks/aws), applied once per session to a moto server of its own, the way
    `make simulate` applies it: the image pushed, the launch templates rendered. Tests give their jobs
    unique ids; the stack is destroyed at the end of the session."""
    from coordinator.sim.emulator_stack import emulator_infrastructure

    with emulator_infrastructure(tmp_path_factory.mktemp("stack")) as infra:
        yield infra
