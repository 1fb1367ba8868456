"""Where generated things live, relative to the repository (all git-ignored).

`SPOTBATCH_HOME` moves them elsewhere (tests point it at a temporary directory).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOME_ENV = "SPOTBATCH_HOME"
# the Terraform modules and stacks ship with the source tree, beside the packages
REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout (an editable install)
TERRAFORM_DIR = REPO_ROOT / "terraform"
# `spotbatch simulate`'s matrices, each in a folder of its pool's name under the runs folder: the plan's
# cheapest pool and the pinned us-east-1 default
SIMULATE_POOLS = ("planned", "pinned")


def checkout_first(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with this checkout first on PYTHONPATH: a child's `python -m coordinator...` runs the code
    of the tree that started it, not whichever copy the interpreter has installed."""
    rest = environ.get("PYTHONPATH", "")
    return {**environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{rest}" if rest else str(REPO_ROOT)}


def project_home() -> Path:
    configured = os.environ.get(HOME_ENV)
    return Path(configured) if configured else Path.cwd()


def cache_dir() -> Path:
    return project_home() / ".cache" / "spotbatch"


def build_dir() -> Path:
    return project_home() / "build"


def default_dataset_path() -> Path:
    return build_dir() / "data" / "movie_sentences.parquet"


def default_model_dir() -> Path:
    return build_dir() / "models" / "minilm-sentiment"


def tiny_model_dir() -> Path:
    return build_dir() / "models" / "tiny-bert"


def runs_dir() -> Path:
    return project_home() / "runs"


def spend_log_path() -> Path:
    """The budget guard's append-only log; it outlives runs, so it is not under a run folder."""
    return project_home() / "runs" / "budget" / "spend_log.jsonl"


def preflight_log_path() -> Path:
    return project_home() / "runs" / "preflight.jsonl"
