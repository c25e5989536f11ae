"""`python -m picoflow.scenarios run|export ...` (see `_cli`)."""

import sys

from picoflow.scenarios._cli import main

if __name__ == "__main__":
    sys.exit(main())
