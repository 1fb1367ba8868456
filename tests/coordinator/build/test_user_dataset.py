"""`spotbatch data prepare`: the default dataset, and a user's file with every kind of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coordinator.build.dataset import read_movie_sentences, split_sentences
from coordinator.cli import main


def prepare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["data", "prepare", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "prepared.parquet"


def test_csv_with_named_text_column_and_no_ids(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "reviews.csv"
    source.write_text('review,stars\n"Great, really great",5\nDull,1\n', encoding="utf-8")
    code, stdout, _ = prepare(capsys, "--input", str(source), "--text-column", "review", "--output", str(out))
    assert code == 0, stdout
    table = pq.read_table(out)
    assert table.column("id").to_pylist() == [0, 1]
    assert table.column("text").to_pylist() == ["Great, really great", "Dull"]
    assert "ids: the row numbers 0..1 (no 'id' column)" in stdout  # said, never silent


def test_jsonl_keeps_ids_and_labels(tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "data.jsonl"
    source.write_text(
        '{"id": "a1", "text": "fine", "label": "positive"}\n'
        '{"id": "b2", "text": "bad", "label": "negative"}\n'
    )
    assert prepare(capsys, "--input", str(source), "--output", str(out))[0] == 0
    table = pq.read_table(out)
    assert table.column("id").to_pylist() == ["a1", "b2"]
    assert table.column("label").to_pylist() == ["positive", "negative"]


def test_parquet_input_round_trips(tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [5, 6], "body": ["one", "two"]}), source)
    assert prepare(capsys, "--input", str(source), "--text-column", "body", "--output", str(out))[0] == 0
    assert pq.read_table(out).column("text").to_pylist() == ["one", "two"]


@pytest.mark.parametrize(
    ("name", "content", "args", "message"),
    [
        ("empty.csv", b"", (), "empty.csv: the file is empty"),
        (  # the user's ids, which row numbers replaced silently (exit 0)
            "upper.csv",
            b"ID,text\n70,a\n80,b\n",
            (),
            "upper.csv: no column 'id', but 'ID' looks like it: pass --id-column 'ID' (or --id-column ''",
        ),
        ("spaced.csv", b" id,text\n70,a\n", (), "spaced.csv: no column 'id', but ' id' looks like it"),
        (  # a RecursionError traceback
            "deep.jsonl",
            b'{"id": 1, "text": "a"}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n",
            (),
            "deep.jsonl: line 2: nested too deep to be a record",
        ),
        ("header.csv", b"id,text\n", (), "header.csv: the file has no data rows"),
        ("nocol.csv", b"id,body\n1,hello\n", (), "nocol.csv: column 'text' not found; columns are: id, body"),
        (
            "latin1.csv",
            b"id,text\n1,fine\n2,caf\xe9 au lait\n",
            (),
            "latin1.csv: line 3: bytes are not valid UTF-8 (byte 0xe9 at offset 20)",
        ),
        (
            "blank.csv",
            b'id,text\n1,ok\n2,""\n3,  \n4,fine\n',
            (),
            "blank.csv: column 'text': 2 null or empty text(s) at rows 2, 3; fix them, or pass "
            "--allow-empty-texts",
        ),
        (
            "nulls.jsonl",
            b'{"id": 1, "text": null}\n',
            (),
            "nulls.jsonl: column 'text': 1 null or empty text(s) at row 1",
        ),
        (
            "badjson.jsonl",
            b'{"id": 1, "text": "a"}\n{"id": 2, "text": \n',
            (),
            "badjson.jsonl: line 2: not valid JSON",
        ),
        (
            "dup.csv",
            b"id,text\n7,a\n8,b\n7,c\n",
            (),
            "dup.csv: column 'id': duplicate id 7 at row 3 (first at row 1)",
        ),
        (
            "numbers.jsonl",
            b'{"id": 1, "text": 42}\n',
            (),
            "numbers.jsonl: column 'text', row 1: expected text, got int 42",
        ),
        (  # a misspelt name numbered the rows silently (only the case of "ID" was refused)
            "misspelt.csv",
            b"id,text\n70,a\n",
            ("--id-column", "nope"),
            "misspelt.csv: --id-column 'nope' not found; columns are: id, text (--id-column '' numbers",
        ),
        ("data.xlsx", b"PK\x03\x04", (), "data.xlsx: unsupported file type '.xlsx'"),
        ("broken.parquet", b"PAR1 not really", (), "broken.parquet: not a readable Parquet file"),
    ],
)
def test_bad_input_names_file_column_and_row(
    tmp_path: Path,
    out: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes,
    args: tuple[str, ...],
    message: str,
) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(out), *args)
    assert code == 2
    assert message in stderr
    assert str(tmp_path) in stderr  # the full path of the file
    assert not out.exists()  # nothing half-written


def test_empty_texts_kept_when_allowed(tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "blank.csv"
    source.write_text('id,text\n1,ok\n2,""\n')
    code, stdout, _ = prepare(capsys, "--input", str(source), "--output", str(out), "--allow-empty-texts")
    assert code == 0
    assert "1 empty text(s) kept" in stdout
    assert pq.read_table(out).column("text").to_pylist() == ["ok", ""]


def test_long_texts_are_counted(tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "long.jsonl"
    source.write_text(
        json.dumps({"id": 1, "text": "word " * 5_000}) + "\n" + json.dumps({"id": 2, "text": "short"}) + "\n"
    )
    code, stdout, _ = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0
    assert "1 text(s) longer than the model's window" in stdout


@pytest.mark.slow
def test_default_dataset_from_the_vader_sdist(tmp_path: Path) -> None:
    """Downloads the sdist from the package registry, through the real console entry point."""
    env_home = {"SPOTBATCH_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "data", "prepare"],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env_home},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    table = pq.read_table(tmp_path / "build" / "data" / "movie_sentences.parquet")
    assert table.num_rows == 10_000
    assert table.schema.names == ["id", "text", "label"]
    assert set(table.column("label").to_pylist()) == {"positive", "negative"}
    assert len(set(table.column("id").to_pylist())) == 10_000
    sentences = read_movie_sentences(tmp_path / ".cache" / "spotbatch" / "vaderSentiment-3.3.2.tar.gz")
    assert len(sentences) == 10_568  # 10,605 lines less the 37 rated exactly 0
    splits = split_sentences(sentences)
    assert not {s.sentence_id for s in splits.train} & {s.sentence_id for s in splits.evaluation}


# -- inputs that crashed or silently changed ids on main (issue 15, items 8 and 9) --------------------


def write_parquet_uint64(path: Path) -> None:
    pq.write_table(pa.table({"id": pa.array([2**64 - 1, 1], pa.uint64()), "text": ["max", "one"]}), path)


def test_ids_minus_zero_and_zero_stay_two_ids(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They passed the duplicate check as two texts, then both became 0 as integers (the merge refused
    after an instance was paid): "-0" is no integer's canonical text, so the ids stay text, both."""
    source = tmp_path / "zeros.csv"
    source.write_bytes(b"id,text\n0,a\n-0,b\n")
    code, _, _ = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0
    assert pq.read_table(out).column("id").to_pylist() == ["0", "-0"]


