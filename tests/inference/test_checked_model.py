"""int8 checked by fp32: only the rows int8 is unsure of run again, and they take fp32's answer."""

from __future__ import annotations

from typing import Any

import numpy as np

from inference.checked_model import CheckedClassifier, margins
from inference.classifier import BatchResult


class FakeOnnx:
    """Probabilities by text; records which texts it was asked about."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table, self.asked = table, []  # type: ignore[var-annotated]
        self.max_length, self.known_ids = 128, {}  # type: ignore[var-annotated]

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    def probabilities(self, texts: list[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float64)

    def result(self, probabilities: np.ndarray, lengths: list[int]) -> BatchResult:
        labels = ["NEG", "POS"]
        return BatchResult(
            [labels[int(i)] for i in probabilities.argmax(axis=-1)], list(probabilities.max(axis=-1)), 0
        )


def test_margins_are_top_minus_runner_up() -> None:
    assert np.allclose(margins(np.array([[0.2, 0.8], [0.55, 0.45]])), [0.6, 0.1])
    assert np.allclose(margins(np.array([[0.1, 0.3, 0.6], [0.5, 0.2, 0.3]])), [0.3, 0.2])  # three classes


def test_only_rows_under_the_margin_run_again_and_take_fp32s_answer() -> None:
    fast: Any = FakeOnnx({"sure": [0.1, 0.9], "close": [0.48, 0.52], "edge": [0.45, 0.55]})
    exact: Any = FakeOnnx({"close": [0.53, 0.47], "edge": [0.44, 0.56]})
    checked = CheckedClassifier(fast, exact, recheck_margin=0.08)
    texts = ["sure", "close", "edge"]
    result = checked.predict(texts, checked.token_lengths(texts))
    assert exact.asked == [["close"]]  # margins 0.8, 0.04, 0.10: one under 0.08
    assert result.labels == ["POS", "NEG", "POS"]  # the close one flipped to fp32's label
    assert (checked.rows, checked.rechecked) == (3, 1)
