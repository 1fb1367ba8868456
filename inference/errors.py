"""Errors of the worker package.

    SpotbatchError
    ├── InputDataError      bad input data: names the file, the column and the row
    ├── ModelLoadError      a model that cannot be found or loaded
    ├── CheckpointError     a checkpoint that does not belong to this segment or is corrupt
    └── Superseded          a later attempt of the segment has claimed its checkpoint: stop, write nothing

Exit codes are mapped only at the command-line edge (`inference.worker.main`, `coordinator.cli`).
"""


class SpotbatchError(Exception):
    """Base of every error this project raises on purpose."""


class InputDataError(SpotbatchError):
    """The input data is unusable; the message says where (file, column, row) and why."""


class ModelLoadError(SpotbatchError):
    """The model could not be loaded from a local directory or a hub name."""


class CheckpointError(SpotbatchError):
    """A checkpoint is corrupt or was written for other arguments."""


class Superseded(SpotbatchError):
    """A later attempt claimed the segment's checkpoint (this one was presumed lost): stop and write nothing."""
