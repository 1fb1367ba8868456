"""Loading a text classifier and running it on one batch.

Usage::

    classifier = load_classifier("build/models/minilm-sentiment")   # a directory or a hub name
    lengths = classifier.token_lengths(texts)
    result = classifier.predict(texts)                                # labels and scores, input order

Both a local directory and a hub name go through `AutoTokenizer` / `AutoModelForSequenceClassification`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inference.errors import ModelLoadError

DEFAULT_HUB_MODEL = "distilbert-base-uncased-finetuned-sst-2-english"
DEFAULT_MAX_LENGTH = 128  # movie-review sentences are 27 tokens on average, 65 at most: 128 truncates none
THREADS_ENV = "SPOTBATCH_TORCH_THREADS"

log = logging.getLogger(__name__)


def pick_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def configure_threads(threads: int | None = None) -> int:
    """Intra-op threads: the explicit value, else $SPOTBATCH_TORCH_THREADS, else every CPU we may use."""
    chosen = threads or int(os.environ.get(THREADS_ENV, "0") or 0) or usable_cpus()
    torch.set_num_threads(chosen)
    return chosen


@dataclass(frozen=True, slots=True)
class BatchResult:
    labels: list[str]
    scores: list[float]
    truncated: int  # texts in the batch longer than max_length tokens


class Classifier:
    def __init__(self, tokenizer: Any, model: Any, device: torch.device, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.max_length = max_length
        self.id2label = {int(k): str(v) for k, v in model.config.id2label.items()}

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Token counts before truncation (special tokens included): for length-sorted batching."""
        encoded = self.tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult:
        """Labels and the probability of each chosen label, in the order of `texts`."""
        lengths = lengths if lengths is not None else self.token_lengths(texts)
        encoded = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        ).to(self.device)
        with torch.inference_mode():
            logits = self.model(**encoded).logits
        probabilities = torch.softmax(logits.float(), dim=-1)
        scores, indices = probabilities.max(dim=-1)
        return BatchResult(
            labels=[self.id2label[int(i)] for i in indices.tolist()],
            scores=[float(s) for s in scores.tolist()],
            truncated=sum(1 for length in lengths if length > self.max_length),
        )


def quiet_transformers() -> None:
    """No progress bars or advisory warnings: the worker's log is one line per batch."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def load_classifier(
    source: str, *, max_length: int = DEFAULT_MAX_LENGTH, device: torch.device | None = None
) -> Classifier:
    """Load from a local directory (written by `save_pretrained`) or, where a hub is reachable, a hub name."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    quiet_transformers()
    local = Path(source)
    if local.exists() and not (local / "config.json").is_file():
        raise ModelLoadError(f"{source}: a model directory needs config.json (written by save_pretrained)")
    where = f"directory {source}" if local.exists() else f"hub name {source!r}"
    device = device or pick_device()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForSequenceClassification.from_pretrained(source)
    except (OSError, ValueError) as error:
        hint = "" if local.exists() else " (no such local directory; is the hub reachable?)"
        raise ModelLoadError(f"cannot load the classifier from {where}{hint}: {error}") from None
    model.to(device).eval()
    return Classifier(tokenizer, model, device, max_length)
