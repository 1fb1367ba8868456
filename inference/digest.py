"""An order-independent digest of a set of ids: the sum of a 64-bit hash of each id, modulo 2**64.

Two collections of ids have the same digest and count when they hold the same ids the same number of times,
in any order, whatever parts they were cut into: a missing row, a duplicated one or a foreign one changes
the digest (unless 64-bit hashes collide). The digest of a union is the sum of the digests. So a segment's
predictions can be checked against its input rows from two 16-hex-digit numbers, reading no row, and a
job's from the sum of its segments'.

The hash is splitmix64's finalizer over the id: an int64 id as its value, a string id as a polynomial hash
of its UTF-8 bytes mixed with its length. Both are vectorized in numpy (wrapping uint64 arithmetic), so
millions of ids hash in a fraction of a second. An int id and the string of its digits hash differently:
a dataset's id column has one type (`spotbatch data prepare`), and its outputs keep it.

Usage::

    digest = id_digest(table.column("id"))          # an int in [0, 2**64)
    combined = add_digests([digest_a, digest_b])
    as_text(digest)                                  # "0123456789abcdef", as manifests store it
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

MODULUS = 2**64
_POLY = np.uint64(0x100000001B3)  # FNV's 64-bit prime: odd, so every position counts


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise on uint64 (wrapping)."""
    with np.errstate(over="ignore"):
        z = values + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _string_keys(array: pa.Array) -> np.ndarray:
    """A uint64 per string: a polynomial hash of its bytes (wrapping) mixed with its length."""
    array = array.cast(pa.large_string())
    if array.null_count:
        raise ValueError("ids must not be null")
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]].astype(np.uint64)
    lengths = np.diff(offsets)
    starts = offsets[:-1] - offsets[0]
    position = np.arange(len(data), dtype=np.int64) - np.repeat(starts, lengths)
    powers = np.ones(int(lengths.max(initial=0)) + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for index in range(1, len(powers)):
            powers[index] = powers[index - 1] * _POLY
        sums = np.concatenate(([np.uint64(0)], np.cumsum(data * powers[position], dtype=np.uint64)))
        polynomial = sums[starts + lengths] - sums[starts]
        keys: np.ndarray = polynomial ^ _mix(lengths.astype(np.uint64))
        return keys


def id_hashes(ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each id's 64-bit hash (uint64), in order."""
    chunks = ids.chunks if isinstance(ids, pa.ChunkedArray) else [ids]
    parts = []
    for chunk in chunks:
        if chunk.null_count:
            raise ValueError("ids must not be null")
        if pa.types.is_integer(chunk.type):
            keys = chunk.cast(pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
        elif pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type):
            keys = _string_keys(chunk)
        else:
            raise ValueError(f"ids of type {chunk.type} cannot be digested: use int64 or string ids")
        parts.append(_mix(keys))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def id_digest(ids: pa.Array | pa.ChunkedArray) -> int:
    """The sum of the ids' hashes modulo 2**64."""
    return int(np.sum(id_hashes(ids), dtype=np.uint64))


def add_digests(digests: Iterable[int]) -> int:
    return sum(digests) % MODULUS


def as_text(digest: int) -> str:
    return f"{digest:016x}"


def from_text(text: str, where: str) -> int:
    """A digest as manifests store it; anything else is a `ValueError` naming `where`."""
    if not isinstance(text, str) or len(text) != 16 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"{where}: digest {str(text)[:40]!r} is not 16 lowercase hex digits")
    return int(text, 16)
