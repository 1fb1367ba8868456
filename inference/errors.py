"""Errors of the worker, and the exit codes of `python -m inference.worker`.

    WorkerError                 2  base: bad input, model or checkpoint (the message says which and where)
    ├── InputDataError          2  the segment's data: names the object, the column and the row
    ├── ModelLoadError          2  a model that cannot be found or loaded
    ├── CheckpointError         2  a checkpoint that does not belong to this segment or is corrupt
    ├── Superseded              6  a later attempt of the segment claimed its checkpoint: stop, write nothing
    ├── ObjectNotFound (KeyError)  an object store has no such key (`store_errors.py`)
    └── ConditionFailed            an object store refused a conditional write (`store_errors.py`)

The worker is a program of its own: it imports nothing from the coordinator, whose errors
(`coordinator/errors.py`) share this table of exit codes. They are mapped only at the edge
(`inference.worker.main`).
"""

EXIT_DONE = 0  # the segment is done, or drained to its checkpoint after a notice or SIGTERM
EXIT_FAILED = 1  # anything unexpected (a bug, a lost connection that outlasted the retries)
EXIT_BAD_INPUT = 2
EXIT_SUPERSEDED = 6  # not an error of the job: this attempt was replaced and wrote nothing
EXIT_INTERRUPTED = 130


class WorkerError(Exception):
    """Base of every error the worker raises on purpose."""

    exit_code = EXIT_BAD_INPUT


class InputDataError(WorkerError):
    """The input data is unusable; the message says where (file, column, row) and why."""


class ModelLoadError(WorkerError):
    """The model could not be loaded from a local directory or a hub name."""


class CheckpointError(WorkerError):
    """A checkpoint is corrupt or was written for other arguments."""


class Superseded(WorkerError):
    """A later attempt claimed the segment's checkpoint (this one was presumed lost): stop, write nothing."""

    exit_code = EXIT_SUPERSEDED
