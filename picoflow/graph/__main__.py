"""`python -m picoflow.graph`: draw a flow's steps and moves (see `picoflow.graph.main`)."""

from picoflow.graph import main

raise SystemExit(main())
