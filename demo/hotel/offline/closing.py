"""The offline model in EndStep: one closing line, with the booking's facts when there is one."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from demo.hotel.offline.conversation import Conversation
from demo.hotel.offline.reply import say

FAREWELL = (
    "Thanks for stopping by! You're welcome back any time you need a hotel in the Portland "
    "area. Goodbye!"
)


def decide(conversation: Conversation) -> AIMessage:
    """Confirm the booking the prompt describes, or say goodbye."""
    confirmation = conversation.label("Confirmation number")
    if confirmation is None:
        return say(FAREWELL)
    hotel = conversation.label("Hotel")
    room = conversation.label("Room")
    dates = conversation.label("Dates")
    total = conversation.label("Total")
    return say(
        f"You're all set! Your stay at {hotel} is booked: {dates}, {room}, {total} in total. "
        f"Your confirmation number is {confirmation}. Thank you for choosing HotelFlow!"
    )
