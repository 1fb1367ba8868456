"""The worker image: built from docker/Dockerfile for linux/amd64, checked before it may be pushed.

`build_worker_image` fills the wheelhouse (`wheelhouse.py`), builds with the engine (`container_engine.py`)
and then checks what was built, as a push would need it: the platform is linux/amd64 (an arm64 laptop's
native build would crash on every instance with "exec format error"), and every pinned package imports
inside the image at a version its pin allows. `registry_manifest` is the image as a registry keeps it (a
manifest naming its config and layers, by digest), for a registry that takes manifests only: an emulator's
ECR.

Usage::

    built = build_worker_image(engine, variant="cpu", base_image="python:3.11-slim", context=REPO_ROOT)
    built.tag, built.image_id, built.size_bytes
    manifest, digest = registry_manifest(engine, built.tag)
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet

from coordinator.build.container_engine import Engine
from coordinator.build.wheelhouse import fill_wheelhouse, name_of, requirements
from coordinator.errors import ConfigError, InfraError
from inference.model import BACKENDS as MODEL_BACKENDS

LOCAL_NAME = "spotbatch-worker"
MODEL_DIR = Path("build") / "models" / "minilm-sentiment"  # what the Dockerfile copies into the image
WHEELHOUSE = Path("build") / "wheelhouse"
ARCHITECTURE, OS = "amd64", "linux"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"  # uncompressed: as `save` writes them
CHECK_TIMEOUT_SECONDS = 300.0  # importing the pins under emulation (an arm64 host) is slow
IMAGE_MODEL_DIR = "/models/minilm-sentiment"  # where the Dockerfile copies the model
# what each variant runs: the cpu image ONNX Runtime (any of the model's exports), the cuda image torch
VARIANT_BACKENDS = {"cpu": tuple(b for b in MODEL_BACKENDS if b.startswith("onnx")), "cuda": ("torch",)}
# run inside the image, as its user: every pin's installed version and whether it imports; what under the
# model folder that user cannot read; the backend the worker will choose there
CHECK_SCRIPT = """
import importlib, importlib.metadata, json, os, sys
found, unreadable = {}, []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name.replace("-", "_"))
        found[name] = importlib.metadata.version(name)
    except Exception as error:
        found[name] = "error: " + type(error).__name__ + ": " + str(error)[:200]
for top, folders, files in os.walk(sys.argv[1], onerror=lambda error: unreadable.append(error.filename)):
    unreadable += [p for p in (os.path.join(top, f) for f in files) if not os.access(p, os.R_OK)]
from inference.model import choose_backend
backend = choose_backend(sys.argv[1]) if os.path.isdir(sys.argv[1]) else "no model folder"
print(json.dumps({"versions": found, "unreadable": sorted(unreadable), "backend": backend}))
"""


@dataclass(frozen=True, slots=True)
class BuiltImage:
    tag: str
    variant: str
    image_id: str  # sha256:..., the digest of its config
    size_bytes: int
    versions: dict[str, str]  # each pinned package's version inside the image
    seconds: float  # the build, wheels included


def local_tag(variant: str) -> str:
    return f"{LOCAL_NAME}:{variant}"


def tree_digest(root: Path, suffix: str = "") -> str:
    """SHA-256 over a folder's files (their paths and contents, sorted; `suffix`: only those files): what
    the Dockerfile's bind-mounted copies are cached by."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob(f"*{suffix}") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def build_worker_image(
    engine: Engine,
    *,
    variant: str,
    base_image: str,
    context: Path,
    labels: dict[str, str] | None = None,
    tag: str | None = None,
) -> BuiltImage:
    """Wheels, `<engine> build --platform linux/amd64`, then `verify_image`."""
    if not (context / MODEL_DIR / "config.json").is_file():
        raise ConfigError(f"{context / MODEL_DIR}: no model to put in the image; run `make model` first")
    started = time.monotonic()
    wheels = fill_wheelhouse(variant, context / WHEELHOUSE, context)
    print(f"{len(wheels)} wheels in {context / WHEELHOUSE} (linux/amd64, CPython 3.11)", flush=True)
    tag = tag or local_tag(variant)
    label_args = [arg for key, value in (labels or {}).items() for arg in ("--label", f"{key}={value}")]
    engine.streamed(
        "build",
        *engine.build_options,
        "-f",
        str(context / "docker" / "Dockerfile"),
        "--build-arg",
        f"VARIANT={variant}",
        "--build-arg",
        f"BASE_IMAGE={base_image}",
        "--build-arg",
        f"MODEL_DIGEST={tree_digest(context / MODEL_DIR)}",
        "--build-arg",
        f"CODE_DIGEST={tree_digest(context / 'inference', suffix='.py')}",
        *label_args,
        "-t",
        tag,
        str(context),
    )
    return verify_image(engine, tag, variant=variant, root=context, started=started)


