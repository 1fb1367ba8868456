"""What every backend's classifier is: a tokenizer's length count and a batch's labels and scores.

`model.py` chooses and loads a backend; `torch_model.py` and `onnx_model.py` implement this interface.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

DEFAULT_MAX_LENGTH = 128  # movie-review sentences are 27 tokens on average, 65 at most: 128 truncates none


@dataclass(frozen=True, slots=True)
class BatchResult:
    labels: list[str]
    scores: list[float]
    truncated: int  # texts in the batch longer than max_length tokens


class Classifier(Protocol):
    backend: str
    max_length: int

    def token_lengths(self, texts: list[str]) -> list[int]: ...

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult: ...
