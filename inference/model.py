"""A text classifier from a model directory, on the backend that runs it fastest here.

Backends (`--backend` of the worker):

    torch      transformers + torch (`torch_model.py`): the reference; the only one on a GPU, where it runs
               under fp16/bf16 autocast with pinned host memory
    onnx       the ONNX export beside the model (`<model>/onnx/model.onnx`, fp32, fused), run by ONNX Runtime
               (`onnx_model.py`): same labels as torch on every sentence of the build's check
    onnx-int8  the dynamically quantised export (`model.int8.onnx`), offered only if it passed the build's
               agreement gate (`coordinator/build/onnx_export.py`)
    onnx-int8-checked
               int8 on every row, fp32 again on the rows whose top two classes int8 finds closer than the
               build's margin (`checked_model.py`): int8's speed with fp32's labels, offered if the build's
               check of it passed
    auto       (default) on a CPU: the fastest the build wrote and passed (int8, else int8-checked, else
               fp32) if ONNX Runtime is installed; else torch. On a GPU: torch.

The worker never exports at start-up: the export is a build step (`spotbatch model build` or
`spotbatch model export-onnx`). torch is imported only by the torch backend, so an image that carries ONNX
Runtime alone (a CPU worker image) runs the onnx backends without it.

Usage::

    classifier = load_classifier("build/models/minilm-sentiment", backend="auto", threads=2)
    lengths = classifier.token_lengths(texts)
    result = classifier.predict(texts, lengths)           # labels and scores, input order
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
from pathlib import Path

from inference.classifier import DEFAULT_MAX_LENGTH, Classifier
from inference.errors import ModelLoadError

THREADS_ENV = "SPOTBATCH_TORCH_THREADS"
BACKENDS = ("auto", "torch", "onnx", "onnx-int8", "onnx-int8-checked")
ONNX_DIR = "onnx"  # beside config.json: the build's exports and their manifest
ONNX_MANIFEST = "manifest.json"
ONNX_FILES = {"onnx": "model.onnx", "onnx-int8": "model.int8.onnx"}

log = logging.getLogger(__name__)


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_to_use(threads: int | None = None) -> int:
    """Intra-op threads: the explicit value, else $SPOTBATCH_TORCH_THREADS, else every CPU we may use."""
    return threads or int(os.environ.get(THREADS_ENV, "0") or 0) or usable_cpus()


def onnx_manifest(model_dir: Path) -> dict[str, dict[str, object]]:
    """The build's variants by backend, as its manifest records them (none without a manifest)."""
    try:
        manifest = json.loads((model_dir / ONNX_DIR / ONNX_MANIFEST).read_text(encoding="utf-8"))
        return {str(k): dict(v) for k, v in manifest.get("variants", {}).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def onnx_exports(model_dir: Path) -> dict[str, Path]:
    """The exports the build wrote, passed and hashed, by backend name (the checked one: its int8 file).
    A manifest entry naming a file outside the export folder is refused; one without a digest (a build
    before digests) is not offered: `auto` then runs torch, and `make model` writes them again."""
    found, folder = {}, (model_dir / ONNX_DIR).resolve()
    for backend, entry in onnx_manifest(model_dir).items():
        path = (folder / str(entry.get("file", ""))).resolve()
        if not path.is_relative_to(folder) or path == folder:
            raise ModelLoadError(
                f"{model_dir / ONNX_DIR / ONNX_MANIFEST}: {backend}'s file {entry.get('file')!r} "
                "is not a file of the export folder"
            )
        if not entry.get("sha256"):
            log.warning(
                "%s: the %s export has no digest in the manifest: not used (rebuild it)", model_dir, backend
            )
        elif entry.get("passed") and path.is_file():
            found[backend] = path
    return found


def verified_export(model_dir: Path, backend: str, path: Path) -> Path:
    """`path`, once its bytes match the digest the build recorded (a swapped or truncated export does not)."""
    expected = onnx_manifest(model_dir).get(backend, {}).get("sha256")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise ModelLoadError(
            f"{path}: its sha256 {digest.hexdigest()[:16]}... is not the {str(expected)[:16]}... the build "
            "recorded: the export was changed or cut; rebuild it (make model)"
        )
    return path


def choose_backend(source: str, backend: str = "auto") -> str:
    """The backend `load_classifier` will use for `source` (see the module docstring)."""
    return _choose(backend, onnx_exports(Path(source)))


def _choose(backend: str, exports: dict[str, Path]) -> str:
    if backend not in BACKENDS:
        raise ModelLoadError(f"backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if backend != "auto":
        return backend
    if not exports or importlib.util.find_spec("onnxruntime") is None or _gpu_present():
        return "torch"
    return next(b for b in ("onnx-int8", "onnx-int8-checked", "onnx") if b in exports or b == "onnx")


def _gpu_present() -> bool:
    """An NVIDIA GPU this process can use (`docker run --gpus all` exposes its device files), found without
    importing torch: a CPU worker on the onnx backend never loads it."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


def load_classifier(
    source: str, *, backend: str = "auto", max_length: int = DEFAULT_MAX_LENGTH, threads: int | None = None
) -> Classifier:
    """Load from a local directory (written by `save_pretrained`) or, for torch, a hub name."""
    exports = onnx_exports(Path(source))  # the manifest, read once
    chosen = _choose(backend, exports)
    if chosen == "torch":
        from inference.torch_model import load_torch_classifier

        return load_torch_classifier(source, max_length=max_length, threads=threads_to_use(threads))
    if chosen not in exports:
        raise ModelLoadError(
            f"{source}: no {chosen} export that passed the build's agreement check (run `spotbatch model "
            "export-onnx`, or use --backend torch)"
        )
    from inference.onnx_model import load_onnx_classifier

    count = threads_to_use(threads)
    if chosen == "onnx-int8-checked":
        return load_checked(Path(source), exports, max_length=max_length, threads=count)
    path = verified_export(Path(source), chosen, exports[chosen])
    return load_onnx_classifier(Path(source), path, backend=chosen, max_length=max_length, threads=count)


def load_checked(model_dir: Path, exports: dict[str, Path], *, max_length: int, threads: int) -> Classifier:
    """int8 with fp32 rechecks at the margin the build recorded (`checked_model.py`)."""
    from inference.checked_model import BACKEND, CheckedClassifier
    from inference.onnx_model import load_onnx_classifier

    margin = onnx_manifest(model_dir).get(BACKEND, {}).get("recheck_margin")
    if "onnx" not in exports or BACKEND not in exports or not isinstance(margin, float):
        raise ModelLoadError(f"{model_dir}: the {BACKEND} variant needs both exports and the build's margin")
    # two sessions take turns on the same cores: neither may spin while the other runs
    fast = load_onnx_classifier(
        model_dir,
        verified_export(model_dir, BACKEND, exports[BACKEND]),
        backend="onnx-int8",
        max_length=max_length,
        threads=threads,
        spinning=False,
    )
    exact = load_onnx_classifier(
        model_dir,
        verified_export(model_dir, "onnx", exports["onnx"]),
        backend="onnx",
        max_length=max_length,
        threads=threads,
        spinning=False,
    )
    return CheckedClassifier(fast, exact, recheck_margin=margin)
