"""`spotbatch image build|push`: the worker image, built for the instance type and pushed to the stack's ECR.

`build` picks the variant from the type (torch on CUDA for an NVIDIA GPU type, ONNX Runtime otherwise),
fills the wheelhouse, builds for linux/amd64 with Docker (where a daemon runs) or podman, and checks the
image's platform and pins (`coordinator/build/worker_image.py`). `--base-image debian` builds on a Python
3.11 base made from Debian's packages, for machines that reach no image registry.

`push` logs the engine in to the stack's registry with your credentials (an ECR authorization token:
`ecr:GetAuthorizationToken`, then the repository's push actions), pushes, and records the image's digest
in `<state dir>/image.json`, which `make apply-real` then puts in the launch templates. With `--endpoint`
(an emulator's ECR, which keeps manifests but has no registry to take layers) it puts the image's manifest
with `PutImage`; the layers stay in this machine's engine, where the simulator's machines run them.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coordinator.commands.options import Subcommands, add_target_options
from coordinator.errors import InfraError
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE, is_gpu, require_worker_type

DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")
DEBIAN = "debian"  # --base-image: the Debian-made stand-in for python:3.11-slim (`base_image.py`)


def add_parser(commands: Subcommands) -> None:
    image = commands.add_parser(
        "image", help="the worker image: build (CPU or CUDA) and push to the stack's ECR"
    )
    actions = image.add_subparsers(dest="image_command", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="build the variant the instance type needs, for linux/amd64")
    add_target_options(
        build, instance_type=f"the type it is for (default {DEFAULT_INSTANCE_TYPE})", region=None
    )
    build.add_argument(
        "--base-image",
        default="python:3.11-slim",
        help=f"the base (default python:3.11-slim; '{DEBIAN}': one made here from Debian's packages)",
    )
    build.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help="an image label")
    build.add_argument("--tag", help="the local image's name (default spotbatch-worker:<variant>)")
    build.set_defaults(handler=build_command)
    push = actions.add_parser("push", help="push to the stack's repository; record the digest in image.json")
    add_target_options(
        push,
        instance_type="default: the stack's (outputs.json)",
        default_type=None,
        region=None,
        endpoint="an emulator's URL (loopback): its ECR takes the manifest only",
    )
    push.add_argument("--state-dir", type=Path, help="default runs/infra/aws")
    push.add_argument("--tag", help="the local image to push (default spotbatch-worker:<variant>)")
    push.set_defaults(handler=push_command)


def variant_of(instance_type: str) -> str:
    return "cuda" if is_gpu(instance_type) else "cpu"


def build_command(args: argparse.Namespace) -> int:
    from coordinator.build.base_image import ensure_debian_base
    from coordinator.build.container_engine import find_engine
    from coordinator.build.worker_image import build_worker_image
    from coordinator.paths import REPO_ROOT

    variant = variant_of(require_worker_type(args.instance_type))
    engine = find_engine()
    base = ensure_debian_base(engine) if args.base_image == DEBIAN else args.base_image
    labels = dict(label.partition("=")[::2] for label in args.label)
    runtime = "torch on CUDA" if variant == "cuda" else "ONNX Runtime"
    print(f"{engine.name} build ({variant}: {runtime} for {args.instance_type}, from {base})", flush=True)
    built = build_worker_image(
        engine, variant=variant, base_image=base, context=REPO_ROOT, labels=labels, tag=args.tag
    )
    pins = ", ".join(f"{name} {version}" for name, version in sorted(built.versions.items()))
    print(
        f"built {built.tag} ({built.image_id[:19]}): linux/amd64, {built.size_bytes / 1e6:.0f} MB, "
        f"{built.seconds:.0f} s; pins import: {pins}"
    )
    return 0


def push_command(args: argparse.Namespace) -> int:
    from coordinator.build.container_engine import find_engine
    from coordinator.build.worker_image import local_tag, verify_image
    from coordinator.paths import REPO_ROOT, runs_dir
    from coordinator.stack.outputs import read_outputs
    from coordinator.stack.target import AwsTarget

    state_dir = args.state_dir or runs_dir() / "infra" / "aws"
    outputs = read_outputs(state_dir / "outputs.json")
    repository = str(outputs["repository_url"])
    target = AwsTarget.chosen(str(outputs["region"]), args.endpoint)
    variant = variant_of(args.instance_type or str(outputs.get("instance_type") or DEFAULT_INSTANCE_TYPE))
    engine = find_engine()
    built = verify_image(engine, args.tag or local_tag(variant), variant=variant, root=REPO_ROOT)  # first
    tag = f"{variant}-{built.image_id.removeprefix('sha256:')[:12]}"
    ecr = target.client("ecr")
    if target.is_emulator:
        digest = _put_manifest(ecr, engine, built.tag, repository, tag)
    else:
        digest = _push(ecr, engine, built.tag, f"{repository}:{tag}")
    reference = f"{repository}@{digest}"
    record = {
        "reference": reference,
        "variant": variant,
        "tag": f"{repository}:{tag}",
        "image_id": built.image_id,
        "pushed_at": datetime.now(UTC).isoformat(),
    }
    (state_dir / "image.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(
        f"pushed {repository}:{tag}\nimage {reference}\n"
        f"recorded in {state_dir / 'image.json'}; `make apply-real` puts it in the launch templates"
    )
    return 0


def _push(ecr: Any, engine: Any, local: str, remote: str) -> str:
    """`<engine> login` with an ECR token, tag, push; the pushed manifest's digest."""
    registry = remote.split("/", 1)[0]
    token = ecr.get_authorization_token()["authorizationData"][0]["authorizationToken"]
    user, _, password = base64.b64decode(token).decode().partition(":")
    engine.call("login", "--username", user, "--password-stdin", registry, stdin=password)
    engine.call("tag", local, remote)
    if engine.name == "podman":
        with tempfile.TemporaryDirectory() as tmp:
            digest_file = Path(tmp) / "digest"
            engine.call("push", "--digestfile", str(digest_file), remote)
            return digest_file.read_text(encoding="utf-8").strip()
    pushed = DIGEST.search(engine.call("push", remote))
    if pushed is None:
        raise InfraError(f"docker push {remote}: no digest in its output")
    return pushed.group(1)


def _put_manifest(ecr: Any, engine: Any, local: str, repository_url: str, tag: str) -> str:
    """The image's manifest into an emulator's ECR (`PutImage`); its digest."""
    from botocore.exceptions import ClientError

    from coordinator.build.worker_image import OCI_MANIFEST, registry_manifest

    manifest, digest = registry_manifest(engine, local)
    try:
        ecr.put_image(
            repositoryName=repository_url.split("/", 1)[1],
            imageManifest=manifest,
            imageManifestMediaType=OCI_MANIFEST,
            imageTag=tag,
            imageDigest=digest,
        )
    except ClientError as error:  # immutable tags: the same image pushed again is fine
        if error.response["Error"]["Code"] != "ImageAlreadyExistsException":
            raise
    return digest
