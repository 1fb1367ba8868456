#!/bin/sh
# Runs the worker from SPOTBATCH_* environment variables (set by user-data); extra arguments pass through,
# so `docker run IMAGE --help` shows the worker's options.
set -eu
exec python -m inference.worker "$@"
