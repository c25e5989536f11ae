"""``python -m demo`` (``make demo``): chat with HotelFlow; see ``demo/cli.py`` and docs/demo.md."""

from demo.cli import main

raise SystemExit(main())
