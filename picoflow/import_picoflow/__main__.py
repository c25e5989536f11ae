"""`python -m picoflow.import_picoflow --help`."""

import sys

from ._cli import main

sys.exit(main())
