"""One attempt at a segment: resume from the checkpoint, run the rest of the batch plan, drain on a stop.

Writes, in this order, so that a crash can only redo work: a chunk's part (its key fixed by the chunk's
row range), then the checkpoint that lists it. Fencing: the attempt claims the checkpoint when it starts
(writes it with its attempt id) and re-reads it before each part and checkpoint write; if another attempt
has claimed it since, this one is a leftover (an instance the coordinator gave up on, still draining) and
stops before it can overwrite the newer attempt's progress.

Usage::

    outcome = SegmentRun(config, store, stop).run(classifier, heartbeat)   # "done" or "draining"
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from inference.checkpoint import (
    Checkpoint,
    encode_part,
    load_checkpoint,
    remove_orphan_parts,
    save_checkpoint,
)
from inference.classifier import Classifier
from inference.config import WorkerConfig
from inference.dataset import SegmentRows, read_segment
from inference.errors import CheckpointError, ModelLoadError, Superseded
from inference.heartbeat import HeartbeatWriter
from inference.host_hook import installed
from inference.interruption import StopSignal
from inference.layout import part_key
from inference.plan import Batch, BatchPlan, plan_batches
from inference.storage import ObjectStore, open_store, split_uri

log = logging.getLogger("inference.worker")


@dataclass(frozen=True, slots=True)
class _Work:
    rows: SegmentRows
    lengths: list[int]
    plan: BatchPlan


@dataclass(frozen=True, slots=True)
class WorkerOutcome:
    state: str  # "done" or "draining"
    rows_done: int
    rows_total: int
    batches_run: int
    truncated: int


class SegmentRun:
    """One attempt at a segment: resumes from the checkpoint, runs the remaining batches of the plan."""

    def __init__(self, config: WorkerConfig, store: ObjectStore, stop: StopSignal) -> None:
        self.config = config
        self.store = store
        self.stop = stop

    def _fresh_checkpoint(self) -> Checkpoint:
        c = self.config
        return Checkpoint(c.segment_id, c.start, c.stop, c.batch_size, c.checkpoint_every, attempt=c.attempt)

    def _resume_checkpoint(self) -> Checkpoint:
        fresh = self._fresh_checkpoint()
        found = load_checkpoint(self.store, self.config.segment_id)
        if found is None:
            found = fresh
        elif not found.matches(fresh):
            raise CheckpointError(
                f"{self.store.uri}: checkpoint of {found.segment_id} was written for rows "
                f"[{found.start}, {found.stop}), batch size {found.batch_size}, checkpoint every "
                f"{found.checkpoint_every}; this run asks for [{fresh.start}, {fresh.stop}), "
                f"{fresh.batch_size}, {fresh.checkpoint_every}. Use the same arguments or a new output "
                "prefix."
            )
        orphans = remove_orphan_parts(self.store, found)
        if orphans:
            log.info("removed %d orphan part(s) written after the last checkpoint: %s", len(orphans), orphans)
        found.attempt = self.config.attempt
        if found.attempt:
            save_checkpoint(
                self.store, found
            )  # the claim: an older attempt still running will see it and stop
        return found

    def _check_claim(self, checkpoint: Checkpoint) -> None:
        """Raise `Superseded` if a later attempt has claimed the segment's checkpoint."""
        if checkpoint.attempt:
            current = load_checkpoint(self.store, checkpoint.segment_id)
            if current is not None and current.attempt != checkpoint.attempt:
                raise Superseded(
                    f"segment {checkpoint.segment_id}: attempt {current.attempt!r} has claimed the "
                    "checkpoint; "
                    f"this attempt ({checkpoint.attempt!r}) stops without writing"
                )

    def _save(self, checkpoint: Checkpoint) -> None:
        self._check_claim(checkpoint)  # again: the part write took time
        save_checkpoint(self.store, checkpoint)

    def _write_part(
        self, plan: BatchPlan, ids: list[Any], first: int, stop: int, results: dict[int, Any]
    ) -> str:
        """Write batches [first, stop) of one chunk as a part; returns its key."""
        c = self.config
        chunk = plan.batches[first].chunk
        chunk_first, chunk_stop = plan.chunk_range(chunk)
        chunk_batch0 = plan.first_batch_of_chunk(chunk)
        whole = first == chunk_batch0 and plan.is_chunk_end(stop - 1)
        key = part_key(
            c.segment_id,
            c.start + chunk_first,
            c.start + chunk_stop,
            None if whole else (first - chunk_batch0, stop - chunk_batch0),
        )
        offsets = sorted(offset for batch in plan.batches[first:stop] for offset in batch.rows)
        self.store.put(key, encode_part([(ids[o], *results[o]) for o in offsets]))
        return key

    def run(self, classifier: Classifier, heartbeat: HeartbeatWriter) -> WorkerOutcome:
        c = self.config
        total = c.stop - c.start
        work = self._plan(classifier)
        installed().until_ready(self.stop.wait)  # the machine's, if it stands in for one (host_hook.py)
        if self.stop.wait(0):  # told to stop while booting: nothing claimed, computed or saved
            found = load_checkpoint(self.store, c.segment_id)
            rows = found.rows_done if found else 0
            log.info("stopping (%s) before the first batch; checkpoint at %d rows", self.stop.reason, rows)
            return WorkerOutcome("draining", rows, total, 0, 0)
        checkpoint = self._resume_checkpoint()
        if checkpoint.done:
            log.info("segment %s already done (%d rows); nothing to do", c.segment_id, checkpoint.rows_done)
            return WorkerOutcome("done", checkpoint.rows_done, total, 0, 0)
        log.info(
            "segment %s rows [%d, %d): %d batches, resuming at batch %d (%d rows done)",
            c.segment_id,
            c.start,
            c.stop,
            len(work.plan.batches),
            checkpoint.next_batch,
            checkpoint.rows_done,
        )
        heartbeat.update(rows_done=checkpoint.rows_done, next_batch=checkpoint.next_batch)
        return self._run_batches(classifier, heartbeat, checkpoint, work)

    def _plan(self, classifier: Classifier) -> _Work:
        """The segment's rows and the batch plan over them (fixed by the texts: a resume plans the same)."""
        c = self.config
        input_parent, input_key = split_uri(c.input_uri)
        rows = read_segment(
            open_store(input_parent),
            input_key,
            c.start,
            c.stop,
            text_column=c.text_column,
            id_column=c.id_column,
        )
        lengths = classifier.token_lengths(rows.texts)
        return _Work(rows, lengths, plan_batches(lengths, c.batch_size, c.checkpoint_every))

    def _run_batches(
        self,
        classifier: Classifier,
        heartbeat: HeartbeatWriter,
        checkpoint: Checkpoint,
        work: _Work,
    ) -> WorkerOutcome:
        """Every batch from the checkpoint on; a part and a checkpoint at each chunk's end and on a stop."""
        results: dict[int, tuple[str, float]] = {}
        part_first = checkpoint.next_batch
        batches_run = truncated = 0
        rows_at_resume = rows_done = checkpoint.rows_done
        started = time.monotonic()
        hook = installed()
        for batch in work.plan.batches[checkpoint.next_batch :]:
            truncated += self._predict(classifier, work, batch, results)
            batches_run += 1
            rows_done += len(batch.rows)
            hook.after_batch(rows_done - rows_at_resume)
            rate = (rows_done - rows_at_resume) / (time.monotonic() - started)
            heartbeat.update(rows_done=rows_done, next_batch=batch.index + 1, rows_per_s=round(rate, 2))
            stopping = self.stop.requested
            if work.plan.is_chunk_end(batch.index) or stopping:
                self._commit(checkpoint, work, part_first, batch.index + 1, rows_done, results)
                part_first = batch.index + 1
                results.clear()
            if stopping and not checkpoint.done:
                log.info(
                    "stopping (%s) after batch %d; checkpoint at %d rows",
                    self.stop.reason,
                    batch.index + 1,
                    checkpoint.rows_done,
                )
                return self._outcome("draining", checkpoint, batches_run, truncated)
        if truncated:
            log.info("%d text(s) longer than %d tokens were truncated", truncated, self.config.max_length)
        return self._outcome("done", checkpoint, batches_run, truncated)

    def _outcome(self, state: str, checkpoint: Checkpoint, batches_run: int, truncated: int) -> WorkerOutcome:
        installed().finished()
        total = self.config.stop - self.config.start
        return WorkerOutcome(state, checkpoint.rows_done, total, batches_run, truncated)

    def _predict(
        self, classifier: Classifier, work: _Work, batch: Batch, results: dict[int, tuple[str, float]]
    ) -> int:
        """One batch into `results` (by row offset), logged with its time; returns the texts truncated."""
        started = time.monotonic()
        texts = [work.rows.texts[offset] for offset in batch.rows]
        result = classifier.predict(texts, [work.lengths[offset] for offset in batch.rows])
        if not all(math.isfinite(score) for score in result.scores):  # NaN logits: a broken export
            raise ModelLoadError(
                f"the model scored batch {batch.index + 1} of segment {self.config.segment_id} with a "
                "non-finite value: its weights or export are broken (nothing of the batch was written)"
            )
        for offset, label, score in zip(batch.rows, result.labels, result.scores, strict=True):
            results[offset] = (label, score)
        elapsed = time.monotonic() - started
        log.info(
            "batch %d/%d rows %d tokens<=%d time %.3fs rows/s %.1f",
            batch.index + 1,
            len(work.plan.batches),
            len(batch.rows),
            max(work.lengths[o] for o in batch.rows),
            elapsed,
            len(batch.rows) / elapsed if elapsed > 0 else 0.0,
        )
        return result.truncated

    def _commit(
        self,
        checkpoint: Checkpoint,
        work: _Work,
        first: int,
        stop: int,
        rows_done: int,
        results: dict[int, Any],
    ) -> None:
        """Batches [first, stop) as a part, then the checkpoint that lists it: in that order."""
        self._check_claim(checkpoint)
        checkpoint.parts.append(self._write_part(work.plan, work.rows.ids, first, stop, results))
        checkpoint.next_batch = stop
        checkpoint.rows_done = rows_done
        checkpoint.done = stop == len(work.plan.batches)
        self._save(checkpoint)
