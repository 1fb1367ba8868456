"""The Debian base image is built with a system's file modes whatever the umask of the process that asks:
one built after a command had set 077 held /usr/local/pyvenv.cfg at 0600, and no Python in the image
started as the worker's own user (found on a fresh machine, where the base was built for the first time
inside the test session)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from coordinator.build import base_image


def test_the_base_is_built_under_umask_022_and_the_callers_is_restored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[int] = []

    def run(command: list[str], what: str) -> None:
        current = os.umask(0)  # reading the umask means setting it: put it straight back
        os.umask(current)
        seen.append(current)

    monkeypatch.setattr(base_image, "_run", run)
    monkeypatch.setattr(base_image, "_import", lambda engine, root: None)
    monkeypatch.setattr(shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(base_image, "cache_dir", lambda: tmp_path)
    engine: Any = object()
    previous = os.umask(0o077)
    try:
        assert base_image._build(engine, "http://deb.debian.org/debian") == base_image.DEBIAN_BASE
        assert os.umask(0o077) == 0o077  # the caller's umask is back
    finally:
        os.umask(previous)
    assert seen == [0o022, 0o022]  # debootstrap, then the venv in /usr/local
