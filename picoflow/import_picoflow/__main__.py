"""`python -m picoflow.import_picoflow --help`."""

import sys

from picoflow.import_picoflow._cli import main

sys.exit(main())