def verify_image(
    engine: Engine, tag: str, *, variant: str, root: Path, started: float | None = None
) -> BuiltImage:
    """The image's platform is linux/amd64, every pin imports at an allowed version, and its user can read the
    whole model and would run it on the variant's backend; `InfraError` naming what is wrong otherwise."""
    fields = engine.call("image", "inspect", "--format", "{{.Architecture}} {{.Os}} {{.Id}} {{.Size}}", tag)
    architecture, system, image_id, size = fields.split()
    if (architecture, system) != (ARCHITECTURE, OS):
        raise InfraError(
            f"{tag} is built for {system}/{architecture}; the instances run {OS}/{ARCHITECTURE}: "
            "build with --platform linux/amd64 (spotbatch image build does)"
        )
    wanted = requirements(variant, root)
    names = [name_of(line) for line in wanted]
    output = engine.call(
        "run",
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "python",
        tag,
        "-c",
        CHECK_SCRIPT,
        IMAGE_MODEL_DIR,
        *names,
        timeout=CHECK_TIMEOUT_SECONDS,
    )
    report = json.loads(output.strip().splitlines()[-1])
    versions: dict[str, str] = report["versions"]
    _check_model(tag, variant, report["unreadable"], report["backend"])
    problems = []
    for line, name in zip(wanted, names, strict=True):
        found = versions.get(name, "missing")
        allowed = SpecifierSet(line[len(name) :].strip())
        if found.startswith("error") or found == "missing" or found.split("+")[0] not in allowed:
            problems.append(f"{name}: {found} (pinned {line})")
    if problems:
        raise InfraError(f"{tag}: its pins do not import as pinned: {'; '.join(problems)}")
    digest = image_id if image_id.startswith("sha256:") else f"sha256:{image_id}"
    seconds = time.monotonic() - started if started is not None else 0.0
    return BuiltImage(tag, variant, digest, int(size), versions, seconds)


def _check_model(tag: str, variant: str, unreadable: list[str], backend: str) -> None:
    if unreadable:
        more = f" and {len(unreadable) - 3} more" if len(unreadable) > 3 else ""
        shown = ", ".join(unreadable[:3]) + more
        raise InfraError(f"{tag}: the worker's user cannot read {shown}")
    runs = VARIANT_BACKENDS[variant]
    if backend not in runs:
        raise InfraError(
            f"{tag}: the worker would run the model on {backend}, the {variant} image runs "
            f"{' or '.join(runs)} (a cpu image needs the model's ONNX exports: `make model`)"
        )


def registry_manifest(engine: Engine, tag: str) -> tuple[str, str]:
    """The image's OCI manifest (config and layers by digest, as `<engine> save` writes them) and the
    manifest's own digest: what a registry stores and an image reference `repo@sha256:...` names."""
    with tempfile.TemporaryDirectory(prefix="image-") as tmp:
        archive = Path(tmp) / "image.tar"
        engine.call("save", "-o", str(archive), tag)
        with tarfile.open(archive) as tar:
            index = json.loads(_member(tar, "manifest.json"))[0]
            config = _member(tar, index["Config"])
            sizes = [_size(tar, layer) for layer in index["Layers"]]
    diff_ids = json.loads(config)["rootfs"]["diff_ids"]
    if len(diff_ids) != len(sizes):
        raise InfraError(f"{tag}: {len(sizes)} layers saved, {len(diff_ids)} in its config")
    document = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": _digest(config), "size": len(config)},
        "layers": [
            {"mediaType": OCI_LAYER, "digest": digest, "size": size}
            for digest, size in zip(diff_ids, sizes, strict=True)
        ],
    }
    text = json.dumps(document, separators=(",", ":"))
    return text, _digest(text.encode())


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    handle = tar.extractfile(name)
    if handle is None:
        raise InfraError(f"the saved image has no file {name}")
    return handle.read()


def _size(tar: tarfile.TarFile, name: str) -> int:
    return tar.getmember(name).size


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
