"""int8 for every row, fp32 again for the rows int8 is not sure of: int8's speed with fp32's labels.

Dynamic int8 quantisation moves a class probability by up to a few hundredths. On a confident row that
changes nothing; on a row near the decision boundary it can flip the label (1.1% of the default dataset's
sentences for the default model: below the build's 99.5% gate). So the int8 export runs on the whole
batch, and the rows whose top two probabilities are closer than `recheck_margin` run again on the fp32
export, whose labels equal torch's (the build checks every sentence): a flip can only happen where int8's
margin is smaller than its own error. The build sets the margin from its check (`onnx_export.py`: above
int8's margin on every row where it disagreed with torch, with room to spare) and checks the result.
The rows re-run are few (those int8 itself finds uncertain), so the speed stays near int8's.

Usage::

    classifier = CheckedClassifier(int8, fp32, recheck_margin=0.08)   # two OnnxClassifier
    result = classifier.predict(texts, lengths)
    classifier.rechecked, classifier.rows                            # rows re-run on fp32, rows seen
"""

from __future__ import annotations

import numpy as np

from inference.classifier import BatchResult
from inference.onnx_model import OnnxClassifier

BACKEND = "onnx-int8-checked"


def margins(probabilities: np.ndarray) -> np.ndarray:
    """Per row: the top class's probability minus the runner-up's."""
    top_two = np.sort(probabilities, axis=-1)[:, -2:]
    return np.asarray(top_two[:, 1] - top_two[:, 0])


class CheckedClassifier:
    def __init__(self, fast: OnnxClassifier, exact: OnnxClassifier, *, recheck_margin: float) -> None:
        self.fast, self.exact = fast, exact
        self.recheck_margin = recheck_margin
        self.backend = BACKEND
        self.max_length = fast.max_length
        self.rows = self.rechecked = 0

    def token_lengths(self, texts: list[str]) -> list[int]:
        lengths = self.fast.token_lengths(texts)
        self.exact.known_ids = self.fast.known_ids  # the same tokenizer file: the rechecks reuse the ids
        return lengths

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult:
        lengths = lengths if lengths is not None else self.token_lengths(texts)
        probabilities = self.fast.probabilities(texts)
        unsure = np.flatnonzero(margins(probabilities) < self.recheck_margin)
        if unsure.size:
            probabilities[unsure] = self.exact.probabilities([texts[i] for i in unsure])
        self.rows += len(texts)
        self.rechecked += int(unsure.size)
        return self.fast.result(probabilities, lengths)
