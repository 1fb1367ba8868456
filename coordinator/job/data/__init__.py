"""The job's data in and out: its input as files and segments (with each segment's id digest), the job's
start in its state file, exactly-once proven from manifests, and the output merged or fetched to local
files. It imports neither the loop nor the AWS adapter (it reads and writes through an object store).

Usage::

    from coordinator.job.data import fetch_output, list_input, verify_outputs
"""

from coordinator.job.data.fetch import Fetched, fetch_output, read_job_manifest
from coordinator.job.data.input_dataset import InputFile, cut_segments, input_digests, list_input
from coordinator.job.data.job_open import open_job
from coordinator.job.data.merge import MergeReport, merge_results
from coordinator.job.data.result_files import ResultFiles
from coordinator.job.data.verify import JobManifest, verify_outputs

__all__ = [
    "Fetched",
    "InputFile",
    "JobManifest",
    "MergeReport",
    "ResultFiles",
    "cut_segments",
    "fetch_output",
    "input_digests",
    "list_input",
    "merge_results",
    "open_job",
    "read_job_manifest",
    "verify_outputs",
]
