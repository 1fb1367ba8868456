"""Simulator only: the worker image pushed to the stack's ECR repository, as `make image-push` would.

This machine has no Docker engine, so the simulator cannot build the image's layers. It pushes what a
registry keeps of an image and what the launch templates and the boot script use: a manifest (Docker image
manifest v2, schema 2) whose config blob carries the Dockerfile's environment and entrypoint and the path
of the model inside the image, named by its sha256 digest like any pushed image. The simulated instances'
`docker pull` fetches that manifest from ECR with the instance role's credentials, and `docker run` reads
from it where the model lives in the image (`IMAGE_MODEL_DIR`, mapped to the model built on this machine).

Usage::

    reference = publish_image(ecr, outputs["repository_url"])   # <repository url>@sha256:<digest>
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from botocore.exceptions import ClientError

from coordinator.build.worker_image import IMAGE_MODEL_DIR

# The image's ENV lines (a test holds them, and the model's place, to docker/Dockerfile)
IMAGE_ENV = {
    "PYTHONUNBUFFERED": "1",
    "PIP_NO_CACHE_DIR": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "HF_HUB_OFFLINE": "1",
    "AWS_METADATA_SERVICE_TIMEOUT": "5",
    "AWS_METADATA_SERVICE_NUM_ATTEMPTS": "3",
}
SIMULATED_TAG = "simulated"
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG_TYPE = "application/vnd.docker.container.image.v1+json"


def image_config() -> dict[str, Any]:
    return {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Env": [f"{k}={v}" for k, v in sorted(IMAGE_ENV.items())],
            "Entrypoint": ["/usr/local/bin/spotbatch-entrypoint"],
            "User": "worker",
            "Labels": {"spotbatch.model": IMAGE_MODEL_DIR, "spotbatch.entrypoint": "inference.worker"},
        },
        "rootfs": {"type": "layers", "diff_ids": []},
    }


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def manifest() -> str:
    config = json.dumps(image_config(), sort_keys=True, separators=(",", ":")).encode()
    document = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "size": len(config), "digest": digest_of(config)},
        "layers": [],
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def image_reference(repository_url: str) -> str:
    """`<url>@<digest>` of the simulated image in a repository: known before the push (the manifest is
    fixed), so the launch templates can name it in the stack's first apply."""
    return f"{repository_url}@{digest_of(manifest().encode())}"


def publish_image(ecr: Any, repository_url: str, tag: str = SIMULATED_TAG) -> str:
    """Push the simulated image's manifest (again: the same digest) and return `<url>@<digest>`."""
    repository = repository_url.split("/", 1)[1]
    text = manifest()
    digest = digest_of(text.encode())
    try:
        ecr.put_image(
            repositoryName=repository,
            imageManifest=text,
            imageManifestMediaType=MANIFEST_TYPE,
            imageTag=tag,
            imageDigest=digest,
        )
    except ClientError as error:  # immutable tags: the same image pushed before is fine
        if error.response["Error"]["Code"] != "ImageAlreadyExistsException":
            raise
    return image_reference(repository_url)
