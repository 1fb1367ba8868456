"""The worker's backends: the build's ONNX exports agree with torch (or are refused), `auto` picks what
passed, the onnx worker runs without torch installed, and a worker process gives the same output on each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from coordinator.build.onnx_export import export_onnx
from coordinator.cli import main
from coordinator.errors import ConfigError
from inference.checkpoint import read_segment_output
from inference.errors import ModelLoadError
from inference.model import ONNX_DIR, ONNX_MANIFEST, choose_backend, load_classifier, onnx_exports
from inference.storage import open_store
from inference.torch_model import autocast_dtype
from tests.conftest import REPO, synthetic_sentences
from tests.host_load import scaled

TEXTS = synthetic_sentences(400, seed=11)


@pytest.fixture(scope="module")
def exported(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = tmp_path_factory.mktemp("onnx") / "tiny-bert"
    shutil.copytree(tiny_model_dir, model)
    export_onnx(model, TEXTS, threads=1)
    return model


def test_the_fp32_export_gives_torchs_label_on_every_sentence(exported: Path) -> None:
    manifest = json.loads((exported / ONNX_DIR / ONNX_MANIFEST).read_text())
    fp32 = manifest["variants"]["onnx"]
    assert (fp32["passed"], fp32["agreement"], fp32["rows"]) == (True, 1.0, len(TEXTS))
    assert fp32["max_score_diff"] < 1e-4
    int8 = manifest["variants"]["onnx-int8"]
    assert int8["passed"] == (int8["agreement"] >= manifest["int8_gate"])  # checked either way
    assert ("onnx-int8" in onnx_exports(exported)) == int8["passed"]


def test_onnx_and_torch_tokenize_and_predict_alike(exported: Path) -> None:
    torch_model = load_classifier(str(exported), backend="torch", threads=1)
    onnx_model = load_classifier(str(exported), backend="onnx", threads=1)
    assert (torch_model.backend, onnx_model.backend) == ("torch", "onnx")
    long = " ".join(TEXTS[:20])  # past 128 tokens: truncated alike
    batch = [*TEXTS[:30], long]
    assert onnx_model.token_lengths(batch) == torch_model.token_lengths(batch)
    a, b = torch_model.predict(batch), onnx_model.predict(batch)
    assert a.labels == b.labels and a.truncated == b.truncated == 1
    assert max(abs(x - y) for x, y in zip(a.scores, b.scores, strict=True)) < 1e-4


def test_auto_picks_the_fastest_export_that_passed(exported: Path, tiny_model_dir: Path) -> None:
    passed = onnx_exports(exported)
    expected = next((b for b in ("onnx-int8", "onnx-int8-checked") if b in passed), "onnx")
    assert choose_backend(str(exported)) == expected
    assert choose_backend(str(tiny_model_dir)) == "torch"  # no exports beside it
    with pytest.raises(ModelLoadError, match="backend 'tensorrt': use one of auto, torch, onnx, onnx-int8"):
        choose_backend(str(exported), "tensorrt")
    with pytest.raises(ModelLoadError, match="no onnx export that passed"):
        load_classifier(str(tiny_model_dir), backend="onnx")


def test_an_int8_export_below_the_gate_is_refused_deleted_and_said_by_how_much(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    model = tmp_path / "tiny-bert"
    shutil.copytree(tiny_model_dir, model)
    report = export_onnx(model, TEXTS[:100], threads=1, int8_gate=1.01)  # a gate no export can meet
    int8 = report.variants["onnx-int8"]
    assert not int8.passed and "< 101.00%" in int8.note and "short" in int8.note
    assert not (model / ONNX_DIR / "model.int8.onnx").exists()
    assert choose_backend(str(model)) == "onnx"
    assert any("onnx-int8" in line and "REFUSED" in line for line in report.lines())
    with pytest.raises(ModelLoadError, match="no onnx-int8 export that passed"):
        load_classifier(str(model), backend="onnx-int8")


def test_int8_checked_by_fp32_is_fitted_on_half_the_check_and_judged_on_the_other_half(
    exported: Path,
) -> None:
    manifest = json.loads((exported / ONNX_DIR / ONNX_MANIFEST).read_text())
    checked, int8 = manifest["variants"]["onnx-int8-checked"], manifest["variants"]["onnx-int8"]
    assert checked["rows"] == len(TEXTS) // 2  # the half the margin was not fitted on
    assert (
        checked["recheck_margin"] >= 0.02 and 0.0 <= checked["rechecked"] <= 1.0
    )  # the tiny model: all unsure
    assert checked["passed"] == (checked["agreement"] >= manifest["int8_gate"])
    kept = (exported / ONNX_DIR / "model.int8.onnx").exists()
    assert kept == (int8["passed"] or checked["passed"])  # deleted only when refused both ways
    if not checked["passed"]:
        return
    classifier = load_classifier(str(exported), backend="onnx-int8-checked", threads=1)
    reference = load_classifier(str(exported), backend="torch", threads=1).predict(TEXTS).labels
    fp32 = load_classifier(str(exported), backend="onnx", threads=1)  # torch's labels on every row
    labels = classifier.predict(TEXTS, classifier.token_lengths(TEXTS)).labels
    assert fp32.predict(TEXTS).labels == reference
    same = sum(a == b for a, b in zip(labels, reference, strict=True)) / len(TEXTS)
    assert same >= int8["agreement"] and same >= manifest["int8_gate"]


def test_the_export_writes_nothing_to_the_working_directory(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "tiny-bert"
    shutil.copytree(tiny_model_dir, model)
    elsewhere = tmp_path / "where-the-user-stands"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    import onnxruntime.quantization

    real = onnxruntime.quantization.quantize_dynamic

    def quantize_as_when_shape_inference_gives_up(*args: object, **kwargs: object) -> None:
        # what onnxruntime's symbolic shape inference does when it cannot finish (symbolic_shape_infer.py)
        Path("sym_shape_infer_temp.onnx").write_bytes(b"partial model")
        real(*args, **kwargs)

    monkeypatch.setattr(
        onnxruntime.quantization, "quantize_dynamic", quantize_as_when_shape_inference_gives_up
    )
    export_onnx(Path("..") / "tiny-bert", TEXTS[:50], threads=1)  # a model named from where the user stands
    assert Path.cwd() == elsewhere
    assert list(elsewhere.iterdir()) == []
    written = {p.name for p in (model / ONNX_DIR).iterdir()}
    assert {ONNX_MANIFEST, "model.onnx"} <= written <= {ONNX_MANIFEST, "model.onnx", "model.int8.onnx"}


NO_TORCH = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ImportError(f"{name} is not in this image")
sys.meta_path.insert(0, Refuse())
from inference.model import load_classifier
classifier = load_classifier(sys.argv[1], backend="auto", threads=1)
print(classifier.backend, classifier.predict(["a fine film", "dull"]).labels)
import inference.worker
assert "torch" not in sys.modules and "transformers" not in sys.modules
"""


