"""JSON from outside the coordinator's trust: a job's heartbeats (any worker of the job may write under its
prefix, and attempt ids are predictable) and the events queue's messages (anything that may send to it).

`json.loads` alone lets one document stop the control loop: a body that is not UTF-8 raises
UnicodeDecodeError, a 100,000-deep array exhausts the interpreter's recursion limit (RecursionError), a huge
one takes the memory, an integer of 5,000 digits raises Python's digit-limit ValueError, and `1e999`, `NaN`
or a 400-digit integer turned into a float (OverflowError) poison every sum they reach. `load_json` refuses
all of them, and anything else json refuses, with one `UntrustedInput` naming what was read and why: an
integer has at most `MAX_DIGITS` digits, a number is finite. The caller logs it and treats the document as
absent.

Usage::

    try:
        document = load_json(data, what="heartbeat of seg-0001")
    except UntrustedInput as refusal:
        log.warning("%s", refusal)
"""

from __future__ import annotations

import json
from typing import Any

from coordinator.errors import UntrustedInput

MAX_BYTES = 256 * 1024  # an SQS message's largest; a heartbeat is a few hundred bytes
MAX_DEPTH = 16  # a heartbeat is flat; an EC2 event nests three deep
MAX_DIGITS = 20  # an integer a job may write: rows, counts, ids up to 10**20 (an int64 has 19 digits)


def load_json(data: bytes | str, *, what: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    if len(data) > max_bytes:
        raise UntrustedInput(f"{what}: {len(data):,} bytes, more than {max_bytes:,}")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as error:
        raise UntrustedInput(f"{what}: not UTF-8 ({error.reason} at byte {error.start})") from None
    if nesting(text) > max_depth:
        raise UntrustedInput(f"{what}: nested deeper than {max_depth}")
    try:
        return json.loads(
            text,
            parse_int=lambda digits: _bounded_int(digits, what),
            parse_float=lambda digits: _finite_float(digits, what),
            parse_constant=lambda name: _no_constant(name, what),
        )
    except (json.JSONDecodeError, RecursionError) as error:
        raise UntrustedInput(f"{what}: not JSON ({error})") from None


def _bounded_int(digits: str, what: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise UntrustedInput(
            f"{what}: an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_DIGITS})"
        )
    return int(digits)


def _finite_float(digits: str, what: str) -> float:
    value = float(digits)
    if value in (float("inf"), float("-inf")):
        raise UntrustedInput(f"{what}: {digits:.40} is not a finite number")
    return value


def _no_constant(name: str, what: str) -> Any:
    raise UntrustedInput(f"{what}: {name} is not a number")


def nesting(text: str) -> int:
    """How deep the text's arrays and objects nest (brackets inside strings do not count)."""
    if text.count("[") + text.count("{") <= 1:
        return text.count("[") + text.count("{")
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest
