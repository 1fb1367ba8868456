"""`python -m coordinator`: the same as `spotbatch` (`cli.entry_point`)."""

from coordinator.cli import entry_point

entry_point()
