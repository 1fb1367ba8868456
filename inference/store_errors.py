"""What an object store answers besides data (`storage.py`, `s3_store.py`): not worker errors with exit
codes (`errors.py`), but answers its callers act on."""


class ObjectNotFound(KeyError):
    """The key does not exist in the store."""


class ConditionFailed(Exception):
    """A conditional write was refused: the object is not the version the writer named (S3's 412)."""
