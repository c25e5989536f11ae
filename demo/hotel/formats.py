"""The text formats the flow writes into prompts and messages, and reads back: defined once.

The steps fill their prompts with these lines, and a model (the offline one in particular)
reads them back: a hotel line of the list, the "Label: value" lines of a prompt, and the opener
the flow itself sends when it enters the list. Both sides use the functions here, so editing a
prompt template cannot silently change what the offline model reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LIST_OPENER = "(The search is done: show the guest the hotels found.)"
"""The message PresentStep sends itself on entry when no guest message crossed: it is the flow
speaking, never a guest's choice."""

TODAY = "Today's date"
STAY = "Stay"
MATCHES = "Hotels found"
SORTED_BY = "Sorted by"
PAGE = "Page shown"
SELECTED = "Selected for comparison"
LAST_COMPARISON = "Last comparison"
CRITERIA_JSON = "Criteria JSON"
USUAL_STAY = "Usual stay JSON"
"""Labels of the "Label: value" lines of the prompts."""

PAGE_SIZE = 10
"""Hotels per page of the list."""

SORT_KEYS = ("price", "airport", "downtown")
"""How the list can be ordered: total price, miles to PDX airport, miles to downtown."""

_OFFER = re.compile(
    r"^(?P<number>\d+)\. (?P<name>.+?) \[(?P<id>H\d{2})\] — (?P<city>.+?) — (?P<room>.+?), "
    r"(?P<nights>\d+) nights?, total \$(?P<total>[\d,]+\.\d{2}) — (?P<airport>[\d.]+) mi to PDX, "
    r"(?P<downtown>[\d.]+) mi to downtown$",
    re.M,
)


@dataclass(frozen=True)
class OfferLine:
    """One hotel line of a list, as written in a prompt."""

    number: int
    name: str
    hotel_id: str
    city: str
    room_type: str
    nights: int
    total: float
    airport: float
    downtown: float

    def prompt_line(self) -> str:
        """The line as a prompt lists it (with the catalog id a tool call may use)."""
        nights = f"{self.nights} night{'s' if self.nights != 1 else ''}"
        return (
            f"{self.number}. {self.name} [{self.hotel_id}] — {self.city} — {self.room_type}, "
            f"{nights}, total ${self.total:,.2f} — {self.airport:g} mi to PDX, "
            f"{self.downtown:g} mi to downtown"
        )

    def guest_line(self) -> str:
        """The line as the guest sees it: no catalog id."""
        return self.prompt_line().replace(f" [{self.hotel_id}]", "", 1)


def read_offers(text: str) -> list[OfferLine]:
    """The hotel lines of a prompt, in the order written."""
    return [
        OfferLine(
            number=int(m["number"]),
            name=m["name"],
            hotel_id=m["id"],
            city=m["city"],
            room_type=m["room"],
            nights=int(m["nights"]),
            total=float(m["total"].replace(",", "")),
            airport=float(m["airport"]),
            downtown=float(m["downtown"]),
        )
        for m in _OFFER.finditer(text)
    ]


def label_line(label: str, value: object) -> str:
    """A "Label: value" line of a prompt."""
    return f"{label}: {value}"


def read_label(text: str, label: str) -> str | None:
    """The value of a "Label: value" line of ``text``, or None when there is none."""
    match = re.search(rf"^{re.escape(label)}: (.+)$", text, re.M)
    return match.group(1).strip() if match else None


def page_value(page: int, pages: int) -> str:
    """The value of the PAGE line: "2 of 3"."""
    return f"{page} of {pages}"


def read_page(value: str | None) -> tuple[int, int]:
    """(page, pages) from a PAGE value; (1, 1) when absent."""
    match = re.match(r"(\d+) of (\d+)", value or "")
    return (int(match[1]), int(match[2])) if match else (1, 1)


def page_count(count: int) -> int:
    """How many pages ``count`` hotels take."""
    return max(1, -(-count // PAGE_SIZE))
