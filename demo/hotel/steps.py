"""HotelFlow's steps: explore the criteria, present the hotels, compare them, end.

Each step is a prompt (``demo.hotel.prompting``), a few ``@tool`` methods that return
transitions, and the state it owns:

* ExploreStep: ``criteria`` — the ``StayCriteria`` of the last search.
* PresentStep: ``offers`` (every match, numbered cheapest first until the next search),
  ``sort`` and ``page`` (what the guest is looking at) and, once booked, ``booking`` (with its
  confirmation number).
* CompareStep: ``selected`` (hotel names picked for comparison) and ``compared`` (the hotels and
  feature of the last table).

The domain work (search, pricing, tables, validation) lives in ``demo.hotel``; the steps only
decide where the conversation goes next.
"""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import Field, ValidationError

from demo.hotel import approvals, catalog, facts, returning
from demo.hotel.booking import (
    Booking,
    Offer,
    booking_reference,
    not_in_list,
    numbered,
    pick_offer,
    pick_offers,
)
from demo.hotel.compare import comparison_table, normalize_feature
from demo.hotel.formats import LIST_OPENER, SORT_KEYS, page_count
from demo.hotel.listing import render_page
from demo.hotel.prompting import (
    booked_prompt,
    compare_prompt,
    explore_prompt,
    farewell_prompt,
    present_prompt,
)
from demo.hotel.returning import UsualStay
from demo.hotel.types import StayCriteria, describe_dates, describe_errors, parse_criteria
from picoflow import EndStep, Step, ToolResult, direct, go, stay, tool

SortKey = Literal["price", "airport", "downtown"]

COMPARISON_FOLLOW_UP = "Compare on another feature, or tell me which hotel you would like to book."


def needs_approval(args: dict[str, Any], step: Step) -> bool:
    """K1: a booking whose total is over `config.approval_limit` waits for an operator."""
    limit = step.get_context("config.approval_limit")
    offer = pick_offer(step.offers(), args["hotel"]) if isinstance(step, HotelStep) else None
    return limit is not None and offer is not None and offer.total > Decimal(str(limit))


class HotelStep(Step):
    """What every HotelFlow stage shares: leaving, today's date, the search and its results."""

    @tool
    def end_chat(self) -> ToolResult:
        """End the conversation when the guest clearly wants to stop or leave."""
        return go(EndStep).with_prompt(farewell_prompt())

    @tool
    async def forget_guest(self) -> ToolResult:
        """Forget what you remember about the guest, when they ask you to forget them or to
        delete their data or preferences; this conversation is then not remembered either."""
        done = await returning.forget(self.flow)
        self.flow.save_step_state(ExploreStep, {"usual": None, "forgotten": True})
        return direct(f"{done} How else can I help with your stay?")

    def on_approval_requested(self, approval: dict[str, Any]) -> str:
        """A booking over the limit waits: say so in the guest's words (issue 35 item 6)."""
        return approvals.requested(
            approval, self.offers(), self.get_context("config.approval_limit")
        )

    def on_message_while_pending(self, message: str, pending: list[dict[str, Any]]) -> str:
        """The guest writes while the booking waits: what waits, in the guest's words."""
        return approvals.still_waiting(pending, self.offers())

    def today(self) -> date:
        """The run's `config.today` (so tests and transcripts are reproducible), else the clock."""
        configured = self.get_context("config.today")
        if configured is None:
            return date.today()
        try:
            return date.fromisoformat(configured)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"config.today must be a date written YYYY-MM-DD, got {configured!r}."
            ) from exc

    def criteria(self) -> StayCriteria | None:
        """The criteria of the last search (ExploreStep's state)."""
        saved = self.flow.get_step_state(ExploreStep, "criteria")
        return StayCriteria.model_validate(saved) if saved else None

    def offers(self) -> list[Offer]:
        """The numbered hotels the guest was shown (PresentStep's state)."""
        saved = self.flow.get_step_state(PresentStep, "offers") or []
        return [Offer.model_validate(offer) for offer in saved]

    async def book(self, hotel: str) -> ToolResult:
        """Book the listed hotel ``hotel`` names and end; refuse what is not in the list.

        The booking becomes the guest's usual stay (``demo.hotel.returning``), unless they asked
        to be forgotten in this session.
        """
        offers, criteria = self.offers(), self.criteria()
        offer = pick_offer(offers, hotel)
        if offer is None or criteria is None:
            return stay(not_in_list([hotel], offers))
        made = int(self.flow.get_step_state(PresentStep, "bookings_made") or 0)
        reference = booking_reference(self.flow.get_session_id(), made)
        booking = Booking.confirm(offer, criteria, self.today(), reference)
        self.flow.save_step_state(
            PresentStep, {"booking": booking.model_dump(mode="json"), "bookings_made": made + 1}
        )
        if not self.flow.get_step_state(ExploreStep, "forgotten"):
            usual = UsualStay(booking.room_type, tuple(criteria.amenities))
            source = {"session_id": self.flow.get_session_id(), "booking": reference}
            await returning.remember(self.flow, usual, source)
        return go(EndStep).with_prompt(booked_prompt(booking))

    def answer(self, hotels: list[str], topic: str) -> ToolResult:
        """Answer a question about listed hotels from the catalog; nothing else changes."""
        offers = self.offers()
        picked, unknown = pick_offers(offers, hotels) if hotels else (offers, [])
        if unknown:
            return stay(not_in_list(unknown, offers))
        try:
            return direct(facts.answer(picked, topic))
        except ValueError as exc:
            return stay(str(exc))

    def forward_to(self, destination: type[Step]) -> ToolResult:
        """Go to ``destination`` and hand it the guest's last sentence to act on."""
        said = next((m for m in reversed(self.get_messages()) if isinstance(m, HumanMessage)), None)
        return go(destination).with_message(said.text) if said is not None else go(destination)


