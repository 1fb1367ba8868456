"""The stack's outputs, as `terraform output -json` saved them: what a run needs to find the fleet.

Usage::

    outputs = read_outputs(Path("runs/infra/aws/outputs.json"))
    outputs["bucket"], outputs["launch_template_ids"]["spot"]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coordinator.errors import StackOutputsError


def read_outputs(path: Path) -> dict[str, Any]:
    """`terraform output -json` ({name: {value: ...}}) or plain {name: value}; errors name the missing key."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise StackOutputsError(f"{path}: cannot read the stack outputs ({error})") from None
    outputs = {k: (v["value"] if isinstance(v, dict) and "value" in v else v) for k, v in raw.items()}
    for key in ("bucket", "launch_template_ids"):
        if key not in outputs:
            raise StackOutputsError(
                f"{path}: no {key!r} output; is this the spotbatch stack's `terraform output -json`?"
            )
    return outputs
