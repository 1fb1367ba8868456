"""The fine-tuning says how far it is: a fresh clone under load spent 32 minutes in it without a word."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoModelForSequenceClassification, AutoTokenizer

from coordinator.build.dataset import Sentence
from coordinator.build.model import _fine_tune
from tests.conftest import synthetic_sentences


def test_the_fine_tuning_reports_every_tenth_with_the_time_left(tiny_model_dir: Path) -> None:
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    texts = synthetic_sentences(640)
    train = [Sentence(n, text, "positive" if n % 2 else "negative") for n, text in enumerate(texts)]
    heard: list[str] = []
    _fine_tune(model, tokenizer, train, {"negative": 0, "positive": 1}, heard.append)
    # 640 sentences in batches of 32: 20 steps, a line at steps 2, 4, ..., 18
    assert [line.split(",")[0].strip() for line in heard] == [f"step {n}/20" for n in range(2, 20, 2)]
    assert all(line.endswith("s to go") for line in heard)
