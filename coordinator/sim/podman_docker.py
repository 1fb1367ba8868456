"""Simulator only, container mode: `docker` on a simulated instance's PATH, a thin shim over podman.

The boot script Terraform rendered calls docker three ways; this runs each with podman and the real worker
image, translating only what podman or the emulator lacks:

    docker info           `podman info` (the boot script waits for the daemon with it)
    docker pull IMAGE     what Docker and the ECR credential helper do: the instance role's credentials
                          from the metadata service, GetAuthorizationToken, the manifest by digest
                          (BatchGetImage). The emulator's ECR keeps manifests, not layers: the layers are
                          this host's engine's, found by the manifest's config digest (the image id), as a
                          warm cache would have them
    docker run ... IMAGE  `podman run` of that image with the same options, except two podman lacks:
                          --log-driver awslogs (the output shipped to CloudWatch Logs with the role's
                          credentials, as Docker's driver does: `awslogs.py`) and --gpus (CDI devices)

The container is named after the machine (`$SPOTBATCH_SIM_CONTAINER`) and labelled with the runtime, so the
instance runtime can stop it as a power-off would and sweep what a killed shim left; its exit code goes to
`$HOME/container.exit`, its output to `$SPOTBATCH_SIM_WORKER_LOG` as well.

Usage (what the runtime writes into a container-mode machine's bin folder)::

    #!/bin/sh
    exec /path/to/python -m coordinator.sim.podman_docker "$@"
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from coordinator.errors import StandinError
from coordinator.sim.standins import DOCKER_EXIT_ERROR, FLAGS_ALONE, FLAGS_WITH_VALUE

CONTAINER_ENV = "SPOTBATCH_SIM_CONTAINER"  # the container's name
LABEL_ENV = "SPOTBATCH_SIM_LABEL"  # key=value on every container of one runtime
WORKER_LOG_ENV = "SPOTBATCH_SIM_WORKER_LOG"
EXIT_FILE = "container.exit"  # in $HOME: the container's exit code, for the runtime
IMAGES_FILE = ".docker/spotbatch-images.json"  # in $HOME: what `docker pull` fetched, reference -> image id
MANIFEST_TYPES = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
]


def _podman(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], text=True, capture_output=True, check=False, **options)


def _home() -> Path:
    return Path(os.environ.get("HOME", "."))


def _session() -> Any:
    """The instance role's session: no keys of our own, so botocore asks the metadata service at
    `$AWS_EC2_METADATA_SERVICE_ENDPOINT` (and the emulator at `$AWS_ENDPOINT_URL`), as on EC2. The
    credential helper's SDK asks the metadata service up to 3 times; botocore's default is once, for 1 s,
    which a busy host misses ("Unable to locate credentials")."""
    import boto3

    os.environ.setdefault("AWS_METADATA_SERVICE_NUM_ATTEMPTS", "3")
    os.environ.setdefault("AWS_METADATA_SERVICE_TIMEOUT", "5")

    return boto3.session.Session()


def pull(image: str) -> str:
    """The image id (its config digest) of an ECR image reference, fetched with the role's credentials."""
    registry, _, rest = image.partition("/")
    if ".dkr.ecr." not in registry:
        raise StandinError(f"pull {image}: only ECR images can be pulled here")
    region = registry.split(".dkr.ecr.")[1].split(".")[0]
    repository, at, reference = rest.partition("@")
    if not at:
        repository, _, tag = rest.partition(":")
        image_id = {"imageTag": tag or "latest"}
    else:
        image_id = {"imageDigest": reference}
    try:
        ecr = _session().client("ecr", region_name=region)
        ecr.get_authorization_token()  # the credential helper's login
        images = ecr.batch_get_image(
            repositoryName=repository, imageIds=[image_id], acceptedMediaTypes=MANIFEST_TYPES
        )["images"]
    except Exception as error:
        raise StandinError(f"Error response from daemon: pull access denied for {image}: {error}") from None
    if not images:
        raise StandinError(f"Error response from daemon: manifest for {image} not found")
    config = str(json.loads(images[0]["imageManifest"])["config"]["digest"])
    if _podman("image", "exists", config.removeprefix("sha256:")).returncode != 0:
        raise StandinError(
            f"Error response from daemon: {image}: its layers (config {config[:19]}) are not in this host's "
            "image store: the emulator's ECR keeps manifests only; build the image here first"
        )
    pulled = _home() / IMAGES_FILE
    known = json.loads(pulled.read_text()) if pulled.is_file() else {}
    pulled.parent.mkdir(parents=True, exist_ok=True)
    pulled.write_text(json.dumps({**known, image: config}))
    return config


