"""Bench only: imported once by `bench.bigjob`'s fork server, so that each attempt forked from it starts
with boto3, pyarrow and an S3 client's service model loaded, as a worker container does once per attempt
at most (a real instance pays its imports once, during the boot the simulator models)."""

import pyarrow.parquet  # noqa: F401  (loaded here for every fork)

from inference.s3_store import make_s3_client

make_s3_client()  # boto3's default session keeps the S3 model: the forks' clients are made quickly