def test_the_onnx_worker_needs_neither_torch_nor_transformers(exported: Path) -> None:
    """What the CPU image carries: ONNX Runtime, tokenizers, numpy; no torch, no transformers."""
    result = subprocess.run(
        [sys.executable, "-c", NO_TORCH, str(exported)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=scaled(120),
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith(f"{choose_backend(str(exported))} ")  # the export that passed, on ONNX


@pytest.mark.slow
def test_a_worker_process_gives_the_same_output_on_torch_and_onnx(
    exported: Path, sentences_parquet: Path, tmp_path: Path
) -> None:
    outputs = {}
    for backend in ("torch", "onnx"):
        out = tmp_path / backend
        command = [sys.executable, "-m", "inference.worker", "--input", str(sentences_parquet)]
        command += ["--start", "0", "--stop", "300", "--segment-id", "seg-0000", "--output-prefix", str(out)]
        command += ["--model", str(exported), "--backend", backend, "--no-notice-poll", "--threads", "1"]
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=REPO, timeout=scaled(180), check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"on the {backend} backend" in done.stderr
        rows = read_segment_output(open_store(str(out)), "seg-0000")
        outputs[backend] = sorted((row_id, label) for row_id, label, _ in rows)
    assert outputs["torch"] == outputs["onnx"] and len(outputs["onnx"]) == 300


def test_the_gpu_precision_is_bf16_where_supported_else_fp16_and_none_on_a_cpu() -> None:
    cuda = torch.device("cuda")
    assert autocast_dtype(cuda, bf16_supported=True) is torch.bfloat16
    assert autocast_dtype(cuda, bf16_supported=False) is torch.float16
    assert autocast_dtype(torch.device("cpu")) is None


@pytest.mark.slow
def test_export_onnx_through_the_cli(tiny_model_dir: Path, sentences_parquet: Path, tmp_path: Path) -> None:
    model = tmp_path / "tiny-bert"
    shutil.copytree(tiny_model_dir, model)
    assert main(["model", "export-onnx", "--model", str(model), "--texts", str(sentences_parquet)]) == 0
    assert onnx_exports(model)["onnx"].name == "model.onnx"
    assert main(["model", "export-onnx", "--model", str(tmp_path / "nothing")]) == 2


def test_without_a_dataset_the_build_checks_on_its_own_sentences(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`model build` before `data prepare`: the exports are checked on the training sentences it has."""
    from coordinator.commands.model import write_exports

    monkeypatch.setenv("SPOTBATCH_HOME", str(tmp_path / "empty-home"))  # no build/data/ here
    model = tmp_path / "tiny-bert"
    shutil.copytree(tiny_model_dir, model)
    write_exports(model, None, fallback=TEXTS[:50])
    manifest = json.loads((model / ONNX_DIR / ONNX_MANIFEST).read_text())
    assert manifest["variants"]["onnx"]["rows"] == 50
    with pytest.raises(ConfigError, match="no dataset to check the ONNX exports on"):
        write_exports(model, None)


def _copy(exported: Path, tmp_path: Path) -> Path:
    model = tmp_path / "model"
    shutil.copytree(exported, model)
    return model


def test_a_swapped_or_cut_export_is_refused_by_its_digest(exported: Path, tmp_path: Path) -> None:
    """The manifest hashed the weights, not the exports: a swapped model.onnx (a constant graph, NaN
    logits) or a truncated one was loaded as if the build had checked it."""
    model = _copy(exported, tmp_path)
    export = model / ONNX_DIR / "model.onnx"
    export.write_bytes(export.read_bytes()[: export.stat().st_size // 2])  # cut
    with pytest.raises(ModelLoadError, match=r"model.onnx: its sha256 .* is not the .* the build recorded"):
        load_classifier(str(model), backend="onnx", threads=1)


def test_a_manifest_file_outside_the_export_folder_is_refused(exported: Path, tmp_path: Path) -> None:
    model = _copy(exported, tmp_path)
    manifest_path = model / ONNX_DIR / ONNX_MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["variants"]["onnx"]["file"] = "../../../etc/hostname"
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(
        ModelLoadError, match=r"onnx's file '../../../etc/hostname' is not a file of the export"
    ):
        load_classifier(str(model), backend="onnx", threads=1)


def test_an_export_without_a_digest_is_not_offered(exported: Path, tmp_path: Path) -> None:
    model = _copy(exported, tmp_path)
    manifest_path = model / ONNX_DIR / ONNX_MANIFEST
    manifest = json.loads(manifest_path.read_text())
    for variant in manifest["variants"].values():
        variant.pop("sha256", None)
    manifest_path.write_text(json.dumps(manifest))
    assert onnx_exports(model) == {} and choose_backend(str(model)) == "torch"


@pytest.mark.slow
def test_a_model_that_scores_nan_fails_the_batch_instead_of_writing_it(
    tiny_model_dir: Path, sentences_parquet: Path, tmp_path: Path
) -> None:
    """NaN logits gave 64/64 'negative' with score NaN, exit 0."""
    from inference import torch_model

    model = tmp_path / "nan-model"
    shutil.copytree(tiny_model_dir, model)
    loaded = torch_model.load_torch_classifier(str(model), max_length=32, threads=1)
    with torch.no_grad():
        for parameter in loaded.model.classifier.parameters():
            parameter.fill_(float("nan"))
    loaded.model.save_pretrained(model)
    out = tmp_path / "out"
    command = [
        *(sys.executable, "-m", "inference.worker", "--input", str(sentences_parquet), "--start", "0"),
        *("--stop", "16", "--segment-id", "seg-0000", "--output-prefix", str(out), "--model", str(model)),
        *("--backend", "torch", "--batch-size", "8", "--no-notice-poll"),
    ]
    ran = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=scaled(300))
    assert ran.returncode != 0 and "non-finite value" in ran.stderr, ran.stderr[-2000:]
    assert not list(out.rglob("parts/*"))  # nothing of the batch was written


@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_a_config_whose_labels_do_not_name_every_output_is_refused_in_one_line(
    exported: Path, tmp_path: Path, backend: str
) -> None:
    """One label for two outputs: a KeyError in the first batch (onnx), a RuntimeError traceback (torch)."""
    model = _copy(exported, tmp_path)
    config = json.loads((model / "config.json").read_text())
    config["id2label"], config["label2id"] = {"0": "only"}, {"only": 0}
    (model / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError) as refused:
        load_classifier(str(model), backend=backend, threads=1)
    said = str(refused.value)
    assert "\n" not in said, said
    assert ("every output needs a label" in said) if backend == "onnx" else ("cannot load" in said), said


def test_labels_are_checked_against_the_outputs() -> None:
    from inference.model_labels import checked_labels

    assert checked_labels({"1": "b", "0": "a"}, outputs=2, where="c") == {0: "a", 1: "b"}
    for labels, outputs in (({"0": "a"}, 2), ({"0": "a", "2": "c"}, 2), ({}, None), ({"x": "a"}, 1)):
        with pytest.raises(ModelLoadError, match="c: id2label"):
            checked_labels(labels, outputs=outputs, where="c")
