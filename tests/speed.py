"""Tests by speed: `make test-fast` runs the tests not marked `slow`, `make test` runs them all.

A test is slow when it starts moto, Terraform, a worker process, a container engine, sshd or a browser.
Two rules keep the fast layer fast without anyone remembering them:

- a test that asks for a fixture which starts one of those is marked `slow` at collection;
- a test not marked `slow` that starts one anyway fails at once, naming what it started and the mark it
  needs, instead of quietly making the fast loop slow.

Every test has a timeout (pytest-timeout, `timeout` in pyproject.toml); a test that needs longer says so with
`@pytest.mark.timeout(seconds)`.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import PurePath
from typing import Any
from unittest import mock

import pytest

# fixtures that start moto, Terraform, a container engine (tests/conftest.py, tests/image_fixtures.py) or
# sshd (the burst's box, tests/coordinator/burst/test_workflow.py)
SLOW_FIXTURES = frozenset(
    {
        "moto_endpoint",
        "terraform_ready",
        "deployed_stack",
        "podman_engine",
        "clean_checkout",
        "worker_image",
        "box",
    }
)
# programs and modules a fast test must not start
SLOW_PROGRAMS = frozenset({"terraform", "podman", "buildah", "docker", "sshd", "chromium", "debootstrap"})
SLOW_MODULES = frozenset(
    {
        "coordinator.sim.moto_main",
        "inference.worker",
        "coordinator.sim.paced_worker",
        "coordinator.sim.worker_boot",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def slow_part(argv: Sequence[str]) -> str | None:
    """What of `argv` makes the process a slow test's: a program or a `-m` module of the lists above."""
    if not argv:
        return None
    program = PurePath(argv[0]).name
    if program in SLOW_PROGRAMS and not argv[0].startswith(tempfile.gettempdir()):  # not a test's stand-in
        return program
    for flag, module in itertools.pairwise(argv):
        if flag == "-m" and module in SLOW_MODULES:
            return f"python -m {module}"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):  # fixtures too: a module's sshd or emulator starts in the first test's setup
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _guarded(item):
        return (yield)


@contextlib.contextmanager
def _guarded(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("slow") is not None:
        yield
        return
    original = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        argv = [args] if isinstance(args, str | bytes | PurePath) else list(args)
        if (part := slow_part([str(a) for a in argv])) is not None:
            pytest.fail(f"{item.nodeid} starts {part}: mark it @pytest.mark.slow", pytrace=False)
        original(self, args, *rest, **options)

    with mock.patch.object(subprocess.Popen, "__init__", guarded):
        yield