@pytest.mark.parametrize(
    ("name", "content", "ids"),
    [
        ("bom.csv", "\ufeffid,text\n10,a\n11,b\n".encode(), [10, 11]),  # the BOM is not part of `id`
        ("zeros.csv", b"id,text\n007,a\n8,b\n", ["007", "8"]),  # 007 is not 7: every id kept as text
        ("arabic.csv", "id,text\n\u0663,a\n\u0664,b\n".encode(), ["\u0663", "\u0664"]),
        ("superscript.csv", "id,text\n\u00b2,a\n3,b\n".encode(), ["\u00b2", "3"]),
        ("big.jsonl", b'{"id": 18446744073709551615, "text": "a"}\n{"id": 1, "text": "b"}\n', None),
        ("uint64.parquet", None, ["18446744073709551615", "1"]),
        ("bom.jsonl", '\ufeff{"id": 1, "text": "a"}\n'.encode(), [1]),
    ],
)
def test_ids_are_kept_exactly(
    tmp_path: Path,
    out: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes | None,
    ids: list[object] | None,
) -> None:
    source = tmp_path / name
    if content is None:
        write_parquet_uint64(source)
    else:
        source.write_bytes(content)
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0, stderr
    expected = ids if ids is not None else ["18446744073709551615", "1"]
    assert pq.read_table(out).column("id").to_pylist() == expected


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "nan.jsonl",
            b'{"id": NaN, "text": "a"}\n',
            "row 1: id NaN is a float; ids must be integers or text",
        ),
        ("float.jsonl", b'{"id": 1.5, "text": "a"}\n', "row 1: id 1.5 is a float"),
        ("bool.jsonl", b'{"id": true, "text": "a"}\n', "row 1: id True is a bool"),
        ("surrogate.jsonl", b'{"id": 1, "text": "a\\ud800b"}\n', "row 1: '\\ud800' at character 1 is a lone"),
        ("surrogate-id.jsonl", b'{"id": "\\udfff", "text": "a"}\n', "column 'id', row 1: '\\udfff'"),
    ],
)
def test_ids_and_texts_that_cannot_be_kept_are_refused_in_one_line(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, message: str
) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 2 and message in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()


