"""The job's shape options are declared once (`commands/options.py`): every command that takes `--rows`,
`--segments` or `--segment-minutes` refuses a count below 1 or minutes not above 0 alike, in one line that
names the option and the value, before it does anything."""

from __future__ import annotations

import pytest

from coordinator.cli import main

SHAPED = {  # command (with what it needs besides) -> the shape options it takes
    ("run", "--input-key", "data/x.parquet"): (
        "--rows",
        "--segments",
        "--segment-minutes",
        "--max-instances",
    ),
    ("simulate",): ("--rows", "--segments"),
    ("plan",): ("--rows", "--segments", "--segment-minutes"),
    ("whatif", "--deadline-hours", "10"): ("--rows",),
    ("burst", "payload"): ("--rows",),
}
CASES = [
    (command, option, value)
    for command, options in SHAPED.items()
    for option in options
    for value in (
        ("0", "-3", "ten")
        if option == "--rows"
        else ("0", "-3", "ten", "10001")
        if option in ("--segments", "--max-instances")
        else ("0", "-1", "nan", "inf")
    )
]


@pytest.mark.parametrize(("command", "option", "value"), CASES)
def test_a_shape_option_out_of_range_is_one_line_naming_it(
    command: tuple[str, ...], option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, option, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option} {value}: ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "command", [("fetch", "{}"), ("run", "--input-key", "data/x.parquet", "--job-id", "{}")]
)
@pytest.mark.parametrize("job", ["../other-job", "a/b", ".hidden", "x" * 49, ""])
def test_a_job_id_that_is_no_name_is_refused_before_anything_is_read(
    command: tuple[str, ...], job: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`spotbatch fetch ../<job>` read another prefix and wrote outside runs/."""
    with pytest.raises(SystemExit) as exited:
        main([part.replace("{}", job) for part in command])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"{job!r}: 1-48 letters, digits" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("key", ["other/x.parquet", "x.parquet", "data/", "jobs/j/parts/"])
def test_an_input_key_outside_data_is_refused_before_anything_is_read(
    key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workers may read only data/: a key elsewhere was listed, paid for, then denied to every worker."""
    with pytest.raises(SystemExit) as exited:
        main(["run", "--input-key", key])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: --input-key {key}: the job's workers may read only data/"), err
