"""The simulator's command line: `python -m picoflow.simulate --store URL --session ID ...`.

It builds the store from a URL (`picoflow.stores.from_url`), runs `simulate_compaction` and
prints one table per session. Bad arguments exit with status 2 and a usage message, a run that
fails (unknown session, store error) with status 1 and the error's message.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from picoflow.errors import PicoflowError
from picoflow.memory import SummaryConfig
from picoflow.simulate._args import check_options
from picoflow.simulate._simulation import SimulationReport, parse_setting, simulate_compaction
from picoflow.stores import from_url
from picoflow.stores.base import Store

__all__ = ["run_cli"]


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Print the comparison table of each session; return the exit code (2: bad arguments)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.setting:
        parser.error("no --setting given: pass at least one, e.g. --setting off --setting 16/8")
    try:
        settings = [
            parse_setting(text, max_tokens=args.max_tokens, whole_turns=args.whole_turns)
            for text in args.setting
        ]
        prices = (args.price, args.summary_price)
        check_options(
            settings, args.namespace, args.summary_tokens, None, args.context_window, prices
        )
        _check_sqlite_file(args.store)
        store = from_url(args.store)
    except (ValueError, TypeError, ImportError) as exc:
        parser.error(str(exc))
    try:
        reports = asyncio.run(_run_cli(store, args, settings))
    except (PicoflowError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for report in reports:
        print(f"Session {report.session_id}")
        print(report.table())
        if args.details:
            print(report.details())
    return 0


def _check_sqlite_file(url: str) -> None:
    """A mistyped SQLite path would create an empty database and find no session in it."""
    path = url.removeprefix("sqlite:///")
    if url.startswith("sqlite:///") and path != ":memory:" and not Path(path).is_file():
        raise ValueError(
            f"No SQLite file at {path!r} (from --store {url!r}). Give the path of the file "
            "the engine writes: sqlite:///relative/path.db or sqlite:////absolute/path.db."
        )


async def _run_cli(
    store: Store, args: argparse.Namespace, settings: list[SummaryConfig | None]
) -> list[SimulationReport]:
    try:
        return await simulate_compaction(
            store,
            args.session,
            settings,
            namespaces=args.namespace,
            summary_tokens=args.summary_tokens,
            context_window=args.context_window,
            price_per_million_tokens=args.price,
            summary_price_per_million_tokens=args.summary_price,
            revisions=args.revisions,
        )
    finally:
        await store.aclose()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m picoflow.simulate",
        description="Replay stored sessions under other compaction settings and compare the "
        "prompt tokens, summaries, evicted ranges and problems of each. No model is called.",
    )
    parser.add_argument("--store", required=True, help="store URL: sqlite:///path.db, mongodb://")
    parser.add_argument(
        "--session",
        action="append",
        required=True,
        help="a session id (write --session=ID if it starts with -)",
    )
    parser.add_argument(
        "--setting", action="append", default=[], help="MIN/RECENT (e.g. 16/8) or off"
    )
    parser.add_argument("--namespace", action="append", help="replay only this namespace")
    parser.add_argument("--max-tokens", type=int, help="max_tokens for every setting")
    parser.add_argument(
        "--whole-turns", action="store_true", help="whole_turns=True for every setting"
    )
    parser.add_argument("--summary-tokens", type=int, help="size of a simulated summary")
    parser.add_argument("--context-window", type=int, help="report requests above this size")
    parser.add_argument("--price", type=float, help="USD per million prompt tokens")
    parser.add_argument("--summary-price", type=float, help="USD per million summary tokens")
    parser.add_argument("--details", action="store_true", help="print the evicted ranges")
    parser.add_argument(
        "--revisions",
        action="store_true",
        help="rebuild the turns from the session's kept revisions too, not only the live "
        "document and the archive (what the session continues after an undo or edit wins)",
    )
    return parser


if __name__ == "__main__":
    sys.exit(run_cli())
