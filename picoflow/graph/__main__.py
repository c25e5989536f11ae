"""`python -m picoflow.graph`: see `picoflow.graph._cli`."""

from ._cli import main

raise SystemExit(main())
