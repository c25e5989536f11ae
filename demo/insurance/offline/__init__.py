"""The offline model of HomeInsuranceQuoteFlow: answers from the messages and bound tools only.

Which stage is asking is told by the tools it binds (``capture_home_property``, ...); what it
knows comes from its prompt's ``NAME: <JSON>`` facts and the history (a summary's lines
included). It collects facts in the customer's words, calls a tool only on what was said —
a choice taken back, an ambiguous value or a question commits nothing — and never writes a
premium: the tables come from the flow's code. Without tools it is the closing line, or the
intake namespace's summariser.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.offline import closing, contact, options, referral, review, stage
from demo.insurance.offline.coverage import STAGE as COVERAGE
from demo.insurance.offline.property import STAGE as PROPERTY
from demo.insurance.offline.qualification import STAGE as QUALIFICATION
from demo.insurance.offline.risk import STAGE as RISK
from demo.insurance.offline.summary import is_summary_request, summarize
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel

STAGES = (QUALIFICATION, PROPERTY, RISK, COVERAGE)


def respond(messages: Sequence[BaseMessage], tools: Sequence[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    if is_summary_request(messages, tools):
        return summarize(messages)
    for intake in STAGES:
        if intake.tool in tools:
            return stage.respond(intake, messages)
    if "confirm_home_application" in tools:
        return review.respond(messages)
    if "show_home_quote_options" in tools:
        return options.respond(messages)
    if "capture_home_quote_contact" in tools:
        return contact.respond(messages)
    if "finish_home_quote_referral" in tools:
        return referral.respond(messages)
    return closing.respond(messages)


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:insurance"`` (any params)."""
    if spec.name != "insurance":
        raise ValueError(
            "The HomeInsuranceQuoteFlow offline provider has one model, 'offline:insurance'; "
            f"got 'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
