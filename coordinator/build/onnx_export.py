"""The ONNX exports beside a model, checked against the torch model before a worker may use them.

1. export: `torch.onnx.export` (TorchScript exporter, opset 17), batch and sequence axes dynamic;
2. fuse: ONNX Runtime's transformer optimizer fuses attention, embeddings + LayerNorm, GELU and skip
   connections for BERT-family models (MiniLM is one; exported with eager attention, whose graph it
   recognises), without hardware-specific rewrites, so the file stays portable -> `model.onnx`;
3. quantise: dynamic int8, per-channel weights -> `model.int8.onnx`;
4. check: torch, fp32 and int8 predict the same sentences (the whole default dataset: 10,000). The fp32
   export must give torch's label on every one (anything less is an export bug: the build fails); the int8
   export must agree on at least `INT8_GATE` (99.5%) or it is refused as a backend of its own, and the
   manifest says by how much it fell short. The largest score difference is recorded for both;
5. int8 checked by fp32 (`inference/checked_model.py`): the rows where int8 disagreed with torch are the
   ones it was least sure of. The margin is fitted on every other sentence of the check set (`RECHECK_ROOM`
   times the largest int8 margin, top class minus runner-up, among its disagreements there; at least
   `RECHECK_FLOOR`) and checked on the others, which it never saw: the variant's labels there (int8's,
   fp32's where int8's margin is below the margin) must pass `INT8_GATE`; the share of rows it re-runs is
   recorded. The int8 file is deleted only if neither int8 nor this passed;
6. `onnx/manifest.json`: each variant's file, agreement, largest score difference, and whether it passed
   (`inference/model.py` offers only passed variants).

Usage::

    report = export_onnx(Path("build/models/minilm-sentiment"), texts)
    report.lines()
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from coordinator.errors import ConfigError
from inference.checked_model import BACKEND as CHECKED
from inference.checked_model import margins
from inference.classifier import Classifier
from inference.model import (
    ONNX_DIR,
    ONNX_FILES,
    ONNX_MANIFEST,
    load_classifier,
    threads_to_use,
)
from inference.onnx_model import OnnxClassifier, load_onnx_classifier

OPSET = 17
INT8_GATE = 0.995  # share of sentences on which int8 must give torch's label
# the checked variant's margin: half again over the largest int8 margin among its disagreements on the
# check set (new sentences may sit a little further out), never under 0.02 (a check set it agreed on)
RECHECK_ROOM = 1.5
RECHECK_FLOOR = 0.02
FUSABLE = {"bert": "bert", "roberta": "bert", "distilbert": "bert"}  # config.model_type -> optimizer's type


@dataclass(frozen=True, slots=True)
class VariantCheck:
    file: str
    rows: int
    agreement: float  # share of rows with torch's label
    max_score_diff: float  # largest |score - torch's score| where the labels agree
    passed: bool
    note: str = ""
    recheck_margin: float | None = None  # the checked variant's: rows under it run again on fp32
    rechecked: float | None = None  # the checked variant's share of rows run again


@dataclass(frozen=True, slots=True)
class OnnxReport:
    variants: dict[str, VariantCheck]
    seconds: float

    def lines(self) -> list[str]:
        out = []
        for name, v in self.variants.items():
            verdict = "passed" if v.passed else f"REFUSED: {v.note}"
            rechecks = (
                f" (fp32 again on the {v.rechecked:.1%} of rows where int8's margin < {v.recheck_margin:.3f})"
                if v.recheck_margin is not None and v.rechecked is not None
                else ""
            )
            out.append(
                f"{name}: {v.agreement:.2%} of {v.rows} sentences with torch's label{rechecks}, largest "
                f"score "
                f"difference {v.max_score_diff:.2e}: {verdict}"
            )
        return out


def _export(model_dir: Path, raw: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from inference.torch_model import quiet_transformers

    quiet_transformers()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # eager attention: the graph ORT's BERT fusion recognises (SDPA's is not fused, and runs slower)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, attn_implementation="eager").eval()
    sample = tokenizer(["an example sentence", "another"], padding=True, return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in sample]
    axes = {n: {0: "batch", 1: "sequence"} for n in names} | {"logits": {0: "batch"}}
    # The TorchScript exporter (dynamo=False): the torch.export-based one needs onnxscript, one more package
    # for a graph ORT's BERT fusions were written against. It warns that it is deprecated (torch 2.13 still
    # has it; the pin keeps it) and, while tracing, about every Python branch on a tensor in transformers'
    # masking code. The check in `export_onnx` is what decides whether the export is right: every warning of
    # the export itself is silenced, nothing outside it.
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            tuple(sample[n] for n in names),
            str(raw),
            input_names=names,
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
    return dict(model.config.to_dict())


def _fuse(raw: Path, fused: Path, config: dict[str, Any]) -> None:
    from onnxruntime.transformers import optimizer

    kind = FUSABLE.get(str(config.get("model_type")))
    if kind is None:
        raw.replace(fused)
        return
    heads = int(config.get("num_attention_heads") or config.get("n_heads") or 0)
    hidden = int(config.get("hidden_size") or config.get("dim") or 0)
    optimized = optimizer.optimize_model(
        str(raw), model_type=kind, num_heads=heads, hidden_size=hidden, opt_level=0
    )
    optimized.save_model_to_file(str(fused))
    raw.unlink()


def _quantize(fused: Path, int8: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic logs advice to pre-process first; the shape inference that needs fails on fused graphs
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            str(fused),
            str(int8),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops have no inferred types
        )
    finally:
        root.setLevel(level)


def _batches(texts: list[str], batch_size: int = 64) -> list[list[int]]:
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # length-sorted, as the worker batches
    return [order[cut : cut + batch_size] for cut in range(0, len(order), batch_size)]


def _predict_all(classifier: Classifier, texts: list[str]) -> tuple[list[str], np.ndarray]:
    labels: list[str] = [""] * len(texts)
    scores = np.zeros(len(texts), dtype=np.float64)
    for rows in _batches(texts):
        result = classifier.predict([texts[i] for i in rows])
        for i, label, score in zip(rows, result.labels, result.scores, strict=True):
            labels[i], scores[i] = label, score
    return labels, scores


def _probabilities_all(classifier: OnnxClassifier, texts: list[str]) -> np.ndarray:
    found: np.ndarray | None = None
    for rows in _batches(texts):
        batch = classifier.probabilities([texts[i] for i in rows])
        found = np.zeros((len(texts), batch.shape[1])) if found is None else found
        found[rows] = batch
    assert found is not None
    return found


def _labelled(classifier: OnnxClassifier, probabilities: np.ndarray) -> tuple[list[str], np.ndarray]:
    result = classifier.result(probabilities, [])  # the labels and scores its `predict` would give
    return result.labels, np.array(result.scores)


def _check_checked(
    reference: tuple[list[str], np.ndarray],
    exports: dict[str, tuple[OnnxClassifier, np.ndarray]],
    gate: float,
) -> VariantCheck:
    """The int8-checked-by-fp32 variant: its margin fitted on the even rows, checked on the odd ones
    (module docstring, step 5)."""
    (int8, int8_p), (_, fp32_p) = exports["onnx-int8"], exports["onnx"]
    int8_labels = _labelled(int8, int8_p)[0]
    wrong = np.array([a != b for a, b in zip(reference[0], int8_labels, strict=True)])
    margin_of = margins(int8_p)
    fit = np.arange(len(wrong)) % 2 == 0
    worst = float(margin_of[fit & wrong].max()) if (fit & wrong).any() else 0.0
    threshold = max(RECHECK_FLOOR, RECHECK_ROOM * worst)
    unsure = margin_of < threshold
    combined = np.where(unsure[:, None], fp32_p, int8_p)[~fit]
    unseen = (
        [label for label, fitted in zip(reference[0], fit, strict=True) if not fitted],
        reference[1][~fit],
    )
    check = _check(unseen, _labelled(int8, combined), ONNX_FILES["onnx-int8"], gate)
    return replace(check, recheck_margin=threshold, rechecked=float(unsure[~fit].mean()))


def _check(
    reference: tuple[list[str], np.ndarray], candidate: tuple[list[str], np.ndarray], file: str, gate: float
) -> VariantCheck:
    same = np.array([a == b for a, b in zip(reference[0], candidate[0], strict=True)])
    agreement = float(same.mean())
    diff = float(np.abs(reference[1] - candidate[1])[same].max()) if same.any() else float("inf")
    passed = agreement >= gate
    note = (
        ""
        if passed
        else f"{agreement:.2%} < {gate:.2%}: {gate - agreement:.2%} short ({int((~same).sum())} rows differ)"
    )
    return VariantCheck(file, len(same), agreement, diff, passed, note)


def export_onnx(
    model_dir: Path, texts: list[str], *, threads: int | None = None, int8_gate: float = INT8_GATE
) -> OnnxReport:
    """Write and check the exports of `model_dir` on `texts` (see the module docstring)."""
    if not texts:
        raise ConfigError("the ONNX check needs sentences to compare on")
    started = time.monotonic()
    out = model_dir / ONNX_DIR
    out.mkdir(parents=True, exist_ok=True)
    (out / ONNX_MANIFEST).unlink(missing_ok=True)  # no worker may pick a half-written export
    fp32, int8 = out / ONNX_FILES["onnx"], out / ONNX_FILES["onnx-int8"]
    config = _export(model_dir, out / "model.raw.onnx")
    # ONNX Runtime's shape inference saves a failed attempt (a 60 MB model) to the working directory: give
    # it a scratch one, so nothing lands in the user's folder or the repository (paths resolved before)
    raw, fused, quantised = (path.resolve() for path in (out / "model.raw.onnx", fp32, int8))
    with tempfile.TemporaryDirectory(prefix="onnx-scratch-") as scratch, contextlib.chdir(scratch):
        _fuse(raw, fused, config)
        _quantize(fused, quantised)
    reference = _predict_all(load_classifier(str(model_dir), backend="torch", threads=threads), texts)
    checks, exports = {}, {}
    for backend, file in ONNX_FILES.items():
        candidate = load_onnx_classifier(
            model_dir, out / file, backend=backend, threads=threads_to_use(threads)
        )
        exports[backend] = (candidate, _probabilities_all(candidate, texts))
        gate = 1.0 if backend == "onnx" else int8_gate
        checks[backend] = _check(reference, _labelled(*exports[backend]), file, gate)
    if not checks["onnx"].passed:
        raise ConfigError(f"{fp32}: the fp32 export disagrees with torch ({checks['onnx'].note}); not used")
    checks[CHECKED] = _check_checked(reference, exports, int8_gate)
    if not checks["onnx-int8"].passed and not checks[CHECKED].passed:
        int8.unlink()  # refused both ways: a worker can never pick it
    _write_manifest(out, {b: asdict(c) for b, c in checks.items()}, model_dir)
    return OnnxReport(checks, time.monotonic() - started)


def _write_manifest(out: Path, variants: dict[str, Any], model_dir: Path) -> None:
    import onnxruntime

    weights = model_dir / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest() if weights.is_file() else None
    for variant in variants.values():  # each export's bytes: a worker loads only the file the build checked
        exported = out / str(variant.get("file", ""))
        if variant.get("file") and exported.is_file():
            variant["sha256"] = hashlib.sha256(exported.read_bytes()).hexdigest()
    manifest = {
        "opset": OPSET,
        "onnxruntime": onnxruntime.__version__,
        "source_weights_sha256": digest,
        "int8_gate": INT8_GATE,
        "variants": variants,
    }
    temporary = out / (ONNX_MANIFEST + ".tmp")
    temporary.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    temporary.replace(out / ONNX_MANIFEST)