class ExploreStep(HotelStep):
    """Collects dates, budget, room type, amenities and distances, then searches."""

    async def on_start(self) -> None:
        """A new session: a returning guest's usual stay is read once, to be offered."""
        usual = await returning.recall(self.flow)
        if usual is not None:
            self.save_state({"usual": json.loads(usual.as_json())})
        await super().on_start()

    def get_prompt(self) -> str:
        """The criteria prompt, with today's date, the last search and the usual stay."""
        usual = UsualStay.from_json(self.get_state("usual"))
        return explore_prompt(self.today(), self.criteria(), usual)

    @tool(args_schema=StayCriteria)
    def capture_choices(self, criteria: StayCriteria) -> ToolResult:
        """Search hotels with the guest's complete criteria, once they want to see results."""
        today = self.today()
        try:
            criteria = parse_criteria(criteria.model_dump(), today)
        except ValidationError as exc:
            return stay(describe_errors(exc))
        self.save_state({"criteria": criteria.model_dump(mode="json")})
        found = catalog.search(criteria, today)
        if not found:
            return stay(catalog.relax_advice(criteria, today))
        offers = [offer.model_dump(mode="json") for offer in numbered(found)]
        return go(PresentStep).with_state({"offers": offers, "sort": "price", "page": 1})


class PresentStep(HotelStep):
    """Shows the numbered hotels with their totals; the guest books, compares or searches again."""

    def on_enter(self) -> None:
        """A new list is a new conversation about it."""
        self.erase_memory()  # a new list, a new conversation about it

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        """The flow's own opener when no guest message crossed: the model shows the list."""
        return message if message is not None else HumanMessage(LIST_OPENER)

    def get_prompt(self) -> str:
        """The list prompt: every hotel found, in the order shown, and the page the guest sees."""
        return present_prompt(
            self.offers(), self.get_state("sort") or "price", self.page(), self.criteria()
        )

    def page(self) -> int:
        """The page of the list the guest is looking at (from 1)."""
        return int(self.get_state("page") or 1)

    @tool(requires_approval=needs_approval)
    async def chosen_hotel(
        self,
        hotel: Annotated[str, Field(description="The chosen hotel's name exactly as listed.")],
    ) -> ToolResult:
        """Book the hotel the guest explicitly chose to book; this ends the conversation."""
        return await self.book(hotel)

    @tool
    def show_hotels(
        self,
        page: Annotated[int, Field(ge=1, description="The page to show, from 1.")] = 1,
        sort_by: Annotated[
            SortKey | None, Field(description="A new order, only when the guest asks for one.")
        ] = None,
    ) -> ToolResult:
        """Show a page of the list ("more", "next", "previous") or the list in another order.

        The hotels keep their numbers in every order, until the next search.
        """
        sort = sort_by or self.get_state("sort") or "price"
        if sort not in SORT_KEYS:
            return stay(f"Unknown order {sort!r}; choose one of: {', '.join(SORT_KEYS)}.")
        page = min(page, page_count(len(self.offers())))
        self.save_state({"sort": sort, "page": page})
        criteria = self.criteria()
        dates = describe_dates(criteria.dates) if criteria else "your dates"
        return direct(render_page(self.offers(), sort, page, dates))

    @tool
    def answer_question(
        self,
        hotels: Annotated[
            list[str], Field(description="Listed hotels asked about; empty for the whole list.")
        ],
        topic: Annotated[
            str,
            Field(description="price, amenities, room_types, distance, overview, or one amenity."),
        ],
    ) -> ToolResult:
        """Answer a question about listed hotels from the catalog; a question books nothing."""
        return self.answer(hotels, topic)

    @tool
    def search_again(self) -> ToolResult:
        """Go back to the criteria: the guest wants to change or review them, or search again."""
        return self.forward_to(ExploreStep)

    @tool
    def go_compare(
        self,
        hotels: Annotated[
            tuple[str, ...],
            Field(description="Names of the listed hotels the guest wants to compare, if said."),
        ] = (),
    ) -> ToolResult:
        """Compare hotels of the list side by side."""
        picked, unknown = pick_offers(self.offers(), hotels)
        if unknown:
            return stay(not_in_list(unknown, self.offers()))
        selected = {"selected": [offer.name for offer in picked]}
        return self.forward_to(CompareStep).with_state(selected)


