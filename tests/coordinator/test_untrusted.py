"""JSON from outside the coordinator's trust is parsed with limits: it can be refused, never raise past the
caller."""

from __future__ import annotations

import pytest

from coordinator.errors import UntrustedInput
from coordinator.untrusted import load_json, nesting


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert nesting('{"message": "[[[[[[[[[[[[[[[[[[[[ {{{{ \\" ]]]]"}') == 1
    assert load_json('{"a": {"b": ["[[[["]}}', what="x", max_depth=3) == {"a": {"b": ["[[[["]}}


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xff", "x: not UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "x: nested deeper than 16"),
        ("1" * 300_000, "x: 300,000 bytes, more than 262,144"),
        ("{'single': 1}", "x: not JSON"),
        ('{"rows_done": ' + "9" * 5_000 + "}", "x: an integer of 5,000 digits"),  # Python's digit limit
        ('{"ts": -1' + "0" * 400 + "}", "x: an integer of 401 digits"),  # float() of it overflows
        ('{"ts": 1e999}', "x: 1e999 is not a finite number"),
        ('{"ts": -Infinity}', "x: -Infinity is not a number"),
        ('{"ts": NaN}', "x: NaN is not a number"),
    ],
)
def test_what_json_alone_would_raise_or_swallow_is_one_refusal(data: bytes | str, why: str) -> None:
    with pytest.raises(UntrustedInput, match=why):
        load_json(data, what="x")


def test_numbers_a_job_writes_pass() -> None:
    assert load_json('{"a": 12345678901234567890, "b": -0.5, "c": 1e-400}', what="x") == {
        "a": 12345678901234567890,
        "b": -0.5,
        "c": 0.0,
    }