def test_a_csv_field_longer_than_the_csv_modules_default_limit(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "long.csv"
    source.write_text("id,text\n1," + "x" * 200_000 + "\n2,short\n", encoding="utf-8")
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0, stderr
    assert [len(t) for t in pq.read_table(out).column("text").to_pylist()] == [200_000, 5]


def test_an_id_column_of_another_case_is_kept_when_named(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "upper.csv"
    source.write_bytes(b"ID,text\n70,a\n80,b\n")
    code, stdout, _ = prepare(capsys, "--input", str(source), "--id-column", "ID", "--output", str(out))
    assert code == 0 and "row numbers" not in stdout
    assert pq.read_table(out).column("id").to_pylist() == [70, 80]
    code, stdout, _ = prepare(capsys, "--input", str(source), "--id-column", "", "--output", str(out))
    assert code == 0 and pq.read_table(out).column("id").to_pylist() == [0, 1] and "row numbers" in stdout


@pytest.mark.parametrize("kind", [".csv", ".jsonl", ".parquet"])
def test_a_file_bigger_than_a_chunk_is_streamed_its_duplicates_found_across_chunks_and_spills(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A file is read 300 records at a time, the id hashes go to disk every 1,000, and row groups hold
    1,000 rows (not a chunk's 300): what a 100 M-row file does at its real sizes, at a test's."""
    monkeypatch.setattr("coordinator.build.record_stream.CHUNK_ROWS", 300)
    monkeypatch.setattr("coordinator.build.unique_ids.MEMORY_ENTRIES", 1_000)
    monkeypatch.setattr("inference.dataset.ROW_GROUP_BYTES", 1)  # the smallest group: MIN_ROW_GROUP_ROWS
    ids = [f"r{i}" for i in range(4_321)]
    texts = [f"text {i}" for i in range(4_321)]
    source = _write_rows(tmp_path / f"big{kind}", ids, texts)
    code, stdout, stderr = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0, stderr
    assert "wrote 4321 rows" in stdout
    written = pq.ParquetFile(out)
    assert [written.metadata.row_group(g).num_rows for g in range(written.num_row_groups)] == [1_000] * 4 + [
        321
    ]
    assert (
        written.read().column("id").to_pylist() == ids and written.read().column("text").to_pylist() == texts
    )
    ids[4_000] = ids[123]  # a repeat far from its first, in another chunk and another spill
    ids[4_100] = ids[4_000]
    source = _write_rows(tmp_path / f"dup{kind}", ids, texts)
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(tmp_path / "refused.parquet"))
    assert code == 2
    assert stderr.strip() == (
        f"error: {source}: column 'id': duplicate id 'r123' at row 4001 (first at row 124); "
        "2 duplicate(s) in all"
    )
    assert not (tmp_path / "refused.parquet").exists() and not list(tmp_path.glob(".*.tmp"))


def _write_rows(path: Path, ids: list[str], texts: list[str]) -> Path:
    if path.suffix == ".parquet":
        pq.write_table(pa.table({"id": ids, "text": texts}), path, row_group_size=777)
    elif path.suffix == ".jsonl":
        path.write_text(
            "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts, strict=True))
        )
    else:
        path.write_text("id,text\n" + "".join(f"{i},{t}\n" for i, t in zip(ids, texts, strict=True)))
    return path


def test_a_csv_with_bare_carriage_returns_ends_its_lines_there(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "classic-mac.csv"
    source.write_bytes(b'id,text\r1,"two\rlines"\r2,b\r')
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0, stderr
    assert pq.read_table(out).to_pydict() == {"id": [1, 2], "text": ["two\rlines", "b"]}


def test_ids_whose_hashes_collide_are_looked_at_again_and_kept_when_they_differ(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Equal hashes are not equal ids: with every id hashed alike, every row is a candidate, and the
    second look at the ids themselves finds none repeated."""
    import numpy as np

    monkeypatch.setattr(
        "coordinator.build.unique_ids.id_hashes", lambda ids: np.full(len(ids), 42, dtype=np.uint64)
    )
    source = _write_rows(tmp_path / "same-hash.csv", ["7", "8", "9"], ["a", "b", "c"])
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(out))
    assert code == 0, stderr
    assert pq.read_table(out).column("id").to_pylist() == [7, 8, 9]


def test_an_output_that_cannot_be_written_is_one_line_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.csv"
    source.write_text("id,text\n1,a\n")
    code, _, stderr = prepare(capsys, "--input", str(source), "--output", str(source / "out.parquet"))
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert f"{source / 'out.parquet'}: cannot write the dataset (" in stderr and str(source) in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
