"""The default dataset: movie-review sentences from the `vaderSentiment` source distribution.

Hutto, C.J. & Gilbert, E.E. (2014). VADER: A Parsimonious Rule-based Model for Sentiment Analysis of
Social Media Text. ICWSM-14. The sdist's `additional_resources/hutto_ICWSM_2014.tar.gz` holds
`movieReviewSnippets_GroundTruth.txt`: 10,605 lines `id<TAB>mean_rating<TAB>sentence` (MIT licence).

Sentences rated exactly 0 (37) have no sentiment and are left out; the other 10,568 are shuffled with a
fixed seed. The first `DATASET_ROWS` form the inference dataset (id, text, label); the last `EVAL_ROWS` of
the shuffled list are the held-out evaluation set of the model, and the rest is its training set.
"""

from __future__ import annotations

import hashlib
import io
import random
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from coordinator.errors import DataError

VADER_REQUIREMENT = "vaderSentiment==3.3.2"
VADER_SDIST = "vaderSentiment-3.3.2.tar.gz"
INNER_ARCHIVE = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
MOVIE_FILE = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
MOVIE_FILE_SHA256 = "c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350"
DATASET_ROWS = 10_000
EVAL_ROWS = 2_000
SHUFFLE_SEED = 20_140_601  # ICWSM-14; any fixed number works, this one is easy to recognise


@dataclass(frozen=True, slots=True)
class Sentence:
    sentence_id: int
    text: str
    label: str  # "positive" or "negative"


def fetch_vader_sdist(cache_dir: Path) -> Path:
    """Download the sdist by name from the package registry (once; later calls use the cache)."""
    target = cache_dir / VADER_SDIST
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        VADER_REQUIREMENT,
        "--dest",
        str(cache_dir),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not target.is_file():
        raise DataError(
            f"could not download {VADER_REQUIREMENT} (sdist) into {cache_dir}: {result.stderr.strip()[-500:]}"
        )
    return target


def read_movie_sentences(sdist: Path) -> list[Sentence]:
    """Parse the ground-truth file inside the sdist; checks its hash first."""
    with tarfile.open(sdist, "r:gz") as outer:
        member = outer.extractfile(INNER_ARCHIVE)
        if member is None:
            raise DataError(f"{sdist}: {INNER_ARCHIVE} not found")
        with tarfile.open(fileobj=io.BytesIO(member.read()), mode="r:gz") as inner:
            movie = inner.extractfile(MOVIE_FILE)
            if movie is None:
                raise DataError(f"{sdist}: {MOVIE_FILE} not found in {INNER_ARCHIVE}")
            raw = movie.read()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MOVIE_FILE_SHA256:
        raise DataError(f"{sdist}: {MOVIE_FILE} has sha256 {digest}, expected {MOVIE_FILE_SHA256}")
    sentences = []
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        fields = line.split("\t", 2)
        if len(fields) != 3:
            raise DataError(f"{sdist}: {MOVIE_FILE} line {number}: expected 3 tab-separated fields")
        rating = float(fields[1])
        if rating != 0:
            sentences.append(
                Sentence(int(fields[0]), fields[2].strip(), "positive" if rating > 0 else "negative")
            )
    return sentences


@dataclass(frozen=True, slots=True)
class Splits:
    dataset: list[Sentence]  # the inference dataset
    train: list[Sentence]  # the model's training set
    evaluation: list[Sentence]  # held out from training


def split_sentences(sentences: list[Sentence]) -> Splits:
    shuffled = sorted(sentences, key=lambda s: s.sentence_id)
    random.Random(SHUFFLE_SEED).shuffle(shuffled)
    if len(shuffled) < DATASET_ROWS or len(shuffled) <= EVAL_ROWS:
        raise DataError(f"only {len(shuffled)} sentences; need at least {DATASET_ROWS}")
    return Splits(
        dataset=shuffled[:DATASET_ROWS],
        train=shuffled[:-EVAL_ROWS],
        evaluation=shuffled[-EVAL_ROWS:],
    )


def sentences_table(sentences: list[Sentence]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([s.sentence_id for s in sentences], type=pa.int64()),
            "text": pa.array([s.text for s in sentences], type=pa.string()),
            "label": pa.array([s.label for s in sentences], type=pa.string()),
        }
    )
