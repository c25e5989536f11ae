"""A returning guest: the usual stay HotelFlow remembers, offers again, and forgets on request.

The flow remembers through picoflow's long-term memory (``flow.memory_bank()``, SPEC L1/L5),
so the guest is whoever owns the session: the signed-in principal, else ``config.user_id``. A
session with neither (anonymous) remembers nothing and has nothing to forget.

* **What is kept**: one ``preference`` entry, "Usual stay: suite; amenities: pool, breakfast
  included.", written by flow code when a booking is made (the room type booked and the
  amenities the guest asked for), whatever the model. A later booking rewrites it. Nothing the
  guest merely said is kept: a search they abandoned is no usual stay.
* **Offered, not applied**: a new session reads it once, at its start, into ExploreStep's state;
  the prompt shows it, and the assistant offers it in place of the room-type question ("Last
  time you chose ... — same again?"). It becomes search criteria only when the guest agrees.
* **Forgotten**: the ``forget_guest`` tool deletes the guest's whole bank, and the session that
  asked remembers nothing more (not even a booking made after).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from demo.hotel.types import Amenity, RoomType

if TYPE_CHECKING:
    from picoflow import Flow

KIND = "preference"
PREFIX = "Usual stay: "
_ENTRY = re.compile(r"^Usual stay: (?P<room>[^;.]+)(?:; amenities: (?P<amenities>[^.]+))?\.$")
NO_OWNER = (
    "I don't keep anything about you between conversations: you are not signed in, so there is "
    "nothing to forget."
)


@dataclass(frozen=True)
class UsualStay:
    """The room type a guest booked last and the amenities they asked for then."""

    room_type: RoomType
    amenities: tuple[Amenity, ...] = ()

    def text(self) -> str:
        """The bank entry: one line a person (or a model reading the bank) understands."""
        extra = f"; amenities: {', '.join(self.amenities)}" if self.amenities else ""
        return f"{PREFIX}{self.room_type}{extra}."

    def describe(self) -> str:
        """In words: "a suite with pool and breakfast included"."""
        room = "a suite" if self.room_type is RoomType.SUITE else f"a {self.room_type} room"
        if not self.amenities:
            return room
        names = [str(a) for a in self.amenities]
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"{room} with {listed}"

    def as_json(self) -> str:
        """The prompt's "Usual stay JSON" value."""
        return json.dumps({"room_type": str(self.room_type), "amenities": list(self.amenities)})

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> UsualStay | None:
        """The usual stay a state or prompt value holds; None if it holds none."""
        if not value or value.get("room_type") not in set(RoomType):
            return None
        known = {str(a): a for a in Amenity}
        amenities = tuple(known[a] for a in value.get("amenities") or [] if a in known)
        return cls(RoomType(value["room_type"]), amenities)

    @classmethod
    def parse(cls, text: str) -> UsualStay | None:
        """The usual stay an entry's text describes; None for any other entry."""
        match = _ENTRY.match(text.strip())
        if match is None or match["room"] not in set(RoomType):
            return None
        names = [a.strip() for a in (match["amenities"] or "").split(",") if a.strip()]
        return cls.from_json({"room_type": match["room"], "amenities": names})


async def recall(flow: Flow) -> UsualStay | None:
    """The guest's usual stay, newest entry first; None for an anonymous or a new guest."""
    bank = flow.memory_bank()
    if bank is None:
        return None
    for entry in await bank.list():
        if entry["kind"] == KIND and (usual := UsualStay.parse(entry["text"])) is not None:
            return usual
    return None


async def remember(flow: Flow, usual: UsualStay, source: dict[str, Any]) -> None:
    """Keep ``usual`` as the guest's one usual stay (the older one is rewritten)."""
    bank = flow.memory_bank()
    if bank is None:
        return
    for entry in await bank.list():
        if entry["kind"] == KIND and UsualStay.parse(entry["text"]) is not None:
            await bank.update(entry["id"], text=usual.text())
            return
    await bank.add(usual.text(), KIND, source)


async def forget(flow: Flow) -> str:
    """Delete everything the guest's bank holds; the confirmation for the guest."""
    bank = flow.memory_bank()
    if bank is None:
        return NO_OWNER
    if await bank.forget():
        done = "Done: I have forgotten what I knew about you from earlier stays"
    else:
        done = "Done: I had nothing remembered about you"
    return f"{done}, and I won't remember this conversation either."
