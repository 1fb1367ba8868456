"""The ONNX backend: the build's export run by ONNX Runtime, tokenized by `tokenizers` (no torch).

The tokenizer is the model directory's `tokenizer.json`, the same file transformers' fast tokenizer reads,
so the token ids are the torch backend's; labels come from `config.json`'s `id2label`. The session uses
every optimisation ONNX Runtime has for the CPU it runs on (at load time: the saved export stays portable),
`threads` intra-op threads and one inter-op thread (a batch is one sequential graph).

Usage::

    classifier = load_onnx_classifier(model_dir, model_dir / "onnx/model.onnx", backend="onnx", threads=2)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from inference.classifier import DEFAULT_MAX_LENGTH, BatchResult
from inference.errors import ModelLoadError
from inference.model_labels import checked_labels

PAD_TOKEN = "[PAD]"  # BERT's, when the tokenizer's config names none


class OnnxClassifier:
    def __init__(
        self,
        session: ort.InferenceSession,
        tokenizer_file: Path,
        id2label: dict[int, str],
        backend: str,
        max_length: int,
    ) -> None:
        self.session = session
        self.backend = backend
        self.max_length = max_length
        self.id2label = id2label
        self.inputs = [i.name for i in session.get_inputs()]
        self._counting = Tokenizer.from_file(str(tokenizer_file))  # whole texts: lengths for the plan
        self._counting.no_truncation()
        self._counting.no_padding()
        self._batching = Tokenizer.from_file(str(tokenizer_file))  # truncated, padded to the longest
        pad_token = _pad_token(tokenizer_file.parent)
        pad = self._batching.token_to_id(pad_token)
        self.pad_id = 0 if pad is None else pad
        self._batching.enable_truncation(max_length)
        self._batching.enable_padding(pad_id=self.pad_id, pad_token=pad_token)
        self.known_ids: dict[str, list[int]] = {}

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Token counts before truncation; the ids are kept, so the batches need not tokenize again."""
        encodings = self._counting.encode_batch(texts)
        self.known_ids = {text: encoding.ids for text, encoding in zip(texts, encodings, strict=True)}
        return [len(encoding.ids) for encoding in encodings]

    def _arrays(self, texts: list[str]) -> dict[str, np.ndarray]:
        """input_ids, attention_mask, token_type_ids of one batch, padded to its longest text. Texts counted
        by `token_lengths` and not over `max_length` reuse their ids (the same ids, mask and type ids the
        tokenizer would give a single sentence); any other batch is tokenized with truncation."""
        known = [self.known_ids.get(text) for text in texts]
        if any(ids is None or len(ids) > self.max_length for ids in known):
            encodings = self._batching.encode_batch(texts)
            return {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
        width = max(len(ids) for ids in known if ids is not None)
        input_ids = np.full((len(texts), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, ids in enumerate(known):
            assert ids is not None
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """Each text's class probabilities (rows in input order, columns by label id)."""
        arrays = self._arrays(texts)
        (logits,) = self.session.run(["logits"], {name: arrays[name] for name in self.inputs})
        logits = logits.astype(np.float32)
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return np.asarray(shifted / shifted.sum(axis=-1, keepdims=True))

    def result(self, probabilities: np.ndarray, lengths: list[int]) -> BatchResult:
        indices = probabilities.argmax(axis=-1)
        return BatchResult(
            labels=[self.id2label[int(i)] for i in indices],
            scores=[float(probabilities[row, i]) for row, i in enumerate(indices)],
            truncated=sum(1 for length in lengths if length > self.max_length),
        )

    def predict(self, texts: list[str], lengths: list[int] | None = None) -> BatchResult:
        lengths = lengths if lengths is not None else self.token_lengths(texts)
        return self.result(self.probabilities(texts), lengths)


def _pad_token(model_dir: Path) -> str:
    """The tokenizer's pad token, as transformers reads it (tokenizer_config.json); BERT's by default."""
    try:
        config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return PAD_TOKEN
    token = config.get("pad_token")
    if isinstance(token, dict):  # an AddedToken written out
        token = token.get("content")
    return token if isinstance(token, str) else PAD_TOKEN


def session_options(threads: int, *, spinning: bool = True) -> ort.SessionOptions:
    """`spinning` False: the intra-op threads sleep between runs instead of spinning for the next one (two
    sessions taking turns on the same cores, `checked_model.py`, would otherwise spin against each other)."""
    options = ort.SessionOptions()
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: the worker's log is one line per batch
    return options


def load_onnx_classifier(
    model_dir: Path,
    export: Path,
    *,
    backend: str,
    max_length: int = DEFAULT_MAX_LENGTH,
    threads: int = 1,
    spinning: bool = True,
) -> OnnxClassifier:
    tokenizer_file = model_dir / "tokenizer.json"
    try:
        config: dict[str, Any] = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        if not tokenizer_file.is_file():
            raise FileNotFoundError(f"{tokenizer_file} (a fast tokenizer's file)")
        session = ort.InferenceSession(
            str(export), session_options(threads, spinning=spinning), providers=["CPUExecutionProvider"]
        )
        width = session.get_outputs()[0].shape[-1]
        id2label = checked_labels(
            config["id2label"],
            outputs=width if isinstance(width, int) else None,
            where=str(model_dir / "config.json"),
        )
    except (OSError, ValueError, KeyError, RuntimeError, ort.capi.onnxruntime_pybind11_state.Fail) as error:
        raise ModelLoadError(f"cannot load the {backend} export {export}: {error}") from None
    return OnnxClassifier(session, tokenizer_file, id2label, backend, max_length)
