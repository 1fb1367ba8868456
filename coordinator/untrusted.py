"""JSON from outside the coordinator's trust: a job's heartbeats (any worker of the job may write under its
prefix, and attempt ids are predictable) and the events queue's messages (anything that may send to it).

`json.loads` alone lets one document stop the control loop: a body that is not UTF-8 raises
UnicodeDecodeError, a 100,000-deep array exhausts the interpreter's recursion limit (RecursionError), a huge
one takes the memory. `load_json` refuses all three, and anything else json refuses, with one
`UntrustedInput` naming what was read and why; the caller logs it and treats the document as absent.

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
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise UntrustedInput(f"{what}: not JSON ({error})") from None


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
