"""What an object store answers besides data (`storage.py`, `s3_store.py`): answers its callers act on (a
key that is not there, a conditional write refused), in the worker's error tree (`errors.py`) so that one
left unhandled ends the worker with its exit code and one line, as every other of its errors."""

from inference.errors import WorkerError


class ObjectNotFound(WorkerError, KeyError):
    """The key does not exist in the store."""


class ConditionFailed(WorkerError):
    """A conditional write was refused: the object is not the version the writer named (S3's 412)."""
