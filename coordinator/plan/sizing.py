"""How many segments, and how often a worker checkpoints: from the arithmetic, not a fixed 10 and 20 batches.

**Segments.** A job of `work` seconds on one instance, split in `n` segments, pays at least one launch
(`boot`: the boot model's mean, about 2 minutes) per segment and takes about `boot + work / n`. Without a
deadline: the most segments whose boot is at most a tenth of what each bills, `n = work / (9 * boot)`, so
the job is fast and the boots cost at most 10%. With a deadline `D`: at least `work / (D - boot - loss)`
segments, `loss` a reclaim's cost to a spot segment (a notice's changeover: the reaction and a new boot).
Never more segments than rows, nor more than the instances the quota allows (a deadline that needs more
says so). `--segments` overrides; `--segment-minutes` asks for segments of about that much work each
(`ceil(work / minutes)` of them, then the same bounds).

**Checkpoints.** Young's interval (Daly's to first order), `sqrt(2 * cost * MTBI)`: `cost` what a checkpoint
takes (a part and the checkpoint written to S3: about half a second, an assumption), `MTBI` the mean time
between interruptions of the interruption model. It bounds the work a kill without a usable notice
loses; a reclaim with its 2-minute notice drains the batch in hand and loses nothing. In batches for the
worker: the interval times the type's rows/s over the batch size (a resume needs the batch plan fixed).

Usage::

    size_job(rows=2_100_000, rows_per_second=937.9, boot_seconds=117, mtbi_seconds=841, deadline_seconds=None)
    size_job(..., segment_target_seconds=600)  # segments of about 10 minutes of work
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CHECKPOINT_COST_SECONDS = 0.5  # a part and the checkpoint PUT to S3 from the worker (assumed, not measured)
BOOT_SHARE = 0.1  # at most this share of a segment's bill goes to its boot


@dataclass(frozen=True, slots=True)
class Sizing:
    segments: int
    checkpoint_seconds: float
    checkpoint_every_batches: int
    why: str  # how the segment count was chosen, in a line
    segment_seconds: float  # each segment's work on the type, in seconds: the job's work over the count


def size_job(
    *,
    rows: int,
    rows_per_second: float,
    boot_seconds: float,
    mtbi_seconds: float,
    batch_size: int,
    deadline_seconds: float | None = None,
    reclaim_loss_seconds: float = 0.0,
    max_instances: int | None = None,
    segments: int | None = None,
    segment_target_seconds: float | None = None,
) -> Sizing:
    work = rows / rows_per_second
    interval = math.sqrt(2 * CHECKPOINT_COST_SECONDS * mtbi_seconds) if math.isfinite(mtbi_seconds) else work
    every = max(1, round(interval * rows_per_second / batch_size))
    if segments is not None:
        count = min(segments, rows)
        return Sizing(count, interval, every, f"{segments} segments asked (--segments)", work / count)
    if segment_target_seconds is not None:
        count = math.ceil(work / segment_target_seconds)
        why = f"asked for about {segment_target_seconds / 60:g} minutes each (--segment-minutes)"
    else:
        count = max(1, math.floor(work / (boot_seconds * (1 - BOOT_SHARE) / BOOT_SHARE)))  # work >= 9 boots
        why = f"boots at most {BOOT_SHARE:.0%} of each segment's bill"
    if deadline_seconds is not None:
        room = deadline_seconds - boot_seconds - reclaim_loss_seconds
        needed = math.ceil(work / room) if room > 0 else rows
        if needed > count:
            count, why = needed, f"the deadline needs {needed} in parallel"
    if max_instances is not None and count > max_instances:
        why += f"; the quota allows {max_instances} instances"
        count = max_instances
    if count >= rows:
        count, why = rows, f"{why}; one row each"
    return Sizing(count, interval, every, why, work / count)
