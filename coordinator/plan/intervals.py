"""The 95% interval of a mean over a few runs: Student's t, since a matrix has 3 to 8 runs a configuration."""

from __future__ import annotations

import math
import statistics


def ci95(values: list[float]) -> tuple[float, float]:
    """The mean's 95% interval (Student's t; a single run: the run itself)."""
    mean = statistics.mean(values)
    if len(values) < 2:
        return mean, mean
    half = _t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean - half, mean + half


T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def _t975(df: int) -> float:
    if df in T975:
        return T975[df]
    return 2.086 if df <= 20 else 2.042 if df <= 30 else 1.96
