"""One attempt at a segment: resume from the checkpoint, run the rest of the batch plan, drain on a stop.

Writes, in this order, so that a crash can only redo work: a chunk's part (its key fixed by the chunk's
row range and this attempt), then the checkpoint that lists it.

Fencing, in storage and not in timing: the attempt claims the checkpoint when it starts (rewrites it with
its attempt id) and every checkpoint write names the version this attempt last read or wrote (S3's
conditional PutObject, `If-Match`). Once a newer attempt has claimed the segment, an older one still
running (an instance the coordinator gave up on, never told to stop) has its next checkpoint write refused
and stops (`Superseded`): it cannot list a part, and a part it wrote has a key no newer attempt lists.
Parts no checkpoint lists are deleted only when the segment is done. It also re-reads the claim before each
part, so that a superseded attempt rarely writes one at all. Once done, it writes the segment's manifest
(`manifest.py`) from its done checkpoint.

The segment is streamed a chunk at a time (`dataset.SegmentReader`), planned chunk by chunk
(`plan.ChunkGrid`): memory holds one chunk's rows and results, whatever the segment's size.

Usage::

    outcome = SegmentRun(config, store, stop).run(classifier, heartbeat)   # "done" or "draining"
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from inference.batch_plan import Batch, ChunkGrid
from inference.checkpoint import (
    Checkpoint,
    load_versioned_checkpoint,
    remove_orphan_parts,
    save_checkpoint,
)
from inference.chunk_work import ChunkWork, write_part
from inference.classifier import Classifier
from inference.config import WorkerConfig
from inference.dataset import SegmentReader
from inference.digest import add_digests, as_text, from_text
from inference.errors import CheckpointError, ModelLoadError, Superseded
from inference.heartbeat import HeartbeatWriter
from inference.host_hook import installed
from inference.interruption import StopSignal
from inference.manifest import write_segment_manifest
from inference.storage import ObjectStore, open_store, split_uri
from inference.store_errors import ConditionFailed

log = logging.getLogger("inference.worker")
CLAIM_TRIES = 5  # a claim refused because another writer got in between the read and the write is retried


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
        self._version: str | None = None  # of the checkpoint, as this attempt last read or wrote it

    def _fresh_checkpoint(self) -> Checkpoint:
        c = self.config
        return Checkpoint(c.segment_id, c.start, c.stop, c.batch_size, c.checkpoint_every, attempt=c.attempt)

    def _resume_checkpoint(self) -> Checkpoint:
        """Read the checkpoint and claim it, over the version read; again if another writer got in."""
        for _ in range(CLAIM_TRIES):
            found, self._version = load_versioned_checkpoint(
                self.store, self.config.segment_id, corrupt_as_absent=True
            )
            checkpoint = self._usable(found)
            if not self.config.attempt:  # a run outside a job: nothing to claim
                return checkpoint
            checkpoint.attempt = self.config.attempt
            try:
                self._version = save_checkpoint(self.store, checkpoint, self._version)
            except ConditionFailed:
                continue
            return checkpoint  # an older attempt still running has its next checkpoint write refused
        raise Superseded(
            f"segment {self.config.segment_id}: its checkpoint changed under each of {CLAIM_TRIES} claims; "
            f"another attempt is writing it, so this one ({self.config.attempt!r}) stops without writing"
        )

    def _usable(self, found: Checkpoint | None) -> Checkpoint:
        fresh = self._fresh_checkpoint()
        if found is None:
            return fresh
        if not found.matches(fresh):
            raise CheckpointError(
                f"{self.store.uri}: checkpoint of {found.segment_id} was written for rows "
                f"[{found.start}, {found.stop}), batch size {found.batch_size}, checkpoint every "
                f"{found.checkpoint_every}; this run asks for [{fresh.start}, {fresh.stop}), "
                f"{fresh.batch_size}, {fresh.checkpoint_every}. Use the same arguments or a new output "
                "prefix."
            )
        return found

    def _check_claim(self, checkpoint: Checkpoint) -> None:
        """Raise `Superseded` if a later attempt has claimed the segment's checkpoint (before a part: the
        fence itself is the conditional checkpoint write in `_save`)."""
        if checkpoint.attempt:
            current = self._current(checkpoint)
            if current is not None and current.attempt != checkpoint.attempt:
                raise self._superseded(checkpoint, current)

    def _current(self, checkpoint: Checkpoint) -> Checkpoint | None:
        """The checkpoint as it is now (one that does not parse: none, and `_save` is refused)."""
        return load_versioned_checkpoint(self.store, checkpoint.segment_id, corrupt_as_absent=True)[0]

    def _superseded(self, checkpoint: Checkpoint, current: Checkpoint | None) -> Superseded:
        by = current.attempt if current is not None else "?"
        return Superseded(
            f"segment {checkpoint.segment_id}: attempt {by!r} has claimed the checkpoint; this attempt "
            f"({checkpoint.attempt!r}) stops without listing anything more"
        )

    def _save(self, checkpoint: Checkpoint) -> None:
        try:
            self._version = save_checkpoint(self.store, checkpoint, self._version)
        except ConditionFailed:
            raise self._superseded(checkpoint, self._current(checkpoint)) from None
        if checkpoint.done:
            orphans = remove_orphan_parts(self.store, checkpoint)
            if orphans:
                log.info("removed %d part(s) no checkpoint lists: %s", len(orphans), orphans)

    def run(self, classifier: Classifier, heartbeat: HeartbeatWriter) -> WorkerOutcome:
        c = self.config
        total = c.stop - c.start
        grid = ChunkGrid(total, c.batch_size, c.checkpoint_every)
        input_parent, input_key = split_uri(c.input_uri)
        with SegmentReader(
            open_store(input_parent),
            input_key,
            c.start,
            c.stop,
            text_column=c.text_column,
            id_column=c.id_column,
        ) as reader:  # the footer now: a missing column or row range is found before the machine is up
            installed().until_ready(self.stop.wait)  # the machine's, if it stands in for one (host_hook.py)
            if self.stop.wait(0):  # told to stop while booting: nothing claimed, computed or saved
                found = load_versioned_checkpoint(self.store, c.segment_id, corrupt_as_absent=True)[0]
                rows = found.rows_done if found else 0
                log.info(
                    "stopping (%s) before the first batch; checkpoint at %d rows", self.stop.reason, rows
                )
                return WorkerOutcome("draining", rows, total, 0, 0)
            checkpoint = self._resume_checkpoint()
            if checkpoint.done:
                log.info(
                    "segment %s already done (%d rows); nothing to do", c.segment_id, checkpoint.rows_done
                )
                write_segment_manifest(
                    self.store, checkpoint
                )  # again: the last attempt may have died before it
                return WorkerOutcome("done", checkpoint.rows_done, total, 0, 0)
            log.info(
                "segment %s rows [%d, %d): %d batches, resuming at batch %d (%d rows done)",
                c.segment_id,
                c.start,
                c.stop,
                grid.batches,
                checkpoint.next_batch,
                checkpoint.rows_done,
            )
            heartbeat.update(rows_done=checkpoint.rows_done, next_batch=checkpoint.next_batch)
            return self._run_chunks(classifier, heartbeat, checkpoint, reader, grid)

    def _run_chunks(
        self,
        classifier: Classifier,
        heartbeat: HeartbeatWriter,
        checkpoint: Checkpoint,
        reader: SegmentReader,
        grid: ChunkGrid,
    ) -> WorkerOutcome:
        """Every batch from the checkpoint on, a chunk at a time; a part and a checkpoint at each chunk's end
        and on a stop."""
        results: dict[int, tuple[str, float]] = {}
        batches_run = truncated = 0
        rows_at_resume = rows_done = checkpoint.rows_done
        started = time.monotonic()
        hook = installed()
        for chunk in reader.chunks(grid.chunk_rows, grid.chunk_of(checkpoint.next_batch)):
            lengths = classifier.token_lengths(chunk.texts)
            work = ChunkWork(
                chunk, lengths, grid.plan_chunk(grid.chunk_of(chunk.first // grid.batch_size), lengths)
            )
            part_first = checkpoint.next_batch
            for batch in work.batches:
                if batch.index < checkpoint.next_batch:  # done before a drain, in this chunk's first part
                    continue
                truncated += self._predict(classifier, work, batch, results, grid.batches)
                batches_run += 1
                rows_done += len(batch.rows)
                hook.after_batch(rows_done - rows_at_resume)
                rate = (rows_done - rows_at_resume) / (time.monotonic() - started)
                heartbeat.update(rows_done=rows_done, next_batch=batch.index + 1, rows_per_s=round(rate, 2))
                stopping = self.stop.requested
                if grid.is_chunk_end(batch.index) or stopping:
                    self._commit(checkpoint, grid, work, (part_first, batch.index + 1), rows_done, results)
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
        self,
        classifier: Classifier,
        work: ChunkWork,
        batch: Batch,
        results: dict[int, tuple[str, float]],
        of: int,
    ) -> int:
        """One batch into `results` (by row offset), logged with its time; returns the texts truncated."""
        started = time.monotonic()
        lengths = work.lengths_of(batch)
        result = classifier.predict(work.texts(batch), lengths)
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
            of,
            len(batch.rows),
            max(lengths),
            elapsed,
            len(batch.rows) / elapsed if elapsed > 0 else 0.0,
        )
        return result.truncated

    def _commit(
        self,
        checkpoint: Checkpoint,
        grid: ChunkGrid,
        work: ChunkWork,
        batches: tuple[int, int],
        rows_done: int,
        results: dict[int, tuple[str, float]],
    ) -> None:
        """Batches [first, stop) of the chunk in hand as a part, then the checkpoint that lists it, in that
        order; the checkpoint's digest and first/last ids take the part's in."""
        self._check_claim(checkpoint)
        part = write_part(self.store, self.config, grid, work, batches, results)
        checkpoint.parts.append(part.key)
        checkpoint.digest = as_text(add_digests([from_text(checkpoint.digest, part.key), part.digest]))
        checkpoint.first_id = part.first_id or checkpoint.first_id
        checkpoint.last_id = part.last_id or checkpoint.last_id
        stop = batches[1]
        checkpoint.next_batch = stop
        checkpoint.rows_done = rows_done
        checkpoint.done = stop == grid.batches
        self._save(checkpoint)
        if checkpoint.done:
            write_segment_manifest(self.store, checkpoint)