def translate_run(args: list[str]) -> tuple[list[str], str, list[str], dict[str, str]]:
    """`docker run` arguments -> podman's options, the image, its command, and the awslogs options (empty
    without `--log-driver awslogs`)."""
    options: list[str] = []
    logs: dict[str, str] = {}
    driver = ""
    position = 0
    while position < len(args) and args[position].startswith("-"):
        flag, has_inline, inline = args[position].partition("=")
        if flag in FLAGS_ALONE:
            options.append(args[position])
            position += 1
            continue
        if flag not in FLAGS_WITH_VALUE:
            raise StandinError(f"docker run: the shim does not know {flag}")
        value = inline if has_inline else args[position + 1] if position + 1 < len(args) else ""
        position += 1 if has_inline else 2
        if flag == "--log-driver":
            driver = value
        elif flag == "--log-opt":
            key, _, option = value.partition("=")
            logs[key] = option
        elif flag == "--gpus":  # podman has no --gpus: the NVIDIA container toolkit's CDI devices
            options += ["--device", "nvidia.com/gpu=all"]
        else:
            options += [flag, value]
    if position >= len(args):
        raise StandinError("docker run: no image given")
    awslogs = logs if driver == "awslogs" else {}
    if driver not in ("", "awslogs"):
        options += ["--log-driver", driver]
    return options, args[position], args[position + 1 :], awslogs


def run(args: list[str]) -> int:
    options, image, command, awslogs = translate_run(args)
    pulled = _home() / IMAGES_FILE
    known = json.loads(pulled.read_text()) if pulled.is_file() else {}
    image_id = known.get(image) or pull(image)  # docker run pulls what it does not have
    name, label = os.environ.get(CONTAINER_ENV, ""), os.environ.get(LABEL_ENV, "")
    named = [*(["--name", name] if name else []), *(["--label", label] if label else [])]
    log_path = Path(os.environ.get(WORKER_LOG_ENV) or _home() / "container.log")
    shipper = _shipper(awslogs, log_path)
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            ["podman", "run", *named, *options, image_id.removeprefix("sha256:"), *command],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        for number in (signal.SIGTERM, signal.SIGINT):  # to podman, which passes them to the container
            signal.signal(number, lambda received, _frame: child.send_signal(received))
        if shipper is not None:
            shipper.start()
        code = child.wait()
    if shipper is not None:
        shipper.close()
    (_home() / EXIT_FILE).write_text(str(code))
    return code


def _shipper(options: dict[str, str], path: Path) -> Any:
    """Docker's awslogs driver: the output to CloudWatch Logs with the instance role's credentials."""
    if not options:
        return None
    from coordinator.sim.awslogs import LogShipper

    logs = _session().client("logs", region_name=options.get("awslogs-region"))
    return LogShipper(logs, group=options["awslogs-group"], stream=options["awslogs-stream"], path=path)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["info"]:
            return _podman("info", "--format", "{{.Host.Arch}}").returncode
        if args[:1] == ["pull"] and len(args) == 2:
            print(f"Status: Downloaded newer image for {args[1]} ({pull(args[1])[:19]})", flush=True)
            return 0
        if args[:1] == ["run"]:
            return run(args[1:])
        raise StandinError(f"docker {' '.join(args[:1])}: the shim runs info, pull and run")
    except (StandinError, OSError, json.JSONDecodeError) as error:
        print(f"docker: {error}", file=sys.stderr)
        return DOCKER_EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
