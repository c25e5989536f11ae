"""Imported PicoFlow sessions load and continue in HotelFlow, on every store (P2).

The PicoFlow documents are the hand-written ones in `tests/picoflow_docs/`: a G3 (1.5)
session and a G2 one exported from MongoDB, both where the guest has said they want Portland.
After the import the guest goes on with the same session id, gives dates and preferences, and
HotelFlow (on its offline model) presents hotels: the imported history and context are what it
reads. Also here: reading PicoFlow's MongoDB collection, and the command line end to end.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId
from pymongo import MongoClient

from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.import_picoflow import convert, read_json, read_mongo, write_store
from picoflow.import_picoflow._cli import main
from picoflow.stores import SQLiteStore, Store

DOCS = Path(__file__).parent.parent / "picoflow_docs"
ROOT = Path(__file__).parent.parent.parent
FIRST_OFFER = "1. Columbia Slough Lodge — Portland, OR — two beds, 5 nights, total $815.68"
# With flow=HotelFlow, the older document's "ExploreStep" history moves to "hotel-explore".
G2_OPTIONS: dict[str, Any] = {"keep_expiry": False}


def hotel_engine(store: Store) -> FlowEngine:
    return FlowEngine([HotelFlow.using("offline:hotel")], store=store, providers=PROVIDERS)


def imported() -> list[dict[str, Any]]:
    g3, _ = convert(read_json(DOCS / "g3_hotel.json")[0], flow=HotelFlow)
    g2, _ = convert(read_json(DOCS / "g2_hotel.jsonl")[0], flow=HotelFlow, **G2_OPTIONS)
    return [g3, g2]


async def continue_to_offers(engine: FlowEngine, session_id: str) -> None:
    dates = await engine.run("HotelFlow", "July 1 to July 6", session_id)
    assert (dates.success, dates.session_id, dates.step) == (True, session_id, "ExploreStep")
    assert dates.message.startswith("Got it: Jul 1, 2026 → Jul 6, 2026 (5 nights).")
    offers = await engine.run(
        "HotelFlow", "two beds, under $300 a night, with wifi and parking; search now", session_id
    )
    assert (offers.success, offers.session_id, offers.step) == (True, session_id, "PresentStep")
    assert FIRST_OFFER in offers.message


async def test_imported_g3_and_g2_sessions_continue_in_hotelflow(store: Store) -> None:
    docs = imported()
    assert await write_store(docs, store) == []
    engine = hotel_engine(store)
    for doc in docs:
        await continue_to_offers(engine, doc["id"])
        saved = await engine.get_session(doc["id"])
        assert saved is not None
        assert saved["sequence"] == ["ExploreStep", "PresentStep"]
        assert saved["revision"] == 2
        # HotelFlow compacts hotel-explore past 8 messages: the imported turns were summarised
        # (on top of the imported summary) and archived, not lost (M9).
        space = saved["memory"]["hotel-explore"]
        assert space["archived"] > 0 and space["summary_generation"] > 0
        found = await store.search_archive(doc["id"], "hotel-explore", "Portland")
        assert "Hi! I need a hotel in Portland." in [e["message"]["data"]["content"] for e in found]
        assert saved["usage"]["model"]["input_tokens"] > doc["usage"]["model"]["input_tokens"]
    assert await write_store(docs, store) == [docs[0]["id"], docs[1]["id"]]  # run twice: no-op


async def test_an_imported_session_past_its_expiry_starts_anew(store: Store) -> None:
    doc, _ = convert(read_json(DOCS / "g2_hotel.jsonl")[0], flow=HotelFlow)
    await write_store([doc], store)
    result = await hotel_engine(store).run("HotelFlow", "July 1 to July 6", doc["id"])
    assert result.success and result.session_id != doc["id"]


async def test_read_picoflows_mongodb_collection(mongo_server: Any, mongo_database: str) -> None:
    """PyMongo hands back ObjectId and datetime values; they convert like extended JSON."""
    exported = read_json(DOCS / "g2_hotel.jsonl")[0]
    stored = json.loads(json.dumps(exported))
    stored["_id"] = ObjectId(exported["id"])
    stored["createdOn"] = datetime(2026, 3, 22, 19, 3, 50, tzinfo=UTC)
    stored["saveOn"] = datetime(2026, 3, 22, 19, 4, 40, 120000, tzinfo=UTC)
    stored["flows"][0]["steps"][0]["state"]["_saveOn"] = datetime(
        2026, 3, 22, 19, 4, 40, 100000, tzinfo=UTC
    )
    with MongoClient(mongo_server.uri) as client:
        client[mongo_database]["sessions"].insert_one(stored)
    docs = await read_mongo(mongo_server.uri, mongo_database, "sessions")
    assert [convert(d, flow=HotelFlow)[0] for d in docs] == [convert(exported, flow=HotelFlow)[0]]


async def continue_in_sqlite(database: Path, session_id: str) -> None:
    store = SQLiteStore(database)
    try:
        await continue_to_offers(hotel_engine(store), session_id)
    finally:
        await store.aclose()


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out)
    return status, out.getvalue()


def test_cli_imports_files_into_sqlite_and_the_session_continues(tmp_path: Path) -> None:
    database = tmp_path / "sessions.db"
    report = tmp_path / "report.json"
    status, printed = run_cli(
        str(DOCS / "g3_hotel.json"),
        str(DOCS / "g2_hotel.jsonl"),
        "--store",
        f"sqlite:///{database}",
        "--flow",
        "demo.hotel.flow:HotelFlow",
        "--namespace",
        "ExploreStep=hotel-explore",
        "--drop-expiry",
        "--report",
        str(report),
    )
    assert status == 0
    lines = printed.splitlines()
    assert lines[0] == "3b241101-e2bb-4255-8caf-4136c566a962 (G3): 1 lost, 5 changed"
    assert "69c03d430daed53aceb358de (G2): 3 lost, 4 changed" in lines
    assert lines[-1] == "imported 2 session(s)"
    assert [s["source"] for s in json.loads(report.read_text())["sessions"]] == ["G3", "G2"]
    asyncio.run(continue_in_sqlite(database, "69c03d430daed53aceb358de"))
    status, printed = run_cli(str(DOCS / "g3_hotel.json"), "--store", f"sqlite:///{database}")
    assert printed.splitlines()[-1] == (
        "imported 0 session(s); 1 already there, left alone: 3b241101-e2bb-4255-8caf-4136c566a962"
    )


def test_cli_reads_mongodb_and_writes_files(
    mongo_server: Any, mongo_database: str, tmp_path: Path
) -> None:
    with MongoClient(mongo_server.uri) as client:
        client[mongo_database]["sessions"].insert_many(
            [read_json(DOCS / "g3_hotel.json")[0], {"_id": "junk", "hello": 1}]
        )
    status, printed = run_cli(
        "--mongo", mongo_server.uri, "--database", mongo_database, "--out", str(tmp_path / "out")
    )
    running = tmp_path / "running"
    status_running, printed_running = run_cli(
        "--mongo", mongo_server.uri, "--database", mongo_database, "--query",
        '{"runStatus": "running"}', "--out", str(running),
    )  # fmt: skip
    assert status_running == 0  # the junk document does not match the filter
    assert printed_running.splitlines()[-1] == f"wrote 1 session(s) to {running}"
    assert status == 1  # one document was not PicoFlow's
    assert printed.splitlines()[-2:] == [
        "not imported: document 2: not a PicoFlow session document: it has neither a 'flow' "
        "object (PicoFlow 1.5) nor a 'flows' list (older PicoFlow) (id 'junk')",
        f"wrote 1 session(s) to {tmp_path / 'out'}",
    ]
    written = json.loads(
        (tmp_path / "out" / "3b241101-e2bb-4255-8caf-4136c566a962.json").read_text()
    )
    assert written == convert(read_json(DOCS / "g3_hotel.json")[0])[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "x"], "give JSON files or --mongo URI (with --database), not both or neither"),
        (
            ["--mongo", "mongodb://h", "--out", "x"],
            "--mongo needs --database (the database holding PicoFlow's sessions)",
        ),
        (["f.json", "--rename", "Explore", "--out", "x"], "--rename takes OLD=NEW, got 'Explore'"),
        (
            ["f.json", "--flow", "demo.hotel.flow", "--out", "x"],
            "--flow 'demo.hotel.flow' is not a picoflow Flow class; write module:Class",
        ),
        (["missing.json", "--out", "x"], "missing.json: no such file"),
        (
            ["f.json", "--query", "[1]", "--out", "x"],
            "argument --query: a MongoDB filter is a JSON object",
        ),
    ],
)
def test_cli_refuses_bad_arguments(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m picoflow.import_picoflow: error: {message}"
    )


def test_cli_refuses_a_bad_store_url_before_converting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([str(DOCS / "g3_hotel.json"), "--store", "bogus://x"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "python -m picoflow.import_picoflow: error: Unsupported store URL 'bogus://x'. Use "
        "'memory:', 'sqlite:///relative/path.db', 'sqlite:////absolute/path.db', "
        "'mongodb://...' or 'mongodb+srv://...'.\n"
    )


def test_python_dash_m_runs_the_import(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "picoflow.import_picoflow",
            str(DOCS / "g2_hotel.jsonl"),
            "--out",
            str(tmp_path),
            "--strict",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr  # --strict: something was lost
    assert completed.stdout.splitlines()[-1] == f"wrote 1 session(s) to {tmp_path}"
    assert (tmp_path / "69c03d430daed53aceb358de.json").is_file()
