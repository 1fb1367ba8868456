"""`spotbatch image build|push`: the worker image, built for the instance type and pushed to the stack's ECR.

`build` picks the variant from the type (torch on CUDA for an NVIDIA GPU type, ONNX Runtime otherwise) and
runs `docker build`. `push` logs Docker in to the stack's registry with your credentials (an ECR authorization
token: `ecr:GetAuthorizationToken`, then the repository's push actions), pushes, and records the image's
digest in `<state dir>/image.json`, which `make apply-real` then puts in the launch templates. Both need a
Docker engine; without one they say so and exit 2.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from coordinator.commands.options import Subcommands
from coordinator.errors import ConfigError, InfraError
from coordinator.stack.defaults import DEFAULT_INSTANCE_TYPE, is_gpu

LOCAL_NAME = "spotbatch-worker"
DIGEST = re.compile(r"digest: (sha256:[0-9a-f]{64})")


def add_parser(commands: Subcommands) -> None:
    image = commands.add_parser(
        "image", help="the worker image: build (CPU or CUDA) and push to the stack's ECR"
    )
    actions = image.add_subparsers(dest="image_command", required=True, metavar="ACTION")
    build = actions.add_parser("build", help="docker build of the variant the instance type needs")
    build.add_argument("--instance-type", default=DEFAULT_INSTANCE_TYPE)
    build.set_defaults(handler=build_command)
    push = actions.add_parser("push", help="push to the stack's repository; record the digest in image.json")
    push.add_argument("--instance-type", help="default: the stack's (outputs.json)")
    push.add_argument("--state-dir", type=Path, help="default runs/infra/aws")
    push.set_defaults(handler=push_command)


def variant_of(instance_type: str) -> str:
    return "cuda" if is_gpu(instance_type) else "cpu"


def docker(*args: str, stdin: str | None = None) -> str:
    binary = shutil.which("docker")
    if binary is None:
        raise ConfigError("docker is not on PATH: building and pushing the worker image need a Docker engine")
    result = subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-10:])
        raise InfraError(f"docker {args[0]} failed:\n{tail}")
    return result.stdout


def build_command(args: argparse.Namespace) -> int:
    from coordinator.paths import REPO_ROOT

    variant = variant_of(args.instance_type)
    tag = f"{LOCAL_NAME}:{variant}"
    runtime = "torch on CUDA" if variant == "cuda" else "ONNX Runtime"
    print(f"docker build ({variant}: {runtime} for {args.instance_type}) -> {tag}", flush=True)
    docker(
        "build",
        "-f",
        str(REPO_ROOT / "docker" / "Dockerfile"),
        "--build-arg",
        f"VARIANT={variant}",
        "-t",
        tag,
        str(REPO_ROOT),
    )
    size = docker("image", "inspect", "--format", "{{.Size}}", tag).strip()
    print(f"built {tag}: {int(size) / 1e6:.0f} MB uncompressed")
    return 0


def push_command(args: argparse.Namespace) -> int:
    from coordinator.paths import runs_dir
    from coordinator.stack.outputs import read_outputs
    from coordinator.stack.target import AwsTarget

    state_dir = args.state_dir or runs_dir() / "infra" / "aws"
    outputs = read_outputs(state_dir / "outputs.json")
    repository = str(outputs["repository_url"])
    registry = repository.split("/", 1)[0]
    ecr = AwsTarget.real(str(outputs["region"])).client("ecr")
    token = ecr.get_authorization_token()["authorizationData"][0]["authorizationToken"]
    user, _, password = base64.b64decode(token).decode().partition(":")
    docker("login", "--username", user, "--password-stdin", registry, stdin=password)
    variant = variant_of(args.instance_type or str(outputs.get("instance_type") or DEFAULT_INSTANCE_TYPE))
    image_id = docker("image", "inspect", "--format", "{{.Id}}", f"{LOCAL_NAME}:{variant}").strip()
    remote = f"{repository}:{variant}-{image_id.removeprefix('sha256:')[:12]}"
    docker("tag", f"{LOCAL_NAME}:{variant}", remote)
    pushed = DIGEST.search(docker("push", remote))
    if pushed is None:
        raise InfraError(f"docker push {remote}: no digest in its output")
    reference = f"{repository}@{pushed.group(1)}"
    record = {
        "reference": reference,
        "variant": variant,
        "tag": remote,
        "pushed_at": datetime.now(UTC).isoformat(),
    }
    (state_dir / "image.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(
        f"pushed {remote}\nimage {reference}\n"
        f"recorded in {state_dir / 'image.json'}; `make apply-real` puts it in the launch templates"
    )
    return 0
