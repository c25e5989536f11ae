"""`python -m picoflow.import_picoflow`: convert PicoFlow sessions from files or MongoDB."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from picoflow.flow import Flow
from picoflow.import_picoflow._convert import convert
from picoflow.import_picoflow._report import ImportReport
from picoflow.import_picoflow._sources import read_json, read_mongo, write_files, write_store
from picoflow.stores import Store, from_url

__all__ = ["main"]

EPILOG = """examples:
  python -m picoflow.import_picoflow sessions.json --out imported/
  python -m picoflow.import_picoflow export.jsonl --store sqlite:///sessions.db \\
      --flow demo.hotel.flow:HotelFlow
  python -m picoflow.import_picoflow --mongo mongodb://localhost:27017 --database pico \\
      --collection sessions --store mongodb://localhost:27017/picoflow --report report.json

exit status: 0 every document was converted; 1 some were not PicoFlow documents (or, with
--strict, something was lost); 2 bad arguments."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m picoflow.import_picoflow",
        description="Convert PicoFlow (TypeScript) session documents into picoflow sessions.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_sources(parser)
    _add_target(parser)
    _add_conversion(parser)
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="also write the reports as JSON"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 if anything was lost")
    return parser


def _add_sources(parser: argparse.ArgumentParser) -> None:
    """Where the PicoFlow documents come from: files, or a MongoDB collection."""
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="JSON files: a document, a list, or one document per line",
    )
    parser.add_argument("--mongo", metavar="URI", help="read a MongoDB collection instead")
    parser.add_argument("--database", help="the MongoDB database holding PicoFlow's sessions")
    parser.add_argument("--collection", default="sessions", help="default: sessions")
    parser.add_argument(
        "--query",
        type=_query,
        metavar="JSON",
        help='only the documents matching this filter, e.g. \'{"runStatus": "running"}\'',
    )


def _add_target(parser: argparse.ArgumentParser) -> None:
    """Where the converted sessions go: exactly one of a folder and a store."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, metavar="DIR", help="write <id>.json files here")
    target.add_argument(
        "--store",
        metavar="URL",
        help="create the sessions in this store (sqlite:///path, mongodb://.../db)",
    )


def _add_conversion(parser: argparse.ArgumentParser) -> None:
    """How documents are converted: the flow that continues them, renames, expiry."""
    parser.add_argument(
        "--flow",
        metavar="MODULE:CLASS",
        help="the picoflow Flow that will "
        "continue the sessions (names and steps are checked against it)",
    )
    parser.add_argument("--flow-name", help="store the sessions under this flow name")
    parser.add_argument(
        "--rename",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rename a step (repeatable)",
    )
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rename a memory namespace (repeatable)",
    )
    parser.add_argument(
        "--drop-expiry",
        action="store_true",
        help="drop the older format's expireAfter instead of keeping it",
    )


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Run the import; return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        options = _options(args)
        docs = asyncio.run(_read(args))
    except ValueError as exc:
        parser.error(str(exc))
    return asyncio.run(_import(args, docs, options, out or sys.stdout))


async def _import(
    args: argparse.Namespace, docs: list[Any], options: dict[str, Any], stream: TextIO
) -> int:
    try:  # a bad store URL stops the run before anything is converted or written
        store = from_url(args.store) if args.store else None
    except ValueError as exc:
        print(f"python -m picoflow.import_picoflow: error: {exc}", file=sys.stderr)
        return 2
    converted, reports, failures = _convert_all(docs, options)
    for report in reports:
        print(report.render(), file=stream)
    for failure in failures:
        print(f"not imported: {failure}", file=stream)
    print(await _write(args, store, converted), file=stream)
    if args.report:
        data = {"sessions": [r.as_dict() for r in reports], "not_imported": failures}
        args.report.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    lost = any(report.lost for report in reports)
    return 1 if failures or (args.strict and lost) else 0


def _options(args: argparse.Namespace) -> dict[str, Any]:
    if bool(args.files) == bool(args.mongo):
        raise ValueError("give JSON files or --mongo URI (with --database), not both or neither")
    if args.mongo and not args.database:
        raise ValueError("--mongo needs --database (the database holding PicoFlow's sessions)")
    options: dict[str, Any] = {
        "renames": _pairs("--rename", args.rename),
        "namespaces": _pairs("--namespace", args.namespace),
        "keep_expiry": not args.drop_expiry,
    }
    options["flow_name"] = args.flow_name
    options["flow"] = _flow_class(args.flow) if args.flow else None
    return options


def _query(text: str) -> dict[str, Any]:
    try:
        query = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg})") from exc
    if not isinstance(query, dict):
        raise argparse.ArgumentTypeError("a MongoDB filter is a JSON object")
    return query


def _pairs(option: str, items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise ValueError(f"{option} takes OLD=NEW, got {item!r}")
        pairs[old] = new
    return pairs


def _flow_class(spec: str) -> type[Flow]:
    module_name, sep, class_name = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), class_name) if sep else None
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--flow {spec!r}: cannot import it ({exc})") from exc
    if not (isinstance(found, type) and issubclass(found, Flow)):
        raise ValueError(f"--flow {spec!r} is not a picoflow Flow class; write module:Class")
    return found


async def _read(args: argparse.Namespace) -> list[Any]:
    if args.mongo:
        return await read_mongo(args.mongo, args.database, args.collection, args.query)
    docs: list[Any] = []
    for path in args.files:
        if not path.is_file():
            raise ValueError(f"{path}: no such file")
        docs += read_json(path)
    return docs


def _convert_all(
    docs: list[Any], options: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[ImportReport], list[str]]:
    converted, reports, failures = [], [], []
    for number, doc in enumerate(docs, start=1):
        try:
            new_doc, report = convert(doc, **options)
        except ValueError as exc:
            failures.append(f"document {number}: {exc}")
            continue
        converted.append(new_doc)
        reports.append(report)
    return converted, reports, failures


async def _write(args: argparse.Namespace, store: Store | None, docs: list[dict[str, Any]]) -> str:
    if store is None:
        write_files(docs, args.out)
        return f"wrote {len(docs)} session(s) to {args.out}"
    try:
        existing = await write_store(docs, store)
    finally:
        await store.aclose()
    skipped = f"; {len(existing)} already there, left alone: {', '.join(existing)}"
    return f"imported {len(docs) - len(existing)} session(s)" + (skipped if existing else "")