class CompareStep(HotelStep):
    """Side-by-side tables of listed hotels on price, amenities, room types or distance."""

    def on_enter(self) -> None:
        """A new comparison is a new conversation."""
        self.erase_memory()

    def get_prompt(self) -> str:
        """The comparison prompt: the list, the hotels selected and the last table."""
        compared = self.get_state("compared") or {}
        return compare_prompt(
            self.offers(),
            self.get_state("selected") or [],
            compared.get("hotels", []),
            compared.get("feature"),
        )

    @tool
    def generate_comparison(
        self,
        hotels: Annotated[list[str], Field(description="Two or more listed hotel names.")],
        feature: Annotated[
            str, Field(description="One of: price, amenities, room_types, distance.")
        ],
    ) -> ToolResult:
        """Show the guest a comparison table of listed hotels on one feature."""
        offers, criteria = self.offers(), self.criteria()
        picked, unknown = pick_offers(offers, hotels)
        if unknown or criteria is None:
            return stay(not_in_list(unknown or hotels, offers))
        try:
            table = comparison_table([offer.quote(criteria) for offer in picked], feature)
        except ValueError as exc:
            return stay(str(exc))
        names = [offer.name for offer in picked]
        self.save_state({"compared": {"hotels": names, "feature": normalize_feature(feature)}})
        reply = f"{table}\n\n{COMPARISON_FOLLOW_UP}"
        return direct(reply).with_content_type("text/markdown")

    @tool(requires_approval=needs_approval)
    async def chosen_hotel(
        self,
        hotel: Annotated[str, Field(description="The chosen hotel's name exactly as listed.")],
    ) -> ToolResult:
        """Book the hotel the guest explicitly chose to book; this ends the conversation."""
        return await self.book(hotel)

    @tool
    def answer_question(
        self,
        hotels: Annotated[
            list[str], Field(description="Listed hotels asked about; empty for the compared ones.")
        ],
        topic: Annotated[
            str,
            Field(description="price, amenities, room_types, distance, overview, or one amenity."),
        ],
    ) -> ToolResult:
        """Answer a question about listed hotels from the catalog; a question books nothing."""
        compared = (self.get_state("compared") or {}).get("hotels", [])
        return self.answer(hotels or compared or self.get_state("selected") or [], topic)

    @tool
    def resume_booking(self) -> ToolResult:
        """Go back to the hotel list: the guest wants to see it again or book from it."""
        return self.forward_to(PresentStep)

    @tool
    def search_again(self) -> ToolResult:
        """Go back to the criteria: the guest wants to change them or search again."""
        return self.forward_to(ExploreStep)
