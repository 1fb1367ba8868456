"""The heartbeat's interval adapts: short while starting and draining, long while running; each PUT is
counted in the object itself (the ledger prices them)."""

from __future__ import annotations

import json
from pathlib import Path

from inference.heartbeat import WARMUP_BEATS, Heartbeat, HeartbeatWriter
from inference.layout import heartbeat_key
from inference.storage import LocalStore


def test_short_beats_while_starting_and_draining_long_ones_while_running(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    writer = HeartbeatWriter(
        store, Heartbeat("seg-0", "i-1", "spot", "j/seg-0/1", 100), every=2, steady_every=30
    )
    seen = []
    for _ in range(WARMUP_BEATS + 2):
        seen.append(writer.interval())
        writer.beat()
    assert seen == [2.0] * (WARMUP_BEATS + 1) + [30.0]  # the first beat and the warm-up, then steady
    writer.update(state="draining")
    assert writer.interval() == 2.0
    written = json.loads(store.get(heartbeat_key("seg-0")))
    assert written["beats"] == WARMUP_BEATS + 2  # every PUT so far, the one read included


def test_without_a_steady_interval_the_beat_never_slows(tmp_path: Path) -> None:
    writer = HeartbeatWriter(LocalStore(tmp_path), Heartbeat("seg-0", "i-1", "spot", "a", 1), every=1.5)
    for _ in range(WARMUP_BEATS + 3):
        writer.beat()
    assert writer.interval() == 1.5
    short = HeartbeatWriter(
        LocalStore(tmp_path), Heartbeat("s", "i", "spot", "a", 1), every=5, steady_every=1
    )
    assert short.steady_every == 5  # never faster while running than while starting
