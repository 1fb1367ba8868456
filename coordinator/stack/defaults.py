"""Defaults of the stack's variables that the Python side uses too (a test holds them to variables.tf).

`c7i.xlarge`: 4 vCPUs of a current Intel generation and the CPU image, priced per region and zone in the
price table; a GPU type (`g5.xlarge`, `g4dn.xlarge`) gets the GPU AMI and the CUDA image.
"""

from __future__ import annotations

DEFAULT_INSTANCE_TYPE = "c7i.xlarge"
DEFAULT_MAX_LIFETIME_SECONDS = 21_600  # 6 h: the default job takes minutes; a worker alive this long is lost
DEFAULT_STACK_NAME = "spotbatch"
# NVIDIA GPU families: the GPU AMI, the CUDA image, `docker run --gpus all` (the stack's local.gpu_families)
GPU_FAMILIES = ("g4dn", "g5", "g5g", "g6", "g6e", "gr6", "p3", "p3dn", "p4d", "p4de", "p5", "p5e")


def is_gpu(instance_type: str) -> bool:
    return instance_type.split(".")[0] in GPU_FAMILIES
