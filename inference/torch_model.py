"""The torch backend: transformers' tokenizer and model, on the CPU or a CUDA GPU.

On a GPU, a batch runs under autocast (bf16 where the GPU supports it, else fp16: tensor cores, half the
memory traffic) and its token ids are copied from pinned host memory without blocking. On a CPU it runs in
fp32 under `inference_mode`. Scores are computed in fp32 either way.

Usage::

    classifier = load_torch_classifier("build/models/minilm-sentiment", threads=2)   # or a hub name

Both a local directory and a hub name go through `AutoTokenizer` / `AutoModelForSequenceClassification`.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import torch

from inference.classifier import DEFAULT_MAX_LENGTH, BatchResult
from inference.errors import ModelLoadError
from inference.model_labels import checked_labels

DEFAULT_HUB_MODEL = "distilbert-base-uncased-finetuned-sst-2-english"

log = logging.getLogger(__name__)


def pick_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def configure_threads(threads: int) -> int:
    torch.set_num_threads(threads)
    return threads


def autocast_dtype(device: torch.device, *, bf16_supported: bool | None = None) -> torch.dtype | None:
    """The reduced precision a device runs a batch in: bf16 on GPUs that have it (Ampere and later), fp16
    on other GPUs (T4, V100), none on a CPU (fp32 there: int8 is the ONNX backend's business)."""
    if device.type != "cuda":
        return None
    if bf16_supported is None:
        bf16_supported = bool(torch.cuda.is_bf16_supported())
    return torch.bfloat16 if bf16_supported else torch.float16


class TorchClassifier:
    backend = "torch"

    def __init__(self, tokenizer: Any, model: Any, device: torch.device, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.max_length = max_length
        self.id2label = {int(k): str(v) for k, v in model.config.id2label.items()}
        self.autocast = autocast_dtype(device) if device.type == "cuda" else None

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Token counts before truncation (special tokens included): for length-sorted batching."""
        encoded = self.tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def _to_device(self, encoded: Any) -> dict[str, torch.Tensor]:
        if self.device.type != "cuda":
            return {k: v for k, v in encoded.items()}
        return {k: v.pin_memory().to(self.device, non_blocking=True) for k, v in encoded.items()}

    def _precision(self) -> contextlib.AbstractContextManager[Any]:
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast)

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult:
        """Labels and the probability of each chosen label, in the order of `texts`."""
        lengths = lengths if lengths is not None else self.token_lengths(texts)
        encoded = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        with torch.inference_mode(), self._precision():
            logits = self.model(**self._to_device(encoded)).logits
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


def load_torch_classifier(
    source: str,
    *,
    max_length: int = DEFAULT_MAX_LENGTH,
    device: torch.device | None = None,
    threads: int | None = None,
) -> TorchClassifier:
    """Load from a local directory (written by `save_pretrained`) or, where a hub is reachable, a hub name."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if threads:
        configure_threads(threads)
    quiet_transformers()
    local = Path(source)
    if local.exists() and not (local / "config.json").is_file():
        raise ModelLoadError(f"{source}: a model directory needs config.json (written by save_pretrained)")
    where = f"directory {source}" if local.exists() else f"hub name {source!r}"
    device = device or pick_device()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForSequenceClassification.from_pretrained(source)
    except (OSError, ValueError, RuntimeError) as error:  # RuntimeError: weights of other shapes
        hint = "" if local.exists() else " (no such local directory; is the hub reachable?)"
        said = " ".join(str(error).split())[:300]  # one line: transformers' reports run to several
        raise ModelLoadError(f"cannot load the classifier from {where}{hint}: {said}") from None
    checked_labels(model.config.id2label, outputs=model.config.num_labels, where=f"{where}: config.json")
    model.to(device).eval()
    return TorchClassifier(tokenizer, model, device, max_length)
