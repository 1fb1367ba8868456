"""Defaults of the stack's variables that the Python side uses too (a test holds them to variables.tf).

`c7i.xlarge`: 4 vCPUs of a current Intel generation and the CPU image, priced per region and zone in the
price table; a GPU type (`g5.xlarge`, `g4dn.xlarge`) gets the GPU AMI and the CUDA image.
"""

from __future__ import annotations

import re

from coordinator.errors import ConfigError

DEFAULT_INSTANCE_TYPE = "c7i.xlarge"
DEFAULT_MAX_LIFETIME_SECONDS = 21_600  # 6 h: the default job takes minutes; a worker alive this long is lost
DEFAULT_STACK_NAME = "spotbatch"
# NVIDIA GPU families: the GPU AMI, the CUDA image, `docker run --gpus all` (the stack's local.gpu_families)
GPU_FAMILIES = ("g4dn", "g5", "g5g", "g6", "g6e", "gr6", "p3", "p3dn", "p4d", "p4de", "p5", "p5e")


def is_gpu(instance_type: str) -> bool:
    return instance_type.split(".")[0] in GPU_FAMILIES


# V100 (sm_70): torch 2.13's CUDA 12.8 wheels carry no sm_70 kernels (pytorch/pytorch#172352)
VOLTA_FAMILIES = ("p3", "p3dn")
NEURON_FAMILIES = ("inf1", "inf2", "trn1", "trn1n", "trn2")  # the Neuron runtime is not in the image
GRAVITON = re.compile(r"^(a1|[a-z]+[0-9]+[a-z]*g[a-z]*)$")  # c7g, m6gd, c7gn, g5g, t4g, x2gd, im4gn...


def unsupported_reason(instance_type: str) -> str | None:
    """Why the worker image cannot run on `instance_type`, or None when it can (the stack's variables.tf
    refuses the same types)."""
    family = instance_type.split(".")[0]
    if family in VOLTA_FAMILIES:
        return (
            "a V100 (sm_70) type: the CUDA image's torch 2.13 (CUDA 12.8 wheels) has no sm_70 kernels "
            "(pytorch/pytorch#172352); choose g4dn, g5, g6, g6e or p4d"
        )
    if GRAVITON.match(family):
        return (
            "an arm64 (Graviton) type: the worker image and the stack's AMI are x86_64 (it would stop with "
            "'exec format error'); choose an x86_64 type such as c7i, m7i or g5"
        )
    if family in NEURON_FAMILIES:
        return "an Inferentia or Trainium type: the worker image has no Neuron runtime; choose CPU or NVIDIA"
    return None


def require_worker_type(instance_type: str, flag: str = "--instance-type") -> str:
    """`instance_type`, or `ConfigError` naming the flag, the type and why it cannot run the worker."""
    reason = unsupported_reason(instance_type)
    if reason is not None:
        raise ConfigError(f"{flag} {instance_type}: {reason}")
    return instance_type
