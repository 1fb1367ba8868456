"""A model's labels, checked against its outputs when it is loaded: a `config.json` whose `id2label` does not
name every output (one label for a two-output export) was a `KeyError` in the middle of the first batch,
after the instance was paid for. Now it is one `ModelLoadError` line naming the file, before any row.

Usage::

    id2label = checked_labels(config["id2label"], outputs=2, where="/models/sst2/config.json")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inference.errors import ModelLoadError


def checked_labels(id2label: Mapping[Any, Any], *, outputs: int | None, where: str) -> dict[int, str]:
    """`id2label` as {output index: label}; refused unless its indices are exactly 0..outputs-1
    (`outputs` None: 0..len-1, when the model does not say how many it has)."""
    try:
        labels = {int(index): str(label) for index, label in id2label.items()}
    except (TypeError, ValueError, AttributeError):
        raise ModelLoadError(f"{where}: id2label is not a map of output indices to labels") from None
    expected = set(range(len(labels) if outputs is None else outputs))
    if not labels or set(labels) != expected:
        shown = sorted(labels)[:8]
        raise ModelLoadError(
            f"{where}: id2label names outputs {shown}, the model has {len(expected)} output(s) "
            f"(0..{len(expected) - 1}): every output needs a label"
        )
    return labels
