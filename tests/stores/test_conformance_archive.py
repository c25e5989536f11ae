"""The store conformance suite, archive part (M9): every store passes all of it.

Each test runs once per store in `conftest.STORE_FACTORIES`, through the `store` fixture. The
sessions part (P2, P4) is in `test_conformance.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, message_to_dict

from picoflow.stores import Store


def human(position: int, text: str) -> dict[str, Any]:
    return {"position": position, "message": message_to_dict(HumanMessage(text))}


def positions(entries: list[dict[str, Any]]) -> list[int]:
    return [entry["position"] for entry in entries]


async def test_m9_archive_keeps_the_first_entry_per_position(store: Store) -> None:
    await store.archive("s-1", "explore", [human(1, "first budget"), human(2, "budget two")])
    await store.archive("s-1", "explore", [human(1, "retried budget"), human(3, "budget three")])

    assert await store.search_archive("s-1", "explore", "budget") == [
        human(3, "budget three"),
        human(2, "budget two"),
        human(1, "first budget"),
    ]


async def test_m9_archive_works_before_the_session_document_exists(store: Store) -> None:
    await store.archive("s-9", "explore", [human(4, "evicted in the first turn")])

    assert await store.search_archive("s-9", "explore", "evicted") == [
        human(4, "evicted in the first turn")
    ]
    assert await store.delete("s-9") is False
    assert await store.search_archive("s-9", "explore", "evicted") == []


async def test_m9_archive_of_no_entries_does_nothing(store: Store) -> None:
    await store.archive("s-1", "explore", [])

    assert await store.search_archive("s-1", "explore", "") == []


async def test_m9_search_returns_newest_position_first(store: Store) -> None:
    await store.archive("s-1", "explore", [human(p, f"note {p}") for p in (3, 10, 1, 7)])

    assert positions(await store.search_archive("s-1", "explore", "note")) == [10, 7, 3, 1]


async def test_m9_search_pages_hold_ten_entries(store: Store) -> None:
    await store.archive("s-1", "explore", [human(p, f"room {p}") for p in range(1, 26)])

    assert positions(await store.search_archive("s-1", "explore", "room")) == list(
        range(25, 15, -1)
    )
    page_2 = await store.search_archive("s-1", "explore", "room", page=2)
    assert positions(page_2) == list(range(15, 5, -1))
    page_3 = await store.search_archive("s-1", "explore", "room", page=3)
    assert positions(page_3) == [5, 4, 3, 2, 1]
    assert await store.search_archive("s-1", "explore", "room", page=4) == []


async def test_m9_search_honours_page_size(store: Store) -> None:
    await store.archive("s-1", "explore", [human(p, f"room {p}") for p in range(1, 8)])

    page = await store.search_archive("s-1", "explore", "room", page=2, page_size=3)

    assert positions(page) == [4, 3, 2]


async def test_m9_search_ignores_case(store: Store) -> None:
    await store.archive("s-1", "explore", [human(1, "Budget is 300 EUR in ZÜRICH")])

    assert positions(await store.search_archive("s-1", "explore", "bUdGeT eur")) == [1]
    assert positions(await store.search_archive("s-1", "explore", "zürich")) == [1]


async def test_m9_search_requires_every_word(store: Store) -> None:
    await store.archive(
        "s-1",
        "explore",
        [human(1, "hotel in Lisbon"), human(2, "hotel in Porto"), human(3, "Lisbon flights")],
    )

    assert positions(await store.search_archive("s-1", "explore", "hotel lisbon")) == [1]
    assert positions(await store.search_archive("s-1", "explore", "lisbon")) == [3, 1]
    assert await store.search_archive("s-1", "explore", "hotel madrid") == []


async def test_m9_search_matches_words_inside_longer_words(store: Store) -> None:
    await store.archive("s-1", "explore", [human(1, "two breakfasts included")])

    assert positions(await store.search_archive("s-1", "explore", "breakfast")) == [1]


async def test_m9_search_takes_sql_wildcards_literally(store: Store) -> None:
    await store.archive(
        "s-1",
        "explore",
        [human(1, "50% off"), human(2, "500 off"), human(3, "room_a"), human(4, "roomXa")],
    )

    assert positions(await store.search_archive("s-1", "explore", "50%")) == [1]
    assert positions(await store.search_archive("s-1", "explore", "room_a")) == [3]
    assert await store.search_archive("s-1", "explore", "%") == [human(1, "50% off")]
    assert await store.search_archive("s-1", "explore", "\\") == []


async def test_m9_empty_query_lists_the_archive_newest_first(store: Store) -> None:
    await store.archive("s-1", "explore", [human(1, "a"), human(2, "b")])

    assert positions(await store.search_archive("s-1", "explore", "  ")) == [2, 1]


async def test_m9_search_is_isolated_per_session_and_namespace(store: Store) -> None:
    await store.archive("s-1", "explore", [human(1, "hotel in Lisbon")])
    await store.archive("s-1", "present", [human(1, "hotel in Porto")])
    await store.archive("s-2", "explore", [human(1, "hotel in Faro")])

    assert await store.search_archive("s-1", "explore", "hotel") == [human(1, "hotel in Lisbon")]
    assert await store.search_archive("s-1", "present", "hotel") == [human(1, "hotel in Porto")]
    assert await store.search_archive("s-2", "explore", "hotel") == [human(1, "hotel in Faro")]
    assert await store.search_archive("s-2", "present", "hotel") == []


async def test_m9_search_finds_tool_call_arguments(store: Store) -> None:
    call = {"name": "capture_choices", "args": {"city": "Lisbon", "nights": 3}, "id": "call-1"}
    message = message_to_dict(AIMessage(content="", tool_calls=[call]))
    await store.archive("s-1", "explore", [{"position": 5, "message": message}])

    assert await store.search_archive("s-1", "explore", "LISBON") == [
        {"position": 5, "message": message}
    ]
    assert positions(await store.search_archive("s-1", "explore", "capture_choices")) == [5]


async def test_m9_search_reads_list_content_parts(store: Store) -> None:
    message = message_to_dict(HumanMessage(content=[{"type": "text", "text": "Budget 300"}]))
    await store.archive("s-1", "explore", [{"position": 2, "message": message}])

    assert await store.search_archive("s-1", "explore", "budget") == [
        {"position": 2, "message": message}
    ]


async def test_m9_archive_and_search_results_are_private_copies(store: Store) -> None:
    entry = human(1, "hotel in Lisbon")
    await store.archive("s-1", "explore", [entry])
    entry["message"]["data"]["content"] = "changed by the caller"

    found = await store.search_archive("s-1", "explore", "hotel")
    found[0]["message"]["data"]["content"] = "changed by the reader"

    assert await store.search_archive("s-1", "explore", "hotel") == [human(1, "hotel in Lisbon")]


@pytest.mark.parametrize(
    ("entry", "shown"),
    [
        ({"position": "1", "message": {}}, "position='1' and message of type dict"),
        ({"position": -1, "message": {}}, "position=-1 and message of type dict"),
        ({"position": 1, "message": "hi"}, "position=1 and message of type str"),
        ({"message": {}}, "position=None and message of type dict"),
    ],
)
async def test_m9_archive_rejects_malformed_entries_and_writes_nothing(
    store: Store, entry: dict[str, Any], shown: str
) -> None:
    with pytest.raises(ValueError) as caught:
        await store.archive("s-1", "explore", [human(1, "fine"), entry])

    assert str(caught.value) == (
        "Cannot archive into session 's-1', namespace 'explore': each entry must be "
        f"{{'position': int >= 0, 'message': dict}}, got {shown}. Nothing was archived."
    )
    assert await store.search_archive("s-1", "explore", "") == []


@pytest.mark.parametrize(("page", "page_size"), [(0, 10), (1, 0), (-2, 10), (1.5, 10)])
async def test_m9_search_rejects_pages_below_one(store: Store, page: Any, page_size: Any) -> None:
    with pytest.raises(ValueError) as caught:
        await store.search_archive("s-1", "explore", "x", page=page, page_size=page_size)

    assert str(caught.value) == (
        "search_archive pages count from 1 and hold at least one entry, got "
        f"page={page!r}, page_size={page_size!r}."
    )
