"""The stages after the intake: review, rating, the quote options, agent follow-up, referral.

The review confirms or corrects the application; ``RateQuoteStep`` (code, no model) rates it;
an eligible quote is shown as a table the model never writes; a selection leads to the
optional follow-up consent; anything else is referred, naming the recorded reasons only.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, StringConstraints

from demo.insurance.base import OWNERS, QuoteFacts, QuoteStep
from demo.insurance.jsjson import iso_string
from demo.insurance.presenter import comparison_table, label, options_table
from demo.insurance.prompts import CONTACT, PRESENT, REFERRAL, REVIEW, with_facts
from demo.insurance.rating import quote
from demo.insurance.schemas import ConfirmSchema, ContactRequestSchema, Deductible, Section
from picoflow import LogicStep, ToolResult, direct, go, stay, tool

Change = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


class ReviewStep(QuoteStep):
    """The whole application read back: confirmed, or one section corrected."""

    erase_on_enter: ClassVar[bool] = True
    # A correction goes to the section's owner, looked up in OWNERS: the graph cannot read it.
    moves_to: ClassVar[tuple[str, ...]] = tuple(dict.fromkeys(OWNERS.values()))

    def get_prompt(self) -> str:
        return with_facts(
            REVIEW,
            APPLICATION=self.application(),
            LAST_CORRECTION=self.get_state("lastCorrection"),
        )

    @tool(args_schema=ConfirmSchema)
    def confirm_home_application(self, confirmation: ConfirmSchema) -> Any:
        """Confirm the application as summarised, when the customer says it is right."""
        if any(value is None for value in self.application().values()):
            return stay(
                "The application is incomplete. Ask which section the customer wants to finish."
            )
        self.save_state({"confirmedAt": iso_string(self.now())})
        self.remove_state("lastCorrection")
        return go("RateQuoteStep")

    @tool
    def correct_home_application(
        self,
        section: Annotated[Section, Field(description="the one section the correction is in")],
        change: Annotated[Change, Field(description="the requested change, concisely")],
    ) -> Any:
        """Send one correction to the stage that owns the section; it returns to the review."""
        self.save_state({"lastCorrection": {"section": section, "change": change}})
        request = self.flow.get_conversation(self.namespace).request or change
        return (
            go(OWNERS[section])
            .with_state({"correctionMode": True, "correctionRequest": change})
            .with_message(request)  # PicoFlow: this.getLastMessage(), the customer's words
        )

    @tool
    def end_review_quote(self) -> Any:
        """End the quote when the customer wants to stop."""
        return self.terminate(
            "Thank the customer and close the reviewed preliminary quote without rating it."
        )


class RateQuoteStep(LogicStep, QuoteFacts):
    """Rates the confirmed application in code: options when eligible, else a referral."""

    async def run_logic(self) -> ToolResult:
        application = {}
        for section, owner in OWNERS.items():
            value = self.section(section)
            if value is None:
                raise RuntimeError(f"RateQuoteStep requires {owner}.{section}.")
            application[section] = value
        result = quote(self.quote_config(), application, self.now())
        self.save_state({"quoteResult": result})
        if result["decision"] == "eligible":
            return go("PresentQuoteStep").with_state({"needsPresentation": True})
        return go("ReferralStep").with_state(
            {"decision": result["decision"], "reasonCodes": result["reasonCodes"]}
        )


class PresentQuoteStep(QuoteStep):
    """The quote's options: shown, compared, re-rated with another deductible, or selected."""

    erase_on_enter: ClassVar[bool] = True

    def on_enter(self) -> Any:
        """A new quote version drops a selection made on an older one."""
        self.erase_memory()
        quote_id = self.eligible_quote()["quoteId"]
        if self.get_state("presentedQuoteId") != quote_id:
            self.remove_state("selectedOption")
            self.save_state({"presentedQuoteId": quote_id})

    def eligible_quote(self) -> dict[str, Any]:
        """The current quote, which must be eligible."""
        found = self.quote_result()
        if found is None or found.get("decision") != "eligible":
            raise RuntimeError("PresentQuoteStep requires an eligible quote result.")
        return found

    def get_prompt(self) -> str:
        return with_facts(
            PRESENT,
            QUOTE_RESULT=self.eligible_quote(),
            SELECTED_OPTION=self.get_state("selectedOption"),
        )

    def on_response(self, reply: Any) -> Any:
        """Until the table was shown, it replaces whatever the model said instead."""
        if self.get_state("needsPresentation"):
            self.remove_state("needsPresentation")
            return options_table(self.eligible_quote())
        return None

    def option_ids(self) -> list[str]:
        """The current quote's option ids, in order."""
        return [option["id"] for option in self.eligible_quote()["options"]]

    @tool
    def show_home_quote_options(self) -> Any:
        """Show the current quote options exactly."""
        self.remove_state("needsPresentation")
        return direct(options_table(self.eligible_quote()))

    @tool
    def compare_home_quote_options(
        self,
        optionIds: Annotated[
            list[str], Field(min_length=1, max_length=3, description="the option IDs to compare")
        ],
    ) -> Any:
        """Compare some of the current options side by side."""
        wanted = list(dict.fromkeys(option.strip().upper() for option in optionIds))
        by_id = {option["id"]: option for option in self.eligible_quote()["options"]}
        if any(option not in by_id for option in wanted):
            return stay(f"Choose only current option IDs: {', '.join(by_id)}.")
        return direct(comparison_table([by_id[option] for option in wanted]))

    @tool
    def change_home_quote_deductible(
        self, deductible: Annotated[Deductible, Field(description="1000, 2500 or 5000")]
    ) -> Any:
        """Re-rate the quote with another deductible: a new quote version."""
        coverage = {**self.section("coverage"), "deductible": deductible}  # key order kept
        self.flow.get_step("CoverageStep").save_state({"coverage": coverage})
        self.remove_state("selectedOption")
        return go("RateQuoteStep")

    @tool
    def select_home_quote_option(
        self, optionId: Annotated[str, Field(description="an exact current option ID")]
    ) -> Any:
        """Select one current option for an agent follow-up."""
        by_id = {option["id"]: option for option in self.eligible_quote()["options"]}
        chosen = by_id.get(optionId.strip().upper())
        if chosen is None:
            return stay(f"Choose one current option ID: {', '.join(by_id)}.")
        self.save_state({"selectedOption": chosen})
        return go("ContactStep")

    @tool
    def end_present_quote(self) -> Any:
        """End the quote when the customer wants to stop."""
        found = self.eligible_quote()
        return self.terminate(
            f"Thank the customer and provide quote reference {found['quoteId']}, valid through "
            f"{found['validThrough']}."
        )


