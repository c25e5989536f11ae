"""Instructions per in-process `/ai/run` request, counted by callgrind (issue 39, item 2).

`profile_turn.py`'s app and requests (no sockets, no uvicorn), run under valgrind's callgrind
twice, for `--requests` and for three times as many after the same warm-up; the difference over
the extra requests is one request's instructions, without start-up. Unlike CPU time it does not
move with the load on the host, so it is what item 2 measured each change with. Run by hand
(valgrind makes Python about 50× slower: a minute or two per row):

    .venv/bin/python bench/turn_instructions.py [--requests 100] [--stores sqlite,memory]
        [--scenario chat|tool] [--model agenerate|scripted]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def count(store: str, requests: int, scenario: str, model: str) -> int:
    """Instructions of a whole child run that serves `requests` requests."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                sys.executable, __file__, "--child", "--stores", store,
                "--requests", str(requests), "--scenario", scenario, "--model", model,
            ],
            check=True, capture_output=True,
        )  # fmt: skip
        found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit(f"no summary in {out}")
        return int(found.group(1))


async def child(args: argparse.Namespace) -> None:
    """Serve the requests in process (the measured part of a count)."""
    sys.path.insert(0, str(HERE))
    from profile_turn import drive, with_app

    args.store, args.turns_per_session = args.stores, 20
    with tempfile.TemporaryDirectory() as tmp:
        await with_app(args, tmp, lambda app: drive(app, args.requests, 20))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite,memory")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--scenario", choices=("chat", "tool"), default="chat")
    parser.add_argument("--model", choices=("agenerate", "scripted"), default="agenerate")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args))
        return
    for store in args.stores.split(","):
        low = count(store, args.requests, args.scenario, args.model)
        high = count(store, 3 * args.requests, args.scenario, args.model)
        per = (high - low) / (2 * args.requests)
        print(f"{store:>7} {args.scenario} {args.model}: {per / 1e6:.3f} M instructions/request")


if __name__ == "__main__":
    main()
