"""The exception tree: one root, an exit code on each class, the tree drawn in full in its docstring."""

from __future__ import annotations

import inspect
from typing import TypeVar

from coordinator import errors
from inference import errors as worker_errors

CODES = {0, 1, 2, 3, 4, 5, 6, 130}
E = TypeVar("E", bound=Exception)


def classes(module: object, root: type[E]) -> list[type[E]]:
    return [c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, root)]


def test_every_error_descends_from_the_root_and_carries_a_known_exit_code() -> None:
    for cls in classes(errors, Exception):
        assert issubclass(cls, errors.SpotbatchError), cls
        assert cls.exit_code in CODES, cls
    for cls in classes(worker_errors, Exception):
        assert issubclass(cls, worker_errors.WorkerError) and cls.exit_code in CODES, cls


def test_the_docstring_draws_every_class() -> None:
    doc = errors.__doc__ or ""
    assert [c.__name__ for c in classes(errors, Exception) if c.__name__ not in doc] == []


def test_retryable_and_do_not_retry_are_apart() -> None:
    both = [
        c
        for c in classes(errors, Exception)
        if issubclass(c, errors.Retryable) and issubclass(c, errors.DoNotRetry)
    ]
    assert both == []
    assert issubclass(errors.CapacityError, errors.Retryable) and issubclass(
        errors.CapacityError, errors.LaunchError
    )
    assert (
        issubclass(errors.BudgetGuardExceeded, errors.DoNotRetry)
        and errors.BudgetGuardExceeded.exit_code == 3
    )
    assert errors.PreflightFailed.exit_code == 4 and errors.Declined.exit_code == 5
    assert worker_errors.Superseded.exit_code == 6 != errors.BudgetGuardExceeded.exit_code


def test_the_documented_table_is_the_code_s() -> None:
    import re

    from tests.conftest import REPO

    section = (REPO / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    table = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    used = {c.exit_code for c in classes(errors, errors.SpotbatchError)}
    used |= {errors.EXIT_OK, errors.EXIT_INTERRUPTED}
    assert table == used
    assert "and 6: superseded" in section and worker_errors.EXIT_SUPERSEDED == 6
