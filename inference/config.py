"""What one worker attempt is asked to do: its segment, where to read and write, and how (batches, beats).

Every field has a `--option` and a `SPOTBATCH_<OPTION>` variable in `python -m inference.worker`.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference.classifier import DEFAULT_MAX_LENGTH
from inference.heartbeat import HEARTBEAT_SECONDS, STEADY_HEARTBEAT_SECONDS
from inference.interruption import NOTICE_POLL_SECONDS

DEFAULT_BATCH_SIZE = 64
DEFAULT_CHECKPOINT_EVERY = 50  # batches: 3,200 rows, at most ~1 minute of redone work on a hard kill (CPU)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    input_uri: str
    start: int
    stop: int
    segment_id: str
    output_prefix: str
    model: str
    batch_size: int = DEFAULT_BATCH_SIZE
    checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY
    max_length: int = DEFAULT_MAX_LENGTH
    text_column: str = "text"
    id_column: str = "id"
    instance_id: str = "local"
    market: str = "local"
    attempt: str = ""
    heartbeat_every: float = HEARTBEAT_SECONDS
    steady_heartbeat_every: float = STEADY_HEARTBEAT_SECONDS
    notice_poll_every: float = NOTICE_POLL_SECONDS
    poll_notices: bool = True
    threads: int | None = None
    backend: str = "auto"  # torch, onnx, onnx-int8, onnx-int8-checked or auto (inference/model.py)