class ContactStep(QuoteStep):
    """The selection explained as non-binding, and consent to an agent follow-up."""

    erase_on_enter: ClassVar[bool] = True

    def selected(self) -> dict[str, Any]:
        """The option selected on the current quote."""
        found = self.flow.get_step("PresentQuoteStep").get_state("selectedOption")
        return found if isinstance(found, dict) else {}

    def get_prompt(self) -> str:
        return with_facts(
            CONTACT, SELECTED_OPTION=self.selected(), QUOTE_RESULT=self.quote_result()
        )

    @tool(args_schema=ContactRequestSchema)
    def capture_home_quote_contact(self, contact: ContactRequestSchema) -> Any:
        """Record the follow-up consent and, with consent, the contact details."""
        if contact.consentToContact and (not contact.name or not contact.email):
            return stay("When contact consent is yes, collect both name and a valid email address.")
        saved = contact.model_dump()
        if not contact.consentToContact:
            saved.update(name=None, email=None, phone=None, propertyAddress=None)
        self.save_state({"contact": saved})
        follow_up = (
            f"Confirm that an agent follow-up was requested for {saved['name']} at "
            f"{saved['email']}."
            if contact.consentToContact
            else "Confirm that no agent follow-up details were retained."
        )
        found = self.quote_result() or {}
        return self.terminate(
            f"{follow_up} Provide quote {found.get('quoteId')} and selected "
            f"{label(self.selected())}, valid through {found.get('validThrough')}."
        )

    @tool
    def end_contact_quote(self) -> Any:
        """End the quote when the customer wants to stop; no contact details are kept."""
        self.save_state({"contact": _NO_CONTACT})
        found = self.quote_result() or {}
        return self.terminate(
            "Confirm that no contact details were retained and provide quote reference "
            f"{found.get('quoteId')}."
        )


_NO_CONTACT: dict[str, Any] = {
    "consentToContact": False,
    "name": None,
    "email": None,
    "phone": None,
    "propertyAddress": None,
}


class ReferralStep(QuoteStep):
    """An application the automated rules cannot quote: the recorded reasons, acknowledged."""

    erase_on_enter: ClassVar[bool] = True

    def get_prompt(self) -> str:
        return with_facts(
            REFERRAL,
            DECISION=self.get_state("decision") or "referral",
            REASON_CODES=self.get_state("reasonCodes") or [],
        )

    @tool
    def finish_home_quote_referral(
        self, acknowledged: Annotated[bool, Field(description="the customer acknowledged")]
    ) -> Any:
        """Close the referral once the customer has acknowledged it."""
        return self.terminate(
            "Thank the customer and explain that an agent would need to review the application "
            "before any quote could be offered."
        )
