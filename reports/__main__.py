"""`python -m reports [--runs DIR] [--out DIR]`: the same as `spotbatch report`."""

import sys

from reports.cli import main

if __name__ == "__main__":
    sys.exit(main())
