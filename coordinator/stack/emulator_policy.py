"""The IAM statements as an emulator (moto) can check them: the policy shape of an emulator target (the
simulator, and `spotbatch run --endpoint` against a moto server), never of AWS.

moto matches resource ARNs only for S3 (every other service's request is checked against "*"), names
CloudWatch's actions `monitoring:*`, and fills in no request value for some condition keys: `for_emulator`
gives the same statements and actions with those aliases, the other resources widened to "*", and the
conditions it cannot judge dropped. Conditions it can judge stay; AWS's own checks of the rest are argued in
`tests/coordinator/stack/test_policy_conditions.py`.

Usage::

    CloudTarget.connect(target, stack, worker_policy=for_emulator)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.stack.iam_documents import Statement

# moto names some actions by the service's endpoint prefix, not its IAM prefix (CloudWatch's "monitoring")
EMULATOR_ACTION_PREFIXES = {"cloudwatch:": "monitoring:"}
EMULATOR_UNMET_KEYS = frozenset({"s3:prefix"})  # condition keys moto has no request value for


def _emulator_spelling(action: str) -> str | None:
    for prefix, moto_prefix in EMULATOR_ACTION_PREFIXES.items():
        if action.startswith(prefix):
            return moto_prefix + action.removeprefix(prefix)
    return None


def for_emulator(statements: list[Statement]) -> list[Statement]:
    """The same statements as moto can check them: every non-S3 request is checked against resource "*"
    (those statements' resources widened to it), an action moto spells by its endpoint prefix is granted
    under that name too (`cloudwatch:PutMetricData` also as `monitoring:PutMetricData`), and an `s3:prefix`
    condition is dropped: moto fills in no request value for it, so it would find it unmet on every
    listing."""
    emulated = []
    for s in statements:
        aliases = tuple(
            (alias, f"{why} (as moto names it)")
            for action, why in s.actions
            if (alias := _emulator_spelling(action)) is not None
        )
        s = replace(s, actions=s.actions + aliases, condition=_emulator_condition(s.condition))
        s3_only = all(action.startswith("s3:") for action, _ in s.actions)
        emulated.append(s if s3_only else replace(s, resources=("*",)))
    return emulated


def _emulator_condition(condition: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kept = {
        test: {key: values for key, values in keys.items() if key not in EMULATOR_UNMET_KEYS}
        for test, keys in condition.items()
    }
    return {test: keys for test, keys in kept.items() if keys}
